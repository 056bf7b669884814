"""Questions with the offline engine, through real websockets: confirmations and clarifications."""

import asyncio
import datetime as dt

import pytest
from channels.db import database_sync_to_async

from chat import services
from questions.models import PendingQuestion, QuestionGroup
from tests.conftest import zone_whose_date_is_not_utcs
from tests.websocket import form_frame, frames_of_turn, open_socket
from workspace import services as workspace_services
from workspace.demo_content import seed_demo_workspace
from workspace.models import Note, Task

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def fifty_tasks(user):
    for i in range(50):
        workspace_services.create_task(user=user, title=f"Chore number {i + 1}", status=["todo", "completed"][i % 2])


@database_sync_to_async
def rows(model, **filters):
    return list(model.objects.filter(**filters))


@database_sync_to_async
def last_reply(conversation_id):
    return (
        services.Message.objects.filter(conversation_id=conversation_id, role="assistant")
        .exclude(content="")
        .order_by("-id")
        .first()
        .content
    )


async def chat(alice, text):
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message=text))
    return conversation, socket, await frames_of_turn(socket)


async def test_delete_all_my_tasks_lists_every_task_and_applies_on_confirm(alice, bob, fast_questions):
    await fifty_tasks(alice)
    await fifty_tasks(bob)
    conversation, socket, frames = await chat(alice, "delete all my tasks")

    (group,) = await rows(QuestionGroup, conversation=conversation)
    assert group.kind == "confirm" and len(group.payload["lines"]) == 50
    assert "Delete 50 tasks — apply 50 changes?" in frames and frames.count("Delete task “Chore number") == 50
    assert await rows(Task, owner=alice) != []  # nothing applied yet
    (question,) = await rows(PendingQuestion, group=group)
    assert question.destructive and question.default_indexes == [1]

    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0))
    frames = await frames_of_turn(socket)
    assert await rows(Task, owner=alice) == []
    assert len(await rows(Task, owner=bob)) == 50
    assert await last_reply(conversation.pk) == "Done — deleted 50 tasks."
    assert "Done — deleted 50 tasks." in frames and "receipt-answer" in frames
    await socket.disconnect()


async def test_deleting_one_task_by_its_title_proposes_that_task_alone(alice, fast_questions):
    await fifty_tasks(alice)
    conversation, socket, frames = await chat(alice, "delete the task Chore number 7")
    (group,) = await rows(QuestionGroup, conversation=conversation)
    assert group.kind == "confirm" and len(group.payload["lines"]) == 1
    assert "Delete task “Chore number 7”" in frames and "Chore number 17" not in frames
    assert len(await rows(Task, owner=alice)) == 50  # nothing applied yet
    await socket.disconnect()


async def test_cancel_applies_nothing(alice, fast_questions):
    await fifty_tasks(alice)
    conversation, socket, _ = await chat(alice, "delete all my completed tasks")
    (question,) = await rows(PendingQuestion, conversation=conversation)
    assert question.question.startswith("Delete 25 completed tasks")
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=1))
    await frames_of_turn(socket)
    assert len(await rows(Task, owner=alice)) == 50
    assert await last_reply(conversation.pk) == "Cancelled — nothing was changed."
    await socket.disconnect()


async def test_confirmation_timeout_applies_nothing_and_says_so(alice, fast_questions):
    from knowledge.models import AIConfig

    # The admin's ask timeout (read by every turn); below the admin form's minimum, for test time.
    await AIConfig.objects.aupdate_or_create(singleton=True, defaults={"ask_timeout_seconds": 0.4})
    await fifty_tasks(alice)
    conversation, socket, frames = await chat(alice, "delete all my tasks")
    # The server's own timer fires; no browser is involved.
    for _ in range(30):
        if await rows(PendingQuestion, conversation=conversation, status="timed_out"):
            break
        await asyncio.sleep(0.1)
    frames += await frames_of_turn(socket, at_least_one=False)  # the expiry may have come with the card
    (question,) = await rows(PendingQuestion, conversation=conversation)
    assert question.status == "timed_out" and question.selected_indexes == []  # never "Apply"
    assert len(await rows(Task, owner=alice)) == 50
    assert await last_reply(conversation.pk) == "You didn't confirm in time, so nothing was changed."
    assert "nothing was applied" in frames
    await socket.disconnect()


