"""Knowledge questions in the chat go to the knowledge base; workspace requests stay with the workspace."""

from __future__ import annotations

import pytest

from llm.offline.intents import Intent, parse


@pytest.mark.parametrize(
    "text",
    [
        "What's the difference between a LEFT JOIN and an INNER JOIN in PostgreSQL?",
        "how do I export my tasks to CSV?",
        "how do I run Clarion with Ollama?",
        "How can I rebuild the knowledge index?",
        "Is there a way to change the prompts?",
        "What is a pending question?",
        "why does the countdown pause?",
        "What does 1a 2b mean?",
        "how to connect my own model",
    ],
)
def test_knowledge_questions_are_routed_to_the_knowledge_base(text):
    assert parse(text) == Intent("knowledge", search=text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("what's left to do in the Harbor project?", Intent("tasks", status="open", project_name="Harbor")),
        ("how many tasks did I complete?", Intent("count_tasks", status="completed")),
        ("what are my tasks?", Intent("tasks")),
        ("delete all my completed tasks", Intent("delete_tasks", status="completed")),
        ("what is the status of my tasks in Atlas?", Intent("tasks", project_name="Atlas")),
    ],
)
def test_workspace_requests_stay_with_the_workspace(text, expected):
    assert parse(text) == expected


# Questions about how Clarion behaves, phrased as people ask them: several use a status word
# ("pending"), count ("how many") or name tasks, and still ask for the user guide.
ABOUT_CLARION = [
    "What happens to what I type while a question is pending?",
    "How long do I have to answer a question?",
    "How do I answer several questions at once?",
    "what happens when a question times out?",
    "What happens if I don't answer the card?",
    "Does typing in the chat box answer the pending question?",
    "Can I keep chatting while a question is waiting?",
    "why did my card get cancelled?",
    "What does 'Cancelled — you sent a new message' mean?",
    "Is there a keyboard shortcut to pick an option?",
    "When does the default option apply?",
    "why is there no default on this question?",
    "What is the confidence threshold for defaults?",
    "does the countdown stop while I'm typing?",
    "How long can the countdown be paused?",
    "what happens to pending questions when I send a new message?",
    "Which setting controls the question timeout?",
    "Where do I change how long questions stay open?",
    "Can I undo a change the assistant applied?",
    "What happens if a confirmation times out?",
    "does Clarion work without an API key?",
    "What is the offline engine?",
    "How does Clarion cite its sources?",
    "Where does the assistant get its answers about Clarion?",
    "how do I add a document to the knowledge base?",
    "Can I upload a PDF to the knowledge base?",
    "What happens to answers when I disable a source?",
    "Is there a limit on how long a message can be?",
    "What does the skip command do?",
    "How many questions can be pending at once?",
    "How do I keep my tasks private from other users?",
    "what happens to my tasks when I delete a project?",
    # What tasks, notes and the assistant are or can do, asked of the kind, not of one's data.
    "where are my notes stored?",
    "are my tasks backed up?",
    "can other users see my tasks?",
    "how many tasks can I have?",
    "do notes support markdown?",
    "can a task belong to two projects?",
    "do tasks have reminders?",
    "does the assistant change my tasks without asking?",
    "can the assistant delete my notes?",
    "what does the assistant know about my projects?",
    "what priorities can a task have?",
    "which statuses can a task have?",
    "what can a note contain?",
]

# Requests about the workspace, several with a word the user guide also uses ("pending", "admin",
# "API"): they list, count or search the workspace and never quote documentation.
ABOUT_THE_WORKSPACE = [
    ("what's pending?", "tasks"),
    ("show my tasks", "tasks"),
    ("what's left to do?", "tasks"),
    ("what am I working on?", "tasks"),
    ("what's in progress?", "tasks"),
    ("show my tasks in Atlas", "tasks"),
    ("list my open tasks", "tasks"),
    ("which tasks are done?", "tasks"),
    ("what's on my plate?", "tasks"),
    ("anything pending in Harbor?", "tasks"),
    ("what tasks are still pending?", "tasks"),
    ("what's due this week?", "tasks"),
    ("show me the pending tasks", "tasks"),
    ("what is pending in the Atlas project?", "tasks"),
    ("what do I still have to do?", "tasks"),
    ("what have I finished?", "tasks"),
    ("find notes about the launch", "notes"),
    ("show my notes", "notes"),
    ("which notes mention the admin?", "notes"),
    ("how many tasks did I complete?", "count_tasks"),
    ("how many tasks are pending?", "count_tasks"),
    ("list my projects", "projects"),
    ("what projects do I have?", "projects"),
    ("do I have any tasks about the API?", "tasks"),
    ("my to-dos", "tasks"),
    ("pending tasks", "tasks"),
    ("do I have tasks due today?", "tasks"),
    ("are my tasks done?", "tasks"),
    ("does Atlas have open tasks?", "tasks"),
    ("does Harbor have anything overdue?", "tasks"),
    ("do my notes mention the venue?", "notes"),
    ("is the passport task done?", "tasks"),
    ("did I finish anything today?", "tasks"),
    ("what priorities do my tasks have?", "tasks"),
    ("what's due this weekend?", "tasks"),
    ("find milk", "find"),
    ("can you make buy milk urgent?", "update_tasks"),
    ("who do I need to call?", "tasks"),
    ("what's the latest note?", "notes"),
    ("what do I have to buy?", "tasks"),
]


