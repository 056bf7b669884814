"""Edit and resend: the person's last message gets new text, what followed it is removed and its
turn runs again — through the service and the websocket frame, with a clear error and nothing
written for every message that cannot be edited."""

import pytest
from channels.db import database_sync_to_async as sync_to_async
from django.test import override_settings

from chat import services as chat_services
from chat.models import Conversation, Message
from questions.models import QuestionGroup
from tests.websocket import form_frame, frames_of_turn, open_socket, receive_all

pytestmark = pytest.mark.django_db(transaction=True)


def answered(user, text: str = "hello", reply: str = "Hi.") -> tuple[Conversation, Message, Message]:
    conversation = chat_services.start_conversation(user=user)
    request = chat_services.post_user_message(user=user, conversation_id=conversation.pk, content=text)
    answer = chat_services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content=reply, tool_calls=[], metadata={}
    )
    return conversation, request, answer


def rows(conversation) -> list[tuple]:
    return list(Message.objects.filter(conversation=conversation).order_by("id").values_list("id", "role", "content"))


def test_edit_replaces_the_text_and_removes_what_followed(alice):
    conversation, request, answer = answered(alice)
    message, removed = chat_services.edit_last_user_message(
        user=alice, conversation_id=conversation.pk, message_id=request.pk, content="  What can you do?  "
    )
    assert removed == [answer.pk]
    assert message.pk == request.pk and message.content == "What can you do?" and message.metadata == {"edited": True}
    assert rows(conversation) == [(request.pk, "user", "What can you do?")]
    assert chat_services.needs_reply(conversation_id=conversation.pk)  # its turn runs again


@override_settings(CHAT_MESSAGE_MAX_CHARS=20)
@pytest.mark.parametrize(
    "text, error",
    [("   ", "Type a message first."), ("x" * 21, "That message is 21 characters; the limit is 20.")],
)
def test_edit_is_checked_like_a_new_message_and_writes_nothing(alice, text, error):
    conversation, request, _ = answered(alice)
    before = rows(conversation)
    with pytest.raises(chat_services.MessageRejected, match=error):
        chat_services.edit_last_user_message(user=alice, conversation_id=conversation.pk, message_id=request.pk, content=text)
    assert rows(conversation) == before


def test_only_the_last_message_the_person_typed_can_be_edited(alice):
    conversation, first, _ = answered(alice)
    second = chat_services.post_user_message(user=alice, conversation_id=conversation.pk, content="and then?")
    chat_services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=second.pk, content="Ok.", tool_calls=[], metadata={}
    )
    before = rows(conversation)
    for message_id in (first.pk, 10**9):
        with pytest.raises(chat_services.NotEditable, match="Only your last message can be edited."):
            chat_services.edit_last_user_message(user=alice, conversation_id=conversation.pk, message_id=message_id, content="new")
    # An answer Clarion wrote on the person's behalf (a card's answer) is not theirs to edit.
    derived = chat_services.post_derived_user_message(conversation_id=conversation.pk, content="Atlas", metadata={"answer_to": "q1"})
    with pytest.raises(chat_services.NotEditable, match="answered a question"):
        chat_services.edit_last_user_message(user=alice, conversation_id=conversation.pk, message_id=derived.pk, content="Harbor")
    assert rows(conversation) == [*before, (derived.pk, "user", "Atlas")]


def test_no_edit_while_a_reply_is_being_written_or_a_question_waits(alice):
    conversation = chat_services.start_conversation(user=alice)
    request = chat_services.post_user_message(user=alice, conversation_id=conversation.pk, content="hello")
    with pytest.raises(chat_services.NotEditable, match="Wait for the reply to finish"):
        chat_services.edit_last_user_message(user=alice, conversation_id=conversation.pk, message_id=request.pk, content="new")
    chat_services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="Hi.", tool_calls=[], metadata={}
    )
    QuestionGroup.objects.create(conversation=conversation, user=alice, kind=QuestionGroup.Kind.ASK)
    with pytest.raises(chat_services.NotEditable, match="Wait for the reply to finish"):
        chat_services.edit_last_user_message(user=alice, conversation_id=conversation.pk, message_id=request.pk, content="new")
    assert Message.objects.get(pk=request.pk).content == "hello"


def test_another_users_conversation_does_not_exist(alice, bob):
    conversation, request, _ = answered(alice)
    before = rows(conversation)
    with pytest.raises(Conversation.DoesNotExist):
        chat_services.edit_last_user_message(user=bob, conversation_id=conversation.pk, message_id=request.pk, content="mine now")
    assert rows(conversation) == before


async def test_the_edit_frame_replaces_the_reply_with_a_new_turn(alice):
    conversation = await sync_to_async(chat_services.start_conversation)(user=alice)
    tab = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    other_tab = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    assert (await tab.connect())[0] and (await other_tab.connect())[0]
    await tab.send_to(text_data=form_frame(action="send_message", message="hello"))
    await frames_of_turn(tab)
    await receive_all(other_tab)
    request = await sync_to_async(Message.objects.get)(role="user")
    (first,) = await sync_to_async(list)(Message.objects.filter(role="assistant"))

    await tab.send_to(text_data=form_frame(action="edit_message", message_id=str(request.pk), message="How many tasks are left to do?"))
    frames = await frames_of_turn(tab)
    seen_elsewhere = await receive_all(other_tab)
    for received in (frames, seen_elsewhere):
        assert f'id="message-{first.pk}" hx-swap-oob="delete"' in received
        assert f'hx-swap-oob="outerHTML:#message-{request.pk}"' in received and "How many tasks are left to do?" in received
        assert 'id="conversation-list"' in received  # the list, this conversation on top
    saved = await sync_to_async(lambda: list(Message.objects.order_by("id").values_list("pk", "role", "content")))()
    assert saved[0] == (request.pk, "user", "How many tasks are left to do?")
    assert [role for _, role, _ in saved].count("user") == 1 and first.pk not in [pk for pk, _, _ in saved]
    assert saved[-1][1] == "assistant" and saved[-1][2] != first.content  # the new question got its own answer
    await tab.disconnect()
    await other_tab.disconnect()


async def test_the_edit_frame_shows_the_error_and_writes_nothing(alice):
    conversation = await sync_to_async(chat_services.start_conversation)(user=alice)
    tab = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    assert (await tab.connect())[0]
    await tab.send_to(text_data=form_frame(action="send_message", message="hello"))
    await frames_of_turn(tab)
    before = await sync_to_async(lambda: list(Message.objects.order_by("id").values_list("id", "content")))()
    request_id = before[0][0]
    for fields, error in [
        ({"message_id": str(request_id), "message": "  "}, "Type a message first."),
        ({"message_id": str(request_id + 1), "message": "new"}, "Only your last message can be edited."),
        ({"message_id": "first", "message": "new"}, "Frame field &#x27;message_id&#x27;"),
    ]:
        await tab.send_to(text_data=form_frame(action="edit_message", **fields))
        assert error in await receive_all(tab)
    assert await sync_to_async(lambda: list(Message.objects.order_by("id").values_list("id", "content")))() == before
    await tab.disconnect()