async def test_clean_up_my_tasks_is_clarified_then_answered_with_shorthand(alice, fast_questions):
    await database_sync_to_async(seed_demo_workspace)(user=alice)
    completed_in_atlas = len(await rows(Task, owner=alice, status="completed", project__name="Atlas"))
    conversation, socket, frames = await chat(alice, "clean up my tasks")

    (group,) = await rows(QuestionGroup, conversation=conversation)
    assert group.kind == "clarify" and group.payload["analysis"]["ambiguity_type"] == "action"
    questions = await rows(PendingQuestion, group=group)
    assert [q.question for q in questions] == ["What kind of cleanup?", "Which tasks?"]
    assert [o["label"] for o in questions[1].options] == ["All projects", "Atlas", "Harbor", "Home"]
    assert "Why I'm asking" in frames and "Question 1 of 2" in frames

    # Bad shorthand: a clear error, nothing written.
    await socket.send_to(text_data=form_frame(action="send_message", message="1a 3b"))
    assert "There is no question 3." in await frames_of_turn(socket)
    await socket.send_to(text_data=form_frame(action="send_message", message="1e"))
    assert "Option e is not one of a–c (question 1)." in await frames_of_turn(socket)
    assert {q.status for q in await rows(PendingQuestion, group=group)} == {"pending"}

    await socket.send_to(text_data=form_frame(action="send_message", message="1a 2b"))
    frames = await frames_of_turn(socket)
    derived = (await rows(services.Message, conversation=conversation, role="user"))[-1]
    assert derived.content == "delete all my completed tasks in Atlas"
    assert derived.metadata["clarification_of"] and "Clarified request" in frames
    # The clarified request is acted on: a confirmation for exactly Atlas's completed tasks.
    confirm = (await rows(QuestionGroup, conversation=conversation, kind="confirm"))[0]
    assert len(confirm.payload["lines"]) == completed_in_atlas
    await socket.disconnect()


async def test_skip_proceeds_with_the_original_request(alice, fast_questions):
    await database_sync_to_async(seed_demo_workspace)(user=alice)
    conversation, socket, _ = await chat(alice, "clean up my tasks")
    await socket.send_to(text_data=form_frame(action="send_message", message="skip"))
    await frames_of_turn(socket)
    questions = await rows(PendingQuestion, conversation=conversation)
    assert {(q.status, q.resolved_via) for q in questions} == {("cancelled", "skipped")}
    derived = (await rows(services.Message, conversation=conversation, role="user"))[-1]
    assert derived.content == "clean up my tasks" and derived.metadata["skipped"] is True
    reply = await last_reply(conversation.pk)
    assert reply.startswith("Offline I can't tell which tasks a cleanup should touch") and "Here are your tasks" in reply
    await socket.disconnect()


async def test_a_bare_number_typed_in_the_chat_box_picks_the_option_shown_there(alice, fast_questions):
    await database_sync_to_async(seed_demo_workspace)(user=alice)
    conversation, socket, _ = await chat(alice, "clean up my tasks")
    first = (await rows(PendingQuestion, conversation=conversation, position=0))[0]
    from questions.selectors import display_order

    shown = display_order(first)
    await socket.send_to(text_data=form_frame(action="send_message", message="9"))
    assert "There is no option 9; pick 1–3." in await frames_of_turn(socket)
    await socket.send_to(text_data=form_frame(action="send_message", message="2"))
    await frames_of_turn(socket)
    first = (await rows(PendingQuestion, pk=first.pk))[0]
    assert first.selected_indexes == [shown[1]] and first.resolved_via == "option"
    assert [m.content for m in await rows(services.Message, conversation=conversation, role="user")] == ["clean up my tasks"]
    await socket.disconnect()


