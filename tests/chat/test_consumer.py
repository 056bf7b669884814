import channels.consumer
import pytest
from channels.db import database_sync_to_async as sync_to_async

from chat import publishing
from chat import services as chat_services
from chat.agent import wait_for_running_turns
from chat.models import Message
from tests.websocket import form_frame, open_socket, receive_all, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def conversation(alice):
    return chat_services.start_conversation(user=alice)


def path_of(conversation) -> str:
    return f"/ws/conversations/{conversation.pk}/"


async def message_count() -> int:
    return await sync_to_async(Message.objects.count)()


async def test_anonymous_socket_is_closed_with_4401(conversation):
    socket = await open_socket(path_of(conversation))
    connected, _ = await socket.connect()
    assert connected
    assert await socket.receive_output() == {"type": "websocket.close", "code": 4401}


async def test_another_users_conversation_is_closed_with_4404(conversation, bob):
    socket = await open_socket(path_of(conversation), user=bob)
    await socket.connect()
    assert await socket.receive_output() == {"type": "websocket.close", "code": 4404}


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        # Another port, scheme or spelling of an allowed host is another origin: a page served
        # there must not open alice's socket with her cookie.
        "http://127.0.0.1:9999",
        "https://127.0.0.1:8000",
        "https://127.0.0.1:8301",
        "http://LOCALHOST:1",
        "http://localhost:8000",
        "null",
        "",
    ],
)
async def test_a_handshake_from_any_other_origin_is_refused_and_writes_nothing(conversation, alice, origin):
    socket = await open_socket(path_of(conversation), user=alice, origin=origin)
    connected, _ = await socket.connect()
    assert not connected
    assert await message_count() == 0


async def test_only_clarions_own_origin_is_accepted(conversation, alice):
    socket = await open_socket(path_of(conversation), user=alice, origin="http://127.0.0.1:8000", host="127.0.0.1:8000")
    assert (await socket.connect())[0]
    await socket.disconnect()
    # The Host header decides, not a fixed list: the same page served on another port.
    socket = await open_socket(path_of(conversation), user=alice, origin="http://localhost:8123", host="localhost:8123")
    assert (await socket.connect())[0]
    await socket.disconnect()


async def test_a_handshake_to_a_host_outside_allowed_hosts_is_refused(conversation, alice):
    socket = await open_socket(path_of(conversation), user=alice, origin="http://evil.example", host="evil.example")
    assert not (await socket.connect())[0]


