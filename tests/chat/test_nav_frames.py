"""The websocket frames behind Stop generating and Regenerate: a clear error when there is
nothing to act on, nothing written, the socket stays up."""

import asyncio

import pytest
from channels.db import database_sync_to_async as sync_to_async
from django.test import Client
from django.urls import reverse

from chat import services as chat_services
from chat.models import Conversation, Message
from tests.websocket import form_frame, frames_of_turn, open_socket, receive_all

pytestmark = pytest.mark.django_db(transaction=True)


async def test_regenerate_with_no_reply_is_a_clear_error_and_writes_nothing(alice):
    conversation = await sync_to_async(chat_services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    assert (await socket.connect())[0]
    await socket.send_to(text_data=form_frame(action="regenerate"))
    frames = await receive_all(socket)
    assert "There is no reply to regenerate yet." in frames
    assert await sync_to_async(Message.objects.count)() == 0
    await socket.disconnect()


async def test_regenerate_replaces_the_last_reply_with_a_new_turn(alice):
    conversation = await sync_to_async(chat_services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    assert (await socket.connect())[0]
    await socket.send_to(text_data=form_frame(action="send_message", message="hello"))
    await frames_of_turn(socket)
    (first,) = await sync_to_async(list)(Message.objects.filter(role="assistant", tool_calls=[]).exclude(content=""))
    await socket.send_to(text_data=form_frame(action="regenerate"))
    frames = await frames_of_turn(socket)
    assert f'id="message-{first.pk}" hx-swap-oob="delete"' in frames
    (second,) = await sync_to_async(list)(Message.objects.filter(role="assistant", tool_calls=[]).exclude(content=""))
    assert second.pk != first.pk and second.content == first.content  # the offline engine is deterministic
    assert await sync_to_async(Message.objects.filter(role="user").count)() == 1
    await socket.disconnect()


async def test_stop_records_the_request_for_this_conversation_only(alice, bob):
    mine = await sync_to_async(chat_services.start_conversation)(user=alice)
    theirs = await sync_to_async(chat_services.start_conversation)(user=bob)
    socket = await open_socket(f"/ws/conversations/{mine.pk}/", user=alice)
    assert (await socket.connect())[0]
    await socket.send_to(text_data=form_frame(action="stop"))
    # A stop sends nothing back: wait for it to be recorded (the consumer gets to it in its time).
    for _ in range(300):
        if (await sync_to_async(Conversation.objects.get)(pk=mine.pk)).stop_requested_at is not None:
            break
        await asyncio.sleep(0.1)
    assert (await sync_to_async(Conversation.objects.get)(pk=mine.pk)).stop_requested_at is not None
    assert (await sync_to_async(Conversation.objects.get)(pk=theirs.pk)).stop_requested_at is None
    await socket.disconnect()


async def test_every_tab_of_the_user_gets_the_list_in_its_new_order(alice, bob):
    shown = await sync_to_async(chat_services.start_conversation)(user=alice)
    other = await sync_to_async(chat_services.start_conversation)(user=alice)
    await sync_to_async(chat_services.post_user_message)(user=alice, conversation_id=other.pk, content="budget")
    theirs = await sync_to_async(chat_services.start_conversation)(user=bob)
    mine = await open_socket(f"/ws/conversations/{shown.pk}/", user=alice)
    bobs = await open_socket(f"/ws/conversations/{theirs.pk}/", user=bob)
    assert (await mine.connect())[0] and (await bobs.connect())[0]

    client = Client()
    await sync_to_async(client.force_login)(alice)
    response = await sync_to_async(client.post)(reverse("chat:pin", args=[other.pk]), {"pinned": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    listed = await receive_all(mine)
    assert 'id="conversation-list" aria-label="Conversation list" hx-swap-oob="true"' in listed
    assert listed.index(">Pinned</h2>") < listed.index(f'id="conv-{other.pk}"') < listed.index(f'id="conv-{shown.pk}"')
    assert "current" not in listed  # each tab marks the conversation it shows
    assert await bobs.receive_nothing(timeout=0.5)  # another user's tabs hear nothing of it
    await mine.disconnect()
    await bobs.disconnect()