async def test_a_new_request_cancels_the_waiting_card_and_is_answered_itself(alice, fast_questions):
    await database_sync_to_async(seed_demo_workspace)(user=alice)
    conversation, socket, _ = await chat(alice, "clean up my tasks")
    await socket.send_to(text_data=form_frame(action="send_message", message="show my in-progress tasks"))
    frames = await frames_of_turn(socket)
    assert "Cancelled — you sent a new message" in frames and "question-pending" not in frames.split("Cancelled")[-1]
    (group,) = await rows(QuestionGroup, conversation=conversation)
    assert group.completed_at is not None and group.payload["set_aside"] is True
    assert {q.status for q in await rows(PendingQuestion, group=group)} == {"cancelled"}
    users = [m.content for m in await rows(services.Message, conversation=conversation, role="user")]
    assert users == ["clean up my tasks", "show my in-progress tasks"]  # no clarified or skipped request ran
    assert (await last_reply(conversation.pk)).startswith("Here are your in-progress tasks")
    await socket.disconnect()


async def test_a_new_request_cancels_a_confirmation_without_changing_anything(alice, fast_questions):
    await fifty_tasks(alice)
    conversation, socket, _ = await chat(alice, "delete all my tasks")
    await socket.send_to(text_data=form_frame(action="send_message", message="list my projects"))
    frames = await frames_of_turn(socket)
    assert "Cancelled — you sent a new message; nothing changed" in frames
    assert len(await rows(Task, owner=alice)) == 50
    (result,) = await rows(services.Message, conversation=conversation, role="tool", tool_name="propose_operations")
    assert '"status": "cancelled"' in result.content and "new message" in result.content
    await socket.disconnect()


async def test_a_typed_answer_to_the_cleanup_card_is_not_asked_again(alice, fast_questions):
    """ "only the stale ones" and Atlas: the offline engine says what it cannot do, lists Atlas's
    tasks, and never shows the same card twice."""
    await database_sync_to_async(seed_demo_workspace)(user=alice)
    conversation, socket, _ = await chat(alice, "clean up my tasks")
    (group,) = await rows(QuestionGroup, conversation=conversation)
    first, second = await rows(PendingQuestion, group=group)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(first.pk), custom="only the stale ones"))
    await frames_of_turn(socket)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(second.pk), option=1))
    frames = await frames_of_turn(socket)
    derived = (await rows(services.Message, conversation=conversation, role="user"))[-1]
    assert derived.content == "clean up my tasks only the stale ones in Atlas"
    assert len(await rows(QuestionGroup, conversation=conversation)) == 1, "the same card was asked again"
    reply = await last_reply(conversation.pk)
    assert reply.startswith("Offline I can't tell which tasks a cleanup should touch, so I haven't changed anything.")
    assert "“delete all my completed tasks in Atlas”" in reply and "Here are your tasks in Atlas" in reply
    assert frames.count('class="question-pending"') == 0  # no card waits: nothing was asked again
    await socket.disconnect()


async def test_a_reminder_for_tomorrow_is_due_on_the_persons_tomorrow_once_confirmed(alice, fast_questions):
    zone, today = zone_whose_date_is_not_utcs()
    tomorrow = today + dt.timedelta(days=1)
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="remind me to call Bob tomorrow", time_zone=zone))
    frames = await frames_of_turn(socket)

    (group,) = await rows(QuestionGroup, conversation=conversation)
    day = f"{tomorrow:%a} {tomorrow:%b} {tomorrow.day}"
    assert f"Create the task “call Bob”, due tomorrow ({day})" in frames
    assert f"Create task “call Bob”, due {day}" in frames  # the card's line says the date before it is confirmed
    assert await rows(Task, owner=alice) == []  # nothing written before Apply

    (question,) = await rows(PendingQuestion, group=group)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0))
    await frames_of_turn(socket)
    (task,) = await rows(Task, owner=alice)
    assert (task.title, task.due_date) == ("call Bob", tomorrow)
    assert await last_reply(conversation.pk) == "Done — created 1 task."
    await socket.disconnect()