async def test_behind_a_tls_proxy_the_forwarded_scheme_counts(conversation, alice, settings):
    settings.ALLOWED_HOSTS = ["clarion.example.org"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    https = [(b"x-forwarded-proto", b"https")]
    path = path_of(conversation)
    socket = await open_socket(path, user=alice, origin="https://clarion.example.org", host="clarion.example.org", headers=https)
    assert (await socket.connect())[0]
    await socket.disconnect()
    plain = await open_socket(path, user=alice, origin="http://clarion.example.org", host="clarion.example.org", headers=https)
    assert not (await plain.connect())[0]
    # Without the proxy setting, the client's own X-Forwarded-Proto is not believed.
    settings.SECURE_PROXY_SSL_HEADER = None
    forged = await open_socket(path, user=alice, origin="https://clarion.example.org", host="clarion.example.org", headers=https)
    assert not (await forged.connect())[0]


async def test_csrf_trusted_origins_are_accepted_too(conversation, alice, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://chat.example.org", "https://*.example.net"]
    path = path_of(conversation)
    for origin in ("https://chat.example.org", "https://team.example.net"):
        socket = await open_socket(path, user=alice, origin=origin)
        assert (await socket.connect())[0], origin
        await socket.disconnect()
    for origin in ("http://chat.example.org", "https://chat.example.org:8443", "https://example.org"):
        socket = await open_socket(path, user=alice, origin=origin)
        assert not (await socket.connect())[0], origin


async def test_message_round_trip_reaches_every_tab(conversation, alice):
    tab_a = await open_socket(path_of(conversation), user=alice)
    tab_b = await open_socket(path_of(conversation), user=alice)
    assert (await tab_a.connect())[0] and (await tab_b.connect())[0]

    await tab_a.send_to(text_data=form_frame(action="send_message", message="  hello <b>team</b>  "))

    broadcast_b = await tab_b.receive_from()
    assert 'hx-swap-oob="beforeend"' in broadcast_b
    assert "hello &lt;b&gt;team&lt;/b&gt;" in broadcast_b  # autoescaped
    assert "<b>team</b>" not in broadcast_b
    # The sender gets the same broadcast plus, for itself only, a fresh composer.
    frames_a = {await tab_a.receive_from(), await tab_a.receive_from()}
    assert broadcast_b in frames_a
    (composer,) = frames_a - {broadcast_b}
    assert 'id="composer"' in composer
    # Then the assistant's turn streams into both tabs (the offline engine answers "hello"), and
    # every tab of the user gets the conversation list in its new order (this one on top).
    rest_a, rest_b = await receive_all(tab_a), await receive_all(tab_b)
    for rest in (rest_a, rest_b):
        assert "offline engine" in rest
        assert 'id="conversation-list"' in rest and f'id="conv-{conversation.pk}"' in rest
    assert 'class="message message-assistant streaming"' in rest_b

    await wait_for_running_turns()  # the reply is saved once its stream has ended
    saved = await sync_to_async(lambda: list(Message.objects.values_list("role", "conversation__title")))()
    assert saved == [("user", "hello <b>team</b>"), ("assistant", "hello <b>team</b>")]
    user_message = await sync_to_async(Message.objects.get)(role="user")
    assert user_message.content == "hello <b>team</b>"
    await tab_a.disconnect()
    await tab_b.disconnect()


async def test_a_reply_is_finished_and_saved_when_the_tab_that_asked_is_closed(conversation, alice):
    from django.test import Client

    tab = await open_socket(path_of(conversation), user=alice)
    assert (await tab.connect())[0]
    await tab.send_to(text_data=form_frame(action="send_message", message="hello team"))
    shown = [await tab.receive_from(), await tab.receive_from()]  # the message and a fresh composer
    assert any("hello team" in frame for frame in shown)
    await tab.disconnect()

    await wait_for_running_turns()
    saved = await sync_to_async(lambda: list(conversation.messages.order_by("id").values_list("pk", "role")))()
    assert saved[0][1] == "user" and saved[-1][1] == "assistant"
    client = Client()
    await sync_to_async(client.force_login)(alice)
    page = await sync_to_async(client.get)(f"/chat/{conversation.pk}/")
    assert f'id="message-{saved[-1][0]}" data-role="assistant"' in page.content.decode()  # there when opened again


@pytest.mark.parametrize(
    "frame, expected_error",
    [
        ("not json at all", "not valid JSON"),
        ("[1, 2, 3]", "must be a JSON object"),
        (form_frame(action="launch_missiles", message="x"), "does not match any of the expected tags"),
        (form_frame(action="send_message"), "Frame field &#x27;message&#x27;: Field required"),
        (form_frame(action="send_message", message="   "), "Type a message first"),
        (form_frame(action="send_message", message="x" * 20_000), "the limit is 8,000"),
        ("x" * (65 * 1024), "larger than 64 KiB"),
    ],
)
async def test_malformed_frames_get_an_error_frame_and_the_socket_stays_up(conversation, alice, frame, expected_error):
    socket = await open_socket(path_of(conversation), user=alice)
    await socket.connect()

    await socket.send_to(text_data=frame)
    error = await socket.receive_from()
    assert 'id="composer-error"' in error
    assert expected_error in error
    assert await message_count() == 0

    # Still open: a good frame afterwards works (and gets its reply).
    await socket.send_to(text_data=form_frame(action="send_message", message="still here"))
    assert "still here" in await receive_until(socket, "still here")
    await wait_for_running_turns()
    assert await message_count() == 2
    await socket.disconnect()


async def test_binary_frame_is_refused(conversation, alice):
    socket = await open_socket(path_of(conversation), user=alice)
    await socket.connect()
    await socket.send_to(bytes_data=b"\x00\x01")
    assert "Binary frames are not supported" in await socket.receive_from()
    assert await message_count() == 0
    await socket.disconnect()


async def test_a_frame_for_the_tab_is_sent_without_a_trip_to_the_database_thread(conversation, alice, monkeypatch):
    socket = await open_socket(path_of(conversation), user=alice)
    assert (await socket.connect())[0]
    hops = []

    async def tidy_connections():  # Channels' hop to the database thread before each event
        hops.append(1)

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", tidy_connections)
    for _ in range(150):  # the tab joins its group just after the handshake is accepted
        await publishing.send(conversation.group_name, '<div id="ping">ping</div>')
        if not await socket.receive_nothing(timeout=0.2) and 'id="ping"' in await socket.receive_from():
            break
    else:
        pytest.fail("the frame never reached the tab")
    assert hops == []
    await socket.disconnect()