@pytest.mark.parametrize("text", ABOUT_CLARION)
def test_questions_about_clarion_itself_go_to_the_knowledge_base(text):
    assert parse(text) == Intent("knowledge", search=text)


@pytest.mark.parametrize("text, kind", ABOUT_THE_WORKSPACE)
def test_workspace_requests_never_go_to_the_knowledge_base(text, kind):
    assert parse(text).kind == kind


def test_both_lists_are_long_enough_to_mean_something():
    assert len(ABOUT_CLARION) >= 20 and len(ABOUT_THE_WORKSPACE) >= 20


@pytest.mark.parametrize(
    "text, search, due",
    [
        ("who do I need to call?", "call", None),
        ("who do I have to call about the faucet?", "call", None),
        ("what do I need to pick up tomorrow?", "pick up", "tomorrow"),
        ("who should I email this week?", "email", "this_week"),
    ],
)
def test_an_errand_asked_about_looks_up_the_open_tasks_that_name_it(text, search, due):
    assert parse(text) == Intent("tasks", status="open", search=search, due=due)


@pytest.mark.parametrize(
    "text",
    [
        "who should I contact for support?",
        "what do I need to install?",
        "who can see my tasks?",
        "what should I pay attention to when I connect a model?",
    ],
)
def test_what_one_needs_for_clarion_itself_is_still_asked_of_the_knowledge_base(text):
    assert parse(text).kind == "knowledge"


def test_a_state_tasks_do_not_have_is_looked_for_in_their_titles_rather_than_listing_every_task():
    assert parse("which tasks are blocked?") == Intent("tasks", search="blocked")
    assert parse("what tasks are stuck?") == Intent("tasks", search="stuck")
    for everyday in ("which tasks are mine?", "what tasks are there?"):
        assert parse(everyday) == Intent("tasks"), everyday


def test_something_shown_by_its_name_is_looked_up_in_the_tasks_and_notes():
    assert parse("show me the launch plan") == Intent("find", search="launch plan")
    assert parse("show the go/no-go checklist") == Intent("find", search="go/no-go checklist")
    assert parse("show me the help").kind == "help"
    assert parse("show me my tasks").kind == "tasks"


@pytest.mark.parametrize(
    "text",
    ["what tasks don't have a project?", "which tasks do not belong to a project?", "tasks that aren't part of a project"],
)
def test_tasks_said_to_have_no_project_are_the_unfiled_ones(text):
    intent = parse(text)
    assert intent.kind == "tasks" and intent.unfiled is True


@pytest.mark.parametrize(
    "text, search",
    [
        ("is the passport renewed?", "passport"),
        ("has the electricity bill been paid?", "electricity bill"),
        ("was the dentist appointment booked?", "dentist appointment"),
        ("is the report submitted yet?", "report"),
    ],
)
def test_whether_ones_own_thing_is_done_is_read_from_the_task_that_names_it(text, search):
    assert parse(text) == Intent("tasks", search=search)


@pytest.mark.parametrize("text", ["was my message sent?", "is the default applied?", "is the conversation deleted?"])
def test_whether_something_of_clarions_is_done_is_asked_of_the_knowledge_base(text):
    assert parse(text).kind == "knowledge"


def test_the_latest_note_is_asked_for_alone():
    assert parse("what's the latest note?").newest is True
    assert parse("show my most recent note about Atlas") == Intent("notes", search="Atlas", newest=True)
    assert parse("what are my notes?").newest is False
    assert parse("how many notes do I have?").kind == "count_notes"