async def test_a_task_due_on_a_date_is_proposed_with_that_date(alice):
    day = dt.date.today() + dt.timedelta(days=9)
    conversation, socket, frames = await chat(alice, f"remind me to pay the deposit by {day:%B} {day.day}")
    (group,) = await rows(QuestionGroup, conversation=conversation)
    ((op),) = group.payload["operations"]
    assert (op["op"], op["title"], op["due_date"]) == ("create_task", "pay the deposit", day.isoformat())
    assert f"Create the task “pay the deposit”, due on {day:%a} {day:%b} {day.day}" in frames
    assert await rows(Task, owner=alice) == []  # nothing written before Apply
    await socket.disconnect()


@pytest.mark.parametrize("text", ["reopen the task Chore number 8", "mark Chore number 8 as not done"])
async def test_reopening_a_completed_task_proposes_it_back_to_to_do_and_applies_on_confirm(alice, fast_questions, text):
    await fifty_tasks(alice)  # the even-numbered chores are completed
    conversation, socket, frames = await chat(alice, text)
    (group,) = await rows(QuestionGroup, conversation=conversation)
    assert group.kind == "confirm" and len(group.payload["lines"]) == 1
    assert "Update task “Chore number 8”: status → to do" in frames and "Chore number 18" not in frames
    assert "Reopen 1 completed task matching “Chore number 8” as to do" in frames
    (chore,) = await rows(Task, owner=alice, title="Chore number 8")
    assert chore.status == "completed" and chore.completed_at is not None  # nothing applied yet

    (question,) = await rows(PendingQuestion, group=group)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0))
    await frames_of_turn(socket)
    (chore,) = await rows(Task, owner=alice, title="Chore number 8")
    assert chore.status == "todo" and chore.completed_at is None
    assert await last_reply(conversation.pk) == "Done — updated 1 task."
    assert len(await rows(Task, owner=alice, status="completed")) == 24  # the other completed chores stay so
    await socket.disconnect()


async def test_reopening_a_task_that_is_not_completed_proposes_nothing(alice, fast_questions):
    await fifty_tasks(alice)
    conversation, socket, _ = await chat(alice, "reopen the task Chore number 7")  # a to-do chore
    assert (
        await last_reply(conversation.pk)
        == "You have no completed tasks matching “Chore number 7” to reopen, so there is nothing to change."
    )
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_a_note_with_a_title_and_its_text_is_proposed_with_both_and_created_on_confirm(alice, fast_questions):
    conversation, socket, frames = await chat(alice, "add a note called Venue ideas: the old mill, the boathouse")
    assert "Create note “Venue ideas”: “the old mill, the boathouse”" in frames  # what will be written, before it is
    assert await rows(Note, owner=alice) == []
    (group,) = await rows(QuestionGroup, conversation=conversation)
    (question,) = await rows(PendingQuestion, group=group)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0))
    await frames_of_turn(socket)
    (note,) = await rows(Note, owner=alice)
    assert (note.title, note.content) == ("Venue ideas", "the old mill, the boathouse")
    await socket.disconnect()


async def confirm(socket, conversation):
    """Presses Apply on the conversation's one card, as its form does."""
    (group,) = await rows(QuestionGroup, conversation=conversation)
    (question,) = await rows(PendingQuestion, group=group)
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0))
    await frames_of_turn(socket)
    return group


