"""The user guide stays true: what its pages name (settings and their defaults, commands, labels on
screen, limits, the chat-box rules) is checked against the code, and every question a page asks
in a heading is answered from that very page by the offline engine. A change to Clarion that
makes a page stale fails here; see also the frozen question set bench/kb_sets/clarion_guide.yaml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import get_commands, load_command_class
from django.test import Client

from knowledge import selectors, services
from knowledge.models import AIConfig
from knowledge.sources import read_folders
from llm.offline.engine import WRITE_KINDS
from llm.offline.intents import parse
from questions import shorthand
from tests.knowledge.conftest import ask

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "user-guide"
PAGES = {path.name: path.read_text() for path in sorted(GUIDE.glob("*.md"))}
SETTINGS_SOURCE = (ROOT / "project" / "settings.py").read_text()


def section(page: str, heading: str) -> str:
    text = PAGES[page]
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


# ---------------------------------------------------------------------------- settings and commands


def settings_defaults() -> dict[str, object]:
    """Each environment variable settings.py reads, with its default as written there."""
    found = {}
    for name, expr in re.findall(r'env(?:\.\w+)?\(\s*"([A-Z0-9_]+)"\s*,\s*default=([^\n]+?)\)\s*$', SETTINGS_SOURCE, re.MULTILINE):
        try:
            found[name] = eval(expr, {"__builtins__": {}})  # our own settings' literals and arithmetic
        except Exception:
            found[name] = None  # computed from other settings: its existence is still checked
    for name in re.findall(r'env(?:\.\w+)?\(\s*"([A-Z0-9_]+)"', SETTINGS_SOURCE):
        found.setdefault(name, None)
    return found


def test_every_variable_the_guide_names_is_read_by_clarion_with_the_default_it_states():
    python = " ".join(path.read_text() for path in ROOT.glob("*/*.py"))
    known = settings_defaults()
    known.update({name: None for name in re.findall(r'"([A-Z][A-Z0-9_]{3,})"', python) if name not in known})
    named = {name for text in PAGES.values() for name in re.findall(r"`([A-Z][A-Z0-9_]{3,})`", text)}
    assert named - set(known) == set(), "the guide names variables Clarion does not read"
    checked = 0
    for page, text in PAGES.items():
        for name, stated in re.findall(r"`([A-Z][A-Z0-9_]{3,})` \(default `([^`]*)`", text):
            default = known[name]
            if default is None:
                continue
            if isinstance(default, bool):
                shown = str(default).lower()
            elif isinstance(default, list):
                shown = ",".join(default)
            elif isinstance(default, float) and default.is_integer():
                shown = str(int(default))
            else:
                shown = str(default)
            assert stated == shown, f"{page}: {name} defaults to {shown}, the guide says {stated}"
            checked += 1
    assert checked >= 25


def test_every_command_and_option_the_guide_names_exists():
    commands = get_commands()
    for page, text in PAGES.items():
        for name, options in re.findall(r"manage\.py ([a-z_]+)((?: --[a-z-]+)*)", text):
            assert name in commands, f"{page}: manage.py {name}"
            usage = load_command_class(commands[name], name).create_parser("manage.py", name).format_help()
            for option in options.split():
                assert re.search(rf"(?<![\w-]){option}\b", usage), f"{page}: manage.py {name} {option}"


def test_links_between_pages_resolve():
    for page, text in PAGES.items():
        for target in re.findall(r"\]\(([a-z0-9-]+\.md)\)", text):
            assert target in PAGES, f"{page} links to {target}"


# ---------------------------------------------------------------------------- what people see


@pytest.mark.django_db
def test_every_label_the_guide_shows_in_bold_is_on_screen(settings):
    """Bold text in the guide names something on screen: a button, a page, a field, an action."""
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-xxxxxxxx")
    client = Client()
    client.force_login(user)
    config = selectors.get_ai_config()
    services.add_uploaded_source(user=user, name="notes.md", data=b"# Notes\n\nSomething to list.\n")  # actions show on a non-empty list
    admin_pages = [
        "/admin/",
        f"/admin/knowledge/aiconfig/{config.pk}/change/",
        "/admin/knowledge/knowledgeindex/",
        "/admin/knowledge/knowledgesource/",
        "/admin/knowledge/addedsource/",
        "/admin/knowledge/addedsource/add/",
        "/admin/auth/user/",
    ]
    rendered = " ".join(client.get(url).content.decode() for url in admin_pages)
    sources = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("static/js/*.js"), *ROOT.glob("*/*.py")]
    on_screen = (rendered + " ".join(path.read_text() for path in sources)).casefold()
    labels = {label for text in PAGES.values() for label in re.findall(r"\*\*([^*]+)\*\*", text)}
    assert len(labels) >= 40
    missing = sorted(label for label in labels if label.replace("…", "").strip().casefold() not in on_screen)
    assert missing == [], missing


QUOTED_ON_SCREEN = [
    ("typing-while-a-question-waits.md", "Cancelled — you sent a new message", "templates/questions/_card_cancelled.html"),
    ("question-deadlines.md", "Paused while you type", "templates/questions/_card_pending.html"),
    ("question-deadlines.md", "No default — nothing is chosen when time runs out", "templates/questions/_card_pending.html"),
    ("question-deadlines.md", "Nothing is applied if time runs out", "templates/questions/_card_pending.html"),
    ("question-deadlines.md", "No answer — default applied:", "templates/questions/_card_timed_out.html"),
    ("question-deadlines.md", "Timed out — ", "templates/questions/_card_timed_out.html"),
    ("confirming-changes.md", "Cancelled — nothing changed", "templates/questions/_card_answered.html"),
    ("confirming-changes.md", "Applied — ", "templates/questions/_card_answered.html"),
    ("confirming-changes.md", "nothing is written until you apply", "templates/questions/_group.html"),
    ("answering-questions.md", "Or type your own answer…", "templates/questions/_card_pending.html"),
]


@pytest.mark.parametrize("page, phrase, template", QUOTED_ON_SCREEN)
def test_what_the_guide_quotes_from_the_screen_is_there(page, phrase, template):
    assert phrase in PAGES[page]
    assert phrase in (ROOT / template).read_text()


def test_the_limits_the_guide_states_are_the_codes():
    deadlines = section("question-deadlines.md", "How long do I have to answer a question?")
    field = {f.name: f.default for f in AIConfig._meta.get_fields() if hasattr(f, "default")}
    low, medium, high = (int(field[f"question_timeout_{c}_seconds"]) for c in ("low", "medium", "high"))
    assert f"{low}, {medium} or {high} seconds" in deadlines and f"{int(field['ask_timeout_seconds'])} seconds" in deadlines
    pause = section("question-deadlines.md", "Does the countdown stop while I type?")
    idle_ms = int(re.search(r"IDLE_RESUME_MS = (\d+)", (ROOT / "static/js/clarion.js").read_text())[1])
    assert f"after {idle_ms // 1000} seconds without typing" in pause
    defaults = settings_defaults()
    assert f"at most {int(defaults['QUESTION_PAUSE_CAP_SECONDS'])} seconds" in pause
    assert f"({int(defaults['QUESTION_DEFAULT_MIN_CONFIDENCE'] * 100)} %" in PAGES["question-deadlines.md"]
    assert f"at most {defaults['QUESTIONS_MAX_PENDING_PER_USER']} unanswered" in PAGES["question-deadlines.md"]
    words = {6: "six"}[shorthand.SHORT_REPLY_WORDS]
    assert f"at most {words} words" in PAGES["typing-while-a-question-waits.md"]


def test_the_size_limit_of_a_source_the_guide_states_is_the_one_a_folder_is_held_to(tmp_path):
    limit = settings_defaults()["KNOWLEDGE_MAX_SOURCE_BYTES"]
    assert isinstance(limit, int)
    page = section("managing-sources.md", "How big can a source be?")
    assert f"{limit:,} bytes".replace(",", " ") in page and "the rebuild reports it as an error" in page
    (tmp_path / "fits.md").write_text("# Fits\n\nSmall enough.")
    (tmp_path / "big.md").write_text("# Big\n\n" + "a" * limit)
    documents, failures = read_folders([tmp_path], base_dir=tmp_path, max_bytes=limit)
    assert [d.title for d in documents] == ["Fits"]
    assert [f.error for f in failures] == [f"could not read the file: larger than {limit} bytes (KNOWLEDGE_MAX_SOURCE_BYTES)"]


# ---------------------------------------------------------------------------- what you can ask

SUGGESTION_KINDS = {
    "Ask about your tasks": {"tasks", "count_tasks", "focus"},
    "Search your notes": {"notes", "count_notes", "find"},
    "See where you stand": {"overview"},
    "Get an overview of your projects": {"projects", "project_status", "maybe_project"},
    "Change things": WRITE_KINDS,
    "Ask about Clarion itself": {"knowledge"},
}


def test_every_request_the_guide_suggests_is_read_as_what_it_says_it_does():
    lines = [line[2:] for line in section("chatting-with-the-assistant.md", "What you can ask").splitlines() if line.startswith("- ")]
    assert {line.partition(":")[0] for line in lines} == set(SUGGESTION_KINDS)
    for line in lines:
        kind, _, examples = line.partition(":")
        suggested = re.findall(r'"([^"]+)"', examples.split(". ")[0])  # the first sentence lists them
        assert suggested, line
        for example in suggested:
            assert parse(example).kind in SUGGESTION_KINDS[kind], example


def test_the_new_tasks_the_guide_says_are_due_on_a_day_are_read_with_that_day():
    changes = section("chatting-with-the-assistant.md", "What you can ask")
    assert "tonight, tomorrow, or a weekday" in changes and 'or a date: "by Dec 5"' in changes
    for example, due in [("remind me to call Bob tomorrow", "tomorrow"), ("add a task to pay rent by Friday", "friday")]:
        assert f'"{example}"' in changes
        assert (parse(example).kind, parse(example).due) == ("create_task", due), example
    assert parse("remind me to pay rent by Dec 5").due_on is not None


def test_the_changes_the_guide_says_pick_some_tasks_are_read_with_what_picks_them():
    changes = section("chatting-with-the-assistant.md", "What you can ask")
    for example, picked in [
        ("delete the tasks due today", {"due": "today"}),
        ("push everything due today to tomorrow", {"due": "today", "search": None, "new_due": "tomorrow"}),
        ("complete all the urgent tasks", {"priority": "urgent"}),
        ("delete the tasks I added yesterday", {"added": "yesterday"}),
        ("delete the task buy milk due Friday", {"search": "buy milk", "due": "friday"}),
    ]:
        assert f'"{example}"' in changes
        intent = parse(example)
        assert intent.kind in WRITE_KINDS and {k: getattr(intent, k) for k in picked} == picked, example
    assert '"delete the tasks due today or tomorrow": name one day at a time' in changes
    assert parse("delete the tasks due today or tomorrow").kind == "one_window"


def test_the_guide_says_how_to_undo_a_completion_in_requests_that_reopen_it():
    undo = section("confirming-changes.md", "Can I undo a change?")
    examples = re.findall(r'"([^"]+)"', undo)
    assert examples
    for example in examples:
        assert (parse(example).kind, parse(example).search) == ("reopen_tasks", "buy milk"), example


# ---------------------------------------------------------------------------- the chat-box rules

CARD = dict(option_labels=["Harbor", "Atlas", "Both"], allow_custom=True)


def inline_examples(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text) + re.findall(r"\"([^\"]+)\"", text)


def test_what_the_guide_says_answers_a_card_does_and_the_rest_is_a_new_message():
    rules = section("typing-while-a-question-waits.md", "What happens to what I type while a question is pending?")
    answers_part, _, _ = rules.partition("Text you send from the chat box")
    answers = [example for line in rules.splitlines() if line.startswith("- ") for example in inline_examples(line)]
    assert {"b", "1a 2b", "2ac", "skip", "s", "2", "Harbor", "the old ones", "only Atlas"} <= set(answers)
    for example in answers:
        assert shorthand.answers_the_card(example, **CARD), example
    new_messages = inline_examples(answers_part)
    assert {"clean up my tasks", "what's due this week?"} <= set(new_messages)
    for example in new_messages:
        assert not shorthand.answers_the_card(example, **CARD), example


def test_the_shorthand_examples_and_errors_are_the_parsers():
    text = section("answering-questions.md", "How do I answer several questions at once?")
    slots = [shorthand.Slot(position=1, option_count=3, multi_select=False, pending=True)]
    slots.append(shorthand.Slot(position=2, option_count=3, multi_select=True, pending=True))
    for example in re.findall(r"^- `([^`]+)`", text, re.MULTILINE):
        assert shorthand.looks_like_shorthand(example), example
    assert shorthand.parse("1a 2b", slots).answers == (shorthand.ShorthandAnswer(1, (0,)), shorthand.ShorthandAnswer(2, (1,)))
    assert shorthand.parse("skip", slots).skip
    for bad, error in [("3a", "There is no question 3."), ("1e", "Option e is not one of a–c (question 1).")]:
        with pytest.raises(shorthand.ShorthandError, match=re.escape(error)):
            shorthand.parse(bad, slots)
        assert error in text


# ---------------------------------------------------------------------------- every question a heading asks

QUESTIONS = [(page, heading) for page, text in PAGES.items() for heading in re.findall(r"^## (.+\?)$", text, re.MULTILINE)]


def test_there_are_questions_to_check():
    assert len(QUESTIONS) >= 15


@pytest.mark.parametrize("page, question", QUESTIONS)
def test_a_question_the_guide_asks_goes_to_the_knowledge_base(page, question):
    assert parse(question).kind == "knowledge"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("page, question", QUESTIONS)
def test_a_question_the_guide_asks_is_answered_from_its_page(user_guide, page, question):
    result = ask(question)
    assert result.should_reply is True, result.debug
    assert result.citations[0].source_id == f"docs/user-guide/{page}", [c.source_id for c in result.citations]


def test_the_guide_says_what_logging_out_ends():
    # The behaviour: tests/test_auth.py, a logout (this browser's session, its old cookie, the
    # other browsers) and a password change (which logs the other browsers out).
    section_text = section("getting-started.md", "How do I log out?")
    assert "**Log out** in the top bar ends your session in this browser" in section_text
    assert "Other browsers logged in as you stay logged in until they log out too, or until you change your password." in section_text


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("request_text", ["change my password", "I forgot my password"])
def test_a_password_request_is_answered_from_the_guide(user_guide, request_text):
    assert parse(request_text).kind == "knowledge"
    result = ask(request_text)
    assert result.should_reply is True, result.debug
    assert result.citations[0].source_id == "docs/user-guide/getting-started.md"


# ---------------------------------------------------------------------------- your data


def test_the_limits_the_guide_states_are_the_limits_clarion_enforces():
    from django.conf import settings

    from chat.tools import QueryNotesArgs, QueryTasksArgs
    from workspace.models import Note, Project, Task

    limits = section("your-data.md", "Are there limits on tasks, notes and projects?")
    assert f"A task's title holds up to {Task._meta.get_field('title').max_length} characters" in limits
    assert f"a note's title up to {Note._meta.get_field('title').max_length}" in limits
    assert f"a project's name up to {Project._meta.get_field('name').max_length}" in limits
    assert f"a message to the assistant holds up to {settings.CHAT_MESSAGE_MAX_CHARS} characters" in limits
    most = {
        name: next(m.le for m in args.model_fields["limit"].metadata if hasattr(m, "le"))
        for name, args in [("tasks", QueryTasksArgs), ("notes", QueryNotesArgs)]
    }
    assert f"pages of up to {most['tasks']} tasks or {most['notes']} notes" in limits


def test_the_log_goes_where_the_guide_says():
    from django.conf import settings

    log = section("configuration-reference.md", "Where is the log?")
    assert "Clarion writes its log to the terminal that runs `manage.py up` (standard error)" in log
    assert "it keeps no log file of its own" in log
    assert {handler["class"] for handler in settings.LOGGING["handlers"].values()} == {"logging.StreamHandler"}
    console = settings.LOGGING["handlers"]["console"]
    assert console["class"] == "logging.StreamHandler" and "stream" not in console  # a StreamHandler writes to stderr
    assert settings.LOGGING["root"]["handlers"] == ["console"]


def test_the_ways_back_in_and_up_to_date_the_guide_gives_exist():
    from django.contrib import admin

    forgot = section("getting-started.md", "What if I forgot my password?")
    assert "`manage.py changepassword NAME`" in forgot and "changepassword" in get_commands()
    assert "under *Users*" in forgot and admin.site.is_registered(get_user_model())
    update = section("getting-started.md", "How do I update Clarion to a new version?")
    assert "`manage.py up` applies its database migrations" in update
    assert "the demo workspace is not seeded a second time" in update  # tests/project/test_up.py runs `up` twice


def test_the_backup_the_guide_describes_uses_commands_and_folders_clarion_has():
    from django.conf import settings

    backup = section("your-data.md", "How do I back up my data?")
    assert "`manage.py stop_postgres`" in backup and "stop_postgres" in get_commands()
    assert "the whole `.data` folder" in backup and Path(settings.DATA_DIR).name == ".data"
    stored = section("your-data.md", "Where is my data stored?")
    assert "`.data/postgres`" in stored and "`CLARION_DATA_DIR`" in stored


def test_the_guide_says_the_page_loads_nothing_from_elsewhere_as_its_policy_enforces():
    from django.conf import settings

    sent = section("your-data.md", "Is my data sent anywhere? Does Clarion need the internet?")
    assert "the page loads no scripts, fonts or styles from elsewhere" in sent
    for directive in ("default-src", "script-src", "style-src", "font-src", "connect-src"):
        assert settings.CONTENT_SECURITY_POLICY[directive] == ["'self'"], directive


@pytest.mark.django_db
def test_deleting_an_account_in_the_admin_deletes_its_workspace_and_conversations_as_the_guide_says(alice, bob):
    from chat import services as chat_services
    from chat.models import Conversation
    from workspace import services as workspace_services
    from workspace.models import Note, Project, Task

    deleting = section("your-data.md", "How do I delete my account or my data?")
    assert "under **Users**, and its projects, tasks, notes and conversations are deleted with it" in deleting
    for user in (alice, bob):
        project = workspace_services.create_project(user=user, name="Garden")
        workspace_services.create_task(user=user, title="Water the roses", project_id=project.pk)
        workspace_services.create_note(user=user, title="Seeds", content="Tomatoes")
        chat_services.start_conversation(user=user)
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-xxxxxxxx")
    client = Client()
    client.force_login(admin)
    assert client.get("/admin/auth/user/").status_code == 200  # the admin's Users list
    response = client.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    for model in (Project, Task, Note, Conversation):
        assert not model.objects.filter(owner_id=alice.pk).exists(), model
        assert model.objects.filter(owner=bob).count() == 1, model  # another account keeps its own


def test_the_clarifying_question_the_guide_quotes_is_the_one_clean_up_my_tasks_gets():
    from questions.clarification import analyze_with_templates

    why = section("chatting-with-the-assistant.md", "Why does the assistant ask me a question?")
    assert '"clean up my tasks": delete the completed tasks, or review the open ones, and in which project?' in why
    asked = analyze_with_templates("clean up my tasks", projects=["Atlas", "Harbor"]).questions
    assert [o.label for o in asked[0].options][:2] == ["Delete completed tasks", "Review open tasks"]
    assert [o.label for o in asked[1].options] == ["All projects", "Atlas", "Harbor"]
    assert "`CLARIFICATION_ENABLED`" in why


@pytest.mark.django_db(transaction=True)
async def test_another_accounts_workspace_is_invisible_to_the_assistant_as_the_guide_says(alice, bob):
    from channels.db import database_sync_to_async

    from tests.conftest import tool_as
    from workspace import services as workspace_services

    who = section("your-data.md", "Who can see my projects, tasks and notes?")
    assert "another account's are invisible to it, as if they did not exist" in who

    def bobs_workspace():
        project = workspace_services.create_project(user=bob, name="Bob's")
        workspace_services.create_task(user=bob, title="Bob's task", project_id=project.pk)
        workspace_services.create_note(user=bob, title="Bob's note")
        return project

    project = await database_sync_to_async(bobs_workspace)()
    for name, arguments, key in [("query_tasks", {}, "tasks"), ("query_notes", {}, "notes"), ("query_projects", {}, "projects")]:
        outcome = await tool_as(alice, name, arguments)
        assert json.loads(outcome.content)[key] == [], name
    outcome = await tool_as(alice, "query_tasks", {"project_id": project.pk})  # as if it did not exist
    assert "error" in json.loads(outcome.content)


# ---------------------------------------------------------------------------- projects, tasks and notes


def test_the_statuses_priorities_and_defaults_the_guide_names_are_a_tasks():
    from workspace.models import Task

    page = section("projects-tasks-and-notes.md", "What does a task have?")
    statuses = ", ".join(label.lower() for label in Task.Status.labels[:-1]) + f" or {Task.Status.labels[-1].lower()}"
    priorities = ", ".join(label.lower() for label in Task.Priority.labels[:-1]) + f" or {Task.Priority.labels[-1].lower()}"
    assert f"a status — {statuses} —" in page and f"a priority — {priorities};" in page
    defaults = {f.name: f.default for f in Task._meta.get_fields() if hasattr(f, "default")}
    assert f"a new task is {Task.Status(defaults['status']).label.lower()}, at {defaults['priority']} priority" in page
    assert {"due_date", "project", "description", "completed_at"} <= {f.name for f in Task._meta.get_fields()}
    assert f"A task has a status ({statuses})" in section(
        "projects-tasks-and-notes.md", "What is the difference between a task and a note?"
    )


def test_the_requests_the_page_on_projects_tasks_and_notes_quotes_do_what_it_says():
    text = PAGES["projects-tasks-and-notes.md"]
    quoted = dict.fromkeys(re.findall(r'"([^"]+)"', text))
    expected = {
        "add a task to buy milk": "create_task",
        "remind me to call Bob tomorrow": "create_task",
        "add a task called Book the venue in Harbor": "create_task",
        "add a task to pay rent by Friday": "create_task",
        "add a task to renew the passport by Dec 5": "create_task",
        "what's due today?": "tasks",
        "what should I work on next?": "focus",
        "add a note called Venue ideas: the old mill, the boathouse": "create_note",
        "add Dune to my Reading list note": "append_note",
        "unarchive Atlas": "update_project",
        "Atlas is done": "finish_project",
        "list my archived projects": "projects",
        "which tasks aren't in a project?": "tasks",
        "what did I note about the launch?": "notes",
        "what did I finish this week?": "tasks",
        "how is the Atlas project going?": "project_status",
        "what's on my plate?": "tasks",
        "show my completed tasks": "tasks",
        "what's due this week?": "tasks",
        "what's overdue?": "tasks",
        "show my tasks in Atlas": "tasks",
        "show my notes": "notes",
        "mark buy milk as done": "complete_tasks",
        "I finished buy milk": "complete_tasks",
        "reopen the task buy milk": "reopen_tasks",
        "start working on buy milk": "update_tasks",
        "make buy milk urgent": "update_tasks",
        "push buy milk to Friday": "update_tasks",
        "rename the task buy milk to buy oat milk": "update_tasks",
        "move buy milk to Harbor": "move_tasks",
        "delete buy milk": "delete_tasks",
        "rename the note Retro to Launch retro": "rename_note",
        "move the note Venue ideas to Harbor": "move_notes",
        "delete the note Venue ideas": "delete_notes",
        "create a project called Garden": "create_project",
        "rename the Atlas project to Atlas web": "update_project",
        "archive the Atlas project": "update_project",
        "delete the Harbor project": "delete_project",
    }
    assert set(quoted) == set(expected), "every request the page quotes is checked here"
    for example, kind in expected.items():
        assert parse(example).kind == kind, example
    assert parse("add a task called Book the venue in Harbor").project_name == "Harbor"
    assert parse("remind me to call Bob tomorrow").due == "tomorrow"
    assert parse("add a task to pay rent by Friday").due == "friday"
    assert parse("add a task to renew the passport by Dec 5").due_on.endswith("-12-05")


def test_the_guide_says_a_question_the_knowledge_base_cannot_answer_is_looked_up_in_the_tasks_and_notes():
    # The lookup itself, and a question about how Clarion works that is not looked up:
    # tests/chat/test_offline_turns.py, a question the knowledge base cannot answer.
    notes = section("chatting-with-the-assistant.md", "What you can ask")
    assert (
        "A question that only your tasks or notes can answer, which the knowledge base has no answer to, is looked up "
        "in your task titles and notes too (even when a page of this guide comes close; when nothing has all of its words, "
        'once more without the verb of what was done or else the commonest of them, so "what\'s the faucet issue?" finds the note '
        "about the faucet)" in notes
    )
    assert "a question about how Clarion works is not, and gets the closest pages instead" in notes
    for question in (
        "what's the wifi password?",
        "what did Bob say about the budget?",
        "how do I export my data?",
        "what's the faucet issue?",
        "why did we drop the account wall?",
    ):
        assert parse(question).kind == "knowledge", question


def test_the_guide_says_an_unanswered_question_links_the_closest_pages():
    # The behaviour: tests/chat/test_knowledge_tool.py (offline engine), tests/chat/test_agent.py
    # (a model) and tests/knowledge/test_pipeline_offline.py (which pages are close).
    assert "says so instead of guessing, and links the pages that come closest" in section(
        "chatting-with-the-assistant.md", "Answers with citations"
    )
    assert "and links the pages that came closest" in section("knowledge-base.md", "Why didn't the assistant answer my question?")
