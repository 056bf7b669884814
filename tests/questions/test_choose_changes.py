"""A confirmation applies the changes the person ticked, and tells the model which were refused.
Bad selections (an unknown change, none, twice, not a number) are refused and write nothing,
over HTTP (the card's form) and over the websocket's answer frame."""

import json

import pytest
from channels.db import database_sync_to_async

from chat.models import Message
from questions.models import PendingQuestion, QuestionGroup
from tests.questions.test_offline_flows import chat, last_reply, rows
from tests.websocket import form_frame, frames_of_turn
from workspace import services as workspace_services
from workspace.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def sixteen_completed(user):
    for n in range(1, 17):
        workspace_services.create_task(user=user, title=f"Old chore {n:02d}", status="completed")


@database_sync_to_async
def tool_results():
    return [json.loads(m.content) for m in Message.objects.filter(role="tool", tool_name="propose_operations")]


async def confirmation(alice):
    await sixteen_completed(alice)
    conversation, socket, _ = await chat(alice, "delete all my completed tasks")
    (question,) = await rows(PendingQuestion, conversation=conversation)
    return conversation, socket, question


def form(*ticked, option="0"):
    return {"option": option, "choose_changes": "1", "changes": [str(i) for i in ticked]}


async def test_apply_makes_only_the_ticked_changes_and_the_model_is_told_which(async_client, alice, fast_questions):
    conversation, socket, question = await confirmation(alice)
    (group,) = await rows(QuestionGroup, conversation=conversation)
    lines = [line["text"] for line in group.payload["lines"]]
    refused = {1, 5, 9, 15}
    await async_client.aforce_login(alice)
    response = await async_client.post(f"/chat/questions/{question.pk}/answer/", form(*(i for i in range(16) if i not in refused)))
    assert response.status_code == 200
    assert "Applied — 12 of 16 changes confirmed" in response.content.decode()
    await frames_of_turn(socket)

    kept = sorted(t.title for t in await rows(Task, owner=alice))
    assert kept == sorted(lines[i].removeprefix("Delete task “").removesuffix("”") for i in refused)
    (result,) = await tool_results()
    assert result["status"] == "applied_in_part" and result["applied"] == 12
    assert [c["number"] for c in result["refused_changes"]] == [2, 6, 10, 16]
    assert [c["text"] for c in result["refused_changes"]] == [lines[i] for i in sorted(refused)]
    assert len(result["applied_changes"]) == 12 and "refused 4" in result["note"]
    assert "12" in await last_reply(conversation.pk)
    await socket.disconnect()


async def test_all_ticked_applies_everything_as_before(async_client, alice, fast_questions):
    conversation, socket, question = await confirmation(alice)
    await async_client.aforce_login(alice)
    response = await async_client.post(f"/chat/questions/{question.pk}/answer/", form(*range(16)))
    assert "Applied — 16 changes confirmed" in response.content.decode()
    await frames_of_turn(socket)
    assert await rows(Task, owner=alice) == []
    (result,) = await tool_results()
    assert result == {"status": "applied", "applied": 16, "by_operation": {"delete_task": 16}}
    await socket.disconnect()


async def test_cancel_ignores_the_ticks(async_client, alice, fast_questions):
    conversation, socket, question = await confirmation(alice)
    await async_client.aforce_login(alice)
    response = await async_client.post(f"/chat/questions/{question.pk}/answer/", form(option="1"))
    assert response.status_code == 200 and "Cancelled — nothing changed" in response.content.decode()
    await frames_of_turn(socket)
    assert len(await rows(Task, owner=alice)) == 16
    await socket.disconnect()


@pytest.mark.parametrize(
    "data, message",
    [
        (form(3, 16), "There is no change 17 on this card; it lists 16."),
        (form(-1), "There is no change 0 on this card; it lists 16."),
        (form(), "Tick at least one change to apply, or cancel."),
        (form(2, 2), "A change was ticked twice."),
        ({"option": "0", "choose_changes": "1", "changes": ["two"]}, "Tick changes from the list."),
        ({"option": "0", "choose_changes": "1", "changes": ["1.5"]}, "Tick changes from the list."),
    ],
)
async def test_bad_selections_over_http_are_refused_and_write_nothing(async_client, alice, fast_questions, data, message):
    conversation, socket, question = await confirmation(alice)
    await async_client.aforce_login(alice)
    response = await async_client.post(f"/chat/questions/{question.pk}/answer/", data)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert (await rows(PendingQuestion, pk=question.pk))[0].status == "pending"
    assert len(await rows(Task, owner=alice)) == 16 and await tool_results() == []
    (group,) = await rows(QuestionGroup, conversation=conversation)
    assert "chosen" not in group.payload
    await socket.disconnect()


@pytest.mark.parametrize(
    "changes, message",
    [
        ([True, 2], "Frame field 'changes.0': Input should be a valid integer."),
        (["1"], "Frame field 'changes.0': Input should be a valid integer."),
        ([1.0], "Frame field 'changes.0': Input should be a valid integer."),
        ("1", "Frame field 'changes': Input should be a valid array."),
        ([20], "There is no change 21 on this card; it lists 16."),
        ([], "Tick at least one change to apply, or cancel."),
        ([4, 4], "A change was ticked twice."),
    ],
)
async def test_bad_selections_over_the_websocket_are_refused_and_write_nothing(alice, fast_questions, changes, message):
    conversation, socket, question = await confirmation(alice)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0, changes=changes))
    frames = await frames_of_turn(socket)
    assert message in frames.replace("&#x27;", "'")
    assert (await rows(PendingQuestion, pk=question.pk))[0].status == "pending"
    assert len(await rows(Task, owner=alice)) == 16 and await tool_results() == []
    await socket.disconnect()


async def test_ticks_over_the_websocket_apply_those_changes(alice, fast_questions):
    conversation, socket, question = await confirmation(alice)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0, changes=[0, 1]))
    await frames_of_turn(socket)
    assert len(await rows(Task, owner=alice)) == 14
    (result,) = await tool_results()
    assert result["applied"] == 2 and len(result["refused_changes"]) == 14
    await socket.disconnect()


async def test_ticks_on_a_question_that_lists_no_changes_are_refused(async_client, alice, fast_questions):
    from tests.questions.test_answer_endpoints import make_group

    group = await database_sync_to_async(make_group)(alice)
    (question,) = await rows(PendingQuestion, group=group)
    await async_client.aforce_login(alice)
    response = await async_client.post(f"/chat/questions/{question.pk}/answer/", form(0))
    assert response.status_code == 422 and "This question has no list of changes to tick." in response.content.decode()
    assert (await rows(PendingQuestion, pk=question.pk))[0].status == "pending"