@pytest.mark.parametrize(
    ("text", "line", "field", "value"),
    [
        ("make Chore number 7 urgent", "priority → urgent", "priority", "urgent"),
        ("set the priority of Chore number 7 to low", "priority → low", "priority", "low"),
        ("start working on Chore number 7", "status → in progress", "status", "in_progress"),
    ],
)
async def test_a_change_to_one_named_task_is_proposed_for_it_alone_and_applied_on_confirm(alice, fast_questions, text, line, field, value):
    await fifty_tasks(alice)
    conversation, socket, frames = await chat(alice, text)
    assert f"Update task “Chore number 7”: {line}" in frames
    (chore,) = await rows(Task, owner=alice, title="Chore number 7")
    assert (chore.status, chore.priority) == ("todo", "medium")  # nothing applied before Apply

    group = await confirm(socket, conversation)
    assert len(group.payload["operations"]) == 1
    (chore,) = await rows(Task, owner=alice, title="Chore number 7")
    assert getattr(chore, field) == value
    assert await last_reply(conversation.pk) == "Done — updated 1 task."
    assert len(await rows(Task, owner=alice, status="todo", priority="medium")) == 24  # the other to-do chores are as they were
    await socket.disconnect()


async def test_a_task_pushed_to_tomorrow_is_due_on_the_persons_tomorrow_once_confirmed(alice, fast_questions):
    zone, today = zone_whose_date_is_not_utcs()
    tomorrow = today + dt.timedelta(days=1)
    await fifty_tasks(alice)
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="push Chore number 7 to tomorrow", time_zone=zone))
    frames = await frames_of_turn(socket)
    day = f"{tomorrow:%a} {tomorrow:%b} {tomorrow.day}"
    assert f"Make 1 open task matching “Chore number 7” due {day}" in frames
    assert f"Update task “Chore number 7”: due → {day}" in frames
    await confirm(socket, conversation)
    (chore,) = await rows(Task, owner=alice, title="Chore number 7")
    assert chore.due_date == tomorrow
    await socket.disconnect()


async def test_a_new_title_goes_to_the_task_of_that_very_title_and_asks_when_several_match(alice, fast_questions):
    await fifty_tasks(alice)  # "Chore number 1" and "Chore number 10" … "Chore number 19"
    conversation, socket, frames = await chat(alice, "rename the task Chore number 1 to Call the plumber")
    assert "Rename “Chore number 1” to “Call the plumber”" in frames
    await confirm(socket, conversation)
    assert len(await rows(Task, owner=alice, title="Call the plumber")) == 1
    assert await rows(Task, owner=alice, title="Chore number 1") == []
    await socket.disconnect()

    conversation, socket, _ = await chat(alice, "rename the task Chore number 2 to Sweep")
    assert await rows(QuestionGroup, conversation=conversation) != []  # "Chore number 2" is a title: proposed
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "rename the task Chore number to Sweep")
    reply = await last_reply(conversation.pk)
    assert reply.startswith("Several tasks match “Chore number”, and a new title is for one of them, so nothing was changed")
    assert await rows(QuestionGroup, conversation=conversation) == []
    assert await rows(Task, owner=alice, title="Sweep") == []
    await socket.disconnect()


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("make Chore number 7 medium priority", "**Chore number 7** is already medium priority, so there is nothing to change."),
        ("make Chore number 8 urgent", "You have no open tasks matching “Chore number 8” to change, so there is nothing to change."),
        (
            "rename the task Atlas to Atlas 2",
            "You have no tasks matching “Atlas” to rename, so there is nothing to change. "
            "To rename a project, say “rename the Atlas project to …”; renaming a note needs a model.",
        ),
    ],
)
async def test_a_change_that_would_change_nothing_proposes_nothing(alice, fast_questions, text, reply):
    await fifty_tasks(alice)  # Chore number 8 is completed; every chore is of medium priority
    conversation, socket, _ = await chat(alice, text)
    assert await last_reply(conversation.pk) == reply
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_deleting_a_note_by_its_title_proposes_that_note_alone_and_deletes_it_on_confirm(alice, fast_questions):
    await database_sync_to_async(workspace_services.create_note)(user=alice, title="Venue ideas", content="the old mill")
    await database_sync_to_async(workspace_services.create_note)(user=alice, title="Budget", content="see Venue ideas for costs")
    conversation, socket, frames = await chat(alice, "delete the note Venue ideas")
    assert "Delete 1 note matching “Venue ideas”" in frames and "Delete note “Venue ideas”" in frames
    assert len(await rows(Note, owner=alice)) == 2  # nothing deleted before Apply
    await confirm(socket, conversation)
    assert [n.title for n in await rows(Note, owner=alice)] == ["Budget"]
    assert await last_reply(conversation.pk) == "Done — deleted 1 note."
    await socket.disconnect()


async def test_a_word_is_looked_up_in_tasks_and_notes_at_once(alice):
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Buy oat milk")
    await database_sync_to_async(workspace_services.create_note)(user=alice, title="Shopping", content="milk, eggs, bread")
    await database_sync_to_async(workspace_services.create_note)(user=alice, title="Retro", content="went well")
    conversation, socket, _ = await chat(alice, "find milk")
    reply = await last_reply(conversation.pk)
    assert "Here are your tasks matching “milk” (1):" in reply and "Buy oat milk" in reply
    assert "I found 1 note matching “milk”:" in reply and "**Shopping**" in reply and "Retro" not in reply
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "search for zeppelin")
    assert (
        await last_reply(conversation.pk)
        == "Nothing in your tasks or notes matches “zeppelin”. To add it as a task, say “add a task called zeppelin”."
    )
    await socket.disconnect()


@database_sync_to_async
def atlas_with_work(user):
    from workspace.models import Project

    project = workspace_services.create_project(user=user, name="Atlas")
    workspace_services.create_task(user=user, title="Ship it", project_id=project.pk)
    workspace_services.create_note(user=user, title="Retro", content="went well")
    return Project


@pytest.mark.parametrize(
    ("text", "line", "after"),
    [
        ("archive the Atlas project", "Update project “Atlas”: archived", {"name": "Atlas", "archived": True}),
        ("rename the Atlas project to Atlas web", "Update project “Atlas”: name → “Atlas web”", {"name": "Atlas web", "archived": False}),
    ],
)
async def test_a_change_to_a_named_project_is_proposed_and_applied_on_confirm(alice, fast_questions, text, line, after):
    Project = await atlas_with_work(alice)
    conversation, socket, frames = await chat(alice, text)
    assert line in frames
    assert await rows(Project, owner=alice, name="Atlas", archived=False) != []  # nothing applied before Apply
    await confirm(socket, conversation)
    (project,) = await rows(Project, owner=alice)
    assert {"name": project.name, "archived": project.archived} == after
    assert await last_reply(conversation.pk) == "Done — updated 1 project."
    await socket.disconnect()


async def test_deleting_a_project_keeps_its_tasks_and_notes_without_a_project(alice, fast_questions):
    Project = await atlas_with_work(alice)
    conversation, socket, frames = await chat(alice, "delete the Atlas project")
    assert "Delete project “Atlas” (its tasks and notes are kept, without a project)" in frames
    await confirm(socket, conversation)
    assert await rows(Project, owner=alice) == []
    (task,) = await rows(Task, owner=alice)
    (note,) = await rows(Note, owner=alice)
    assert task.project_id is None and note.project_id is None
    await socket.disconnect()


async def test_a_new_project_is_proposed_by_name_and_one_of_the_same_name_is_not_made_twice(alice, fast_questions):
    Project = await atlas_with_work(alice)
    conversation, socket, frames = await chat(alice, "create a project called Garden")
    assert "Create project “Garden”" in frames
    await confirm(socket, conversation)
    assert sorted(p.name for p in await rows(Project, owner=alice)) == ["Atlas", "Garden"]
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "create a project called atlas")
    assert await last_reply(conversation.pk) == "You already have a project called **Atlas**, so nothing was created."
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_archiving_an_archived_project_and_a_project_that_does_not_exist_change_nothing(alice, fast_questions):
    await atlas_with_work(alice)
    conversation, socket, _ = await chat(alice, "unarchive Atlas")
    assert await last_reply(conversation.pk) == "**Atlas** is not archived, so there is nothing to change."
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "archive Zeppelin")
    assert await last_reply(conversation.pk) == "I couldn't find a project called “Zeppelin”. Your projects: **Atlas**."
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_a_note_moved_by_its_title_goes_to_the_project_named_on_confirm(alice, fast_questions):
    Project = await atlas_with_work(alice)
    conversation, socket, frames = await chat(alice, "move the note Retro to Atlas")
    assert "Move note “Retro” to “Atlas”" in frames
    await confirm(socket, conversation)
    (note,) = await rows(Note, owner=alice)
    (atlas,) = await rows(Project, owner=alice)
    assert note.project_id == atlas.pk
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "move the note Retro to Atlas")
    assert await last_reply(conversation.pk) == "You have no notes matching “Retro” to move to Atlas, so there is nothing to change."
    await socket.disconnect()


async def test_a_long_title_is_proposed_whole_with_the_cards_headline_cut_to_fit(alice, fast_questions):
    title = "Write up " + "the long list of venue options " * 9  # 287 characters once stripped: the headline around it is longer
    conversation, socket, frames = await chat(alice, f"add a task called {title.strip()}")
    (group,) = await rows(QuestionGroup, conversation=conversation)
    ((op),) = group.payload["operations"]
    assert op["title"] == title.strip()
    assert len(group.payload["summary"]) == 300 and group.payload["summary"].endswith("…")
    await socket.disconnect()


async def test_a_project_said_to_be_done_has_its_open_tasks_completed_and_is_archived_on_confirm(alice, fast_questions):
    Project = await atlas_with_work(alice)
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Atlas launch post")  # in no project
    conversation, socket, frames = await chat(alice, "Atlas is done")
    assert "Mark the 1 open task in “Atlas” completed and archive the project" in frames
    assert "Mark task “Ship it” completed" in frames and "Update project “Atlas”: archived" in frames
    assert "Atlas launch post" not in frames  # the project's tasks, not every title that says Atlas
    assert await rows(Task, owner=alice, status="completed") == []  # nothing applied before Apply
    await confirm(socket, conversation)
    (project,) = await rows(Project, owner=alice)
    assert project.archived
    assert [t.title for t in await rows(Task, owner=alice, status="completed")] == ["Ship it"]
    assert await last_reply(conversation.pk) == "Done — completed 1 task, updated 1 project."
    await socket.disconnect()

    conversation, socket, _ = await chat(alice, "the Atlas project is finished")
    assert await last_reply(conversation.pk) == "**Atlas** is archived and has no open tasks, so there is nothing to change."
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_a_name_said_to_be_done_that_no_project_has_completes_the_task_of_that_name(alice, fast_questions):
    await atlas_with_work(alice)
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Groceries")
    conversation, socket, frames = await chat(alice, "Groceries is done")
    assert "Mark task “Groceries” completed" in frames and "Ship it" not in frames
    await confirm(socket, conversation)
    assert [t.title for t in await rows(Task, owner=alice, status="completed")] == ["Groceries"]
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "the Zeppelin project is done")
    assert await last_reply(conversation.pk) == "I couldn't find a project called “Zeppelin”. Your projects: **Atlas**."
    await socket.disconnect()


async def test_text_added_to_a_note_by_its_title_is_proposed_and_appended_on_confirm(alice, fast_questions):
    create = database_sync_to_async(workspace_services.create_note)
    note = await create(user=alice, title="Reading list", content="Dune")
    await create(user=alice, title="Reading list for the kids", content="Matilda")
    await create(user=alice, title="Books", content="see my reading list")
    conversation, socket, frames = await chat(alice, "add Hyperion to my Reading list note")
    assert "Update note “Reading list”: add at the end “Hyperion”" in frames and "Matilda" not in frames
    assert (await rows(Note, pk=note.pk))[0].content == "Dune"  # nothing applied before Apply
    await confirm(socket, conversation)
    assert (await rows(Note, pk=note.pk))[0].content == "Dune\n\nHyperion"
    assert await last_reply(conversation.pk) == "Done — updated 1 note."
    await socket.disconnect()
    conversation, socket, _ = await chat(alice, "show the note Reading list")
    assert await last_reply(conversation.pk) == "**Reading list**:\n\nDune\n\nHyperion\n\n2 other notes also mention “Reading list”."
    await socket.disconnect()

    conversation, socket, _ = await chat(alice, "append to the note Shopping: eggs")
    assert (
        await last_reply(conversation.pk)
        == "I found no note called “Shopping”, so nothing was changed. Say “show my notes” to see their titles."
    )
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_an_item_for_a_named_list_goes_to_the_note_of_that_title_or_else_becomes_a_task(alice, fast_questions):
    note = await database_sync_to_async(workspace_services.create_note)(user=alice, title="Reading list", content="Dune")
    conversation, socket, frames = await chat(alice, "add Hyperion to my reading list")
    assert "Update note “Reading list”: add at the end “Hyperion”" in frames
    await confirm(socket, conversation)
    assert (await rows(Note, pk=note.pk))[0].content == "Dune\n\nHyperion"
    await socket.disconnect()

    conversation, socket, frames = await chat(alice, "add oat milk to my shopping list")  # no note of that title
    assert "Create task “oat milk”" in frames
    await confirm(socket, conversation)
    assert [t.title for t in await rows(Task, owner=alice)] == ["oat milk"]
    assert (await rows(Note, pk=note.pk))[0].content == "Dune\n\nHyperion"
    await socket.disconnect()


async def test_a_note_is_renamed_by_its_title_on_confirm_and_several_matches_ask_which(alice, fast_questions):
    create = database_sync_to_async(workspace_services.create_note)
    note = await create(user=alice, title="Retro", content="went well")
    await create(user=alice, title="Retro notes 2025", content="older")
    conversation, socket, frames = await chat(alice, "rename the note Retro to Launch retro")
    assert "Update note “Retro”: title → “Launch retro”" in frames and "2025" not in frames
    await confirm(socket, conversation)
    assert [(n.title, n.content) for n in await rows(Note, pk=note.pk)] == [("Launch retro", "went well")]
    await socket.disconnect()

    conversation, socket, _ = await chat(alice, "rename the Retro note to Old")  # two titles say Retro, neither is it
    reply = await last_reply(conversation.pk)
    assert reply.startswith("Several notes match “Retro”, and the change is for one of them, so nothing was changed:")
    assert "**Launch retro**" in reply and "**Retro notes 2025**" in reply
    assert await rows(QuestionGroup, conversation=conversation) == []
    await socket.disconnect()


async def test_something_scheduled_for_a_day_is_a_task_due_that_day(alice, fast_questions):
    conversation, socket, frames = await chat(alice, "schedule a call with Sam for tomorrow")
    assert "Create task “call with Sam”, due " in frames
    await confirm(socket, conversation)
    (task,) = await rows(Task, owner=alice)
    assert task.title == "call with Sam" and task.due_date is not None
    await socket.disconnect()


async def test_something_to_remember_becomes_a_note_its_start_the_title_and_the_whole_its_text(alice, fast_questions):
    said = "the spare key is with Maria from number 12, and she is away in the first week of December so ask Tom instead"
    conversation, socket, frames = await chat(alice, f"remember that {said}")
    assert "Create note “the spare key is with Maria from number 12, and she is away in the first week…”" in frames
    await confirm(socket, conversation)
    (note,) = await rows(Note, owner=alice)
    assert note.title == "the spare key is with Maria from number 12, and she is away in the first week…"
    assert note.content == said and len(note.title) <= 81
    await socket.disconnect()
