"""The user guide answers questions about Clarion as it behaves today, through the offline engine:
the questions it used to answer wrongly, and what each answer must (and must not) say."""

from __future__ import annotations

import pytest

from tests.knowledge.conftest import ask

pytestmark = pytest.mark.django_db(transaction=True)

GUIDE = "docs/user-guide/"


@pytest.mark.parametrize(
    "question, page, facts, stale",
    [
        (
            "How do I answer several questions at once?",
            "answering-questions.md",
            ["Type the answers in the chat box", "`1a 2b` answers question 1 with option a and question 2 with option b", "`skip`"],
            ["one at a time", "whatever you type"],
        ),
        (
            "How long do I have to answer a question?",
            "question-deadlines.md",
            ["8, 15 or 25 seconds", "300 seconds", "AI configuration"],
            ["LLM_TIMEOUT_SECONDS", "LLM_IDLE_TIMEOUT_SECONDS", "model"],
        ),
        (
            "What happens to what I type while a question is pending?",
            "typing-while-a-question-waits.md",
            ["Only an answer answers the card", "is sent to the assistant as a new message, and the waiting card is cancelled", "`1a 2b`"],
            ["to-do", "Task", "whatever you type"],
        ),
        (
            "Does the countdown stop while I type?",
            "question-deadlines.md",
            ["pauses the countdown", "5 seconds without typing", "120 seconds"],
            [],
        ),
        (
            "What happens when a question times out?",
            "question-deadlines.md",
            ["the marked default option is applied for you", "50 %", "a confirmation of changes never defaults to yes"],
            [],
        ),
        (
            "What happens to the question when I send a new message?",
            "typing-while-a-question-waits.md",
            ["Cancelled — you sent a new message", "replies to your new message"],
            [],
        ),
        (
            "How do I add a document to the knowledge base?",
            "managing-sources.md",
            ["Upload a file", "Or a URL", "Add and index"],
            [],
        ),
        ("Where are my notes stored?", "your-data.md", ["Postgres", ".data/postgres"], ["deadline"]),
        ("Can other users see my tasks?", "your-data.md", ["Only you", "no way to share"], []),
        ("How many tasks can I have?", "your-data.md", ["no limit on how many"], ["what's on my plate"]),
        (
            "What's the difference between a task and a note?",
            "projects-tasks-and-notes.md",
            ["A task is something to do and a note is something to keep"],
            ["What does a task have?"],
        ),
        (
            "How do I mark a task as done?",
            "projects-tasks-and-notes.md",
            ['"mark buy milk as done"', "confirmation card"],
            ["Can I undo a change?", "not done"],
        ),
        ("How do I delete a task?", "projects-tasks-and-notes.md", ['"delete buy milk"'], ["archive"]),
        ("How do I see my completed tasks?", "projects-tasks-and-notes.md", ['"show my completed tasks"'], ["mark buy milk as done"]),
        ("How do I rename a project?", "projects-tasks-and-notes.md", ['"rename the Atlas project to Atlas web"'], []),
        (
            "What happens when I archive a project?",
            "projects-tasks-and-notes.md",
            ['"archive the Atlas project"', "keeps it and everything in it"],
            ["Garden"],
        ),
        (
            "What happens if I don't answer a question?",
            "answering-questions.md",
            ["the default option marked on the card is applied for you", "Timed out — no answer", "never applied"],
            ["click an option"],
        ),
        ("Why was my upload refused?", "managing-sources.md", ["is not readable text", "`KNOWLEDGE_MAX_SOURCE_BYTES`"], ["403"]),
        ("How do I change the system prompt?", "tuning-prompts-in-the-admin.md", ["`{today}` (the person's date", "`{snapshot}`"], ["``"]),
        (
            "How do I set a due date?",
            "projects-tasks-and-notes.md",
            ['"add a task to pay rent by Friday"', '"push buy milk to Friday"'],
            ["A task is something to do"],
        ),
        ("Can I set a reminder?", "projects-tasks-and-notes.md", ["Clarion sends no reminders or notifications"], []),
        ("How big can an uploaded file be?", "managing-sources.md", ["2 000 000 bytes"], []),
        ("How do I delete my account?", "your-data.md", ["an administrator deletes it in the admin", "deleted with it"], []),
        ("Does it work without internet?", "your-data.md", ["It runs without an internet connection"], []),
        ("Is my data sent anywhere?", "your-data.md", ["Clarion sends nothing to other services"], []),
        (
            "Why did the assistant ask me a question?",
            "chatting-with-the-assistant.md",
            ['"clean up my tasks"', "confirmation card"],
            ["click an option"],
        ),
        ("How do I change the port?", "getting-started.md", ["`manage.py up --port 8080`"], []),
        ("How do I add another user?", "getting-started.md", ["under *Users*", "`manage.py createsuperuser`"], []),
        ("How do I make someone an admin?", "getting-started.md", ["*Staff status*", "*Superuser status*"], []),
        ("What happens if I ignore a question?", "answering-questions.md", ["Ignoring a question is safe"], ["Refusal policy"]),
        ("How do I start a new chat?", "chatting-with-the-assistant.md", ["start a new chat with New conversation"], ["chat box"]),
        ("How do I write a message on several lines?", "chatting-with-the-assistant.md", ["Shift+Enter starts a new line"], []),
        ("What does the typing indicator mean?", "chatting-with-the-assistant.md", ["three dots (the typing indicator)"], []),
        ("Can I confirm several changes at once?", "confirming-changes.md", ["several changes at once, confirmed together"], []),
        ("Why does it ask me to confirm?", "confirming-changes.md", ["it asks you to confirm first"], ["query tools"]),
        ("How do I switch to another model?", "connecting-your-own-model.md", ["set `LLM_MODEL` to its name"], ["clarifying"]),
        ("What are the system requirements?", "getting-started.md", ["Python 3.11 and nothing else"], []),
        ("Does it work on my phone?", "getting-started.md", ["it works in a phone's browser too"], []),
        ("Is my data private?", "your-data.md", ["private to your account"], ["Refusal policy"]),
        ("Can I use a remote Postgres database?", "configuration-reference.md", ["on this machine or a remote one"], []),
        ("How do I turn off the questions?", "answering-questions.md", ["`CLARIFICATION_ENABLED=false`", "confirmation card"], []),
        (
            "How do I remove a document from the knowledge base?",
            "managing-sources.md",
            ["Delete selected added sources"],
            ["Upload a file"],
        ),
        (
            "What happens if I close the browser while it's answering?",
            "chatting-with-the-assistant.md",
            ["closing the page or the browser does not", "there when you open the conversation again"],
            [],
        ),
        ("How do I stop a reply?", "chatting-with-the-assistant.md", ["Stop generating (or Esc) stops a reply"], []),
        ("Where are the logs?", "configuration-reference.md", ["writes its log to the terminal", "no log file of its own"], ["Log out"]),
        ("How do I log out?", "getting-started.md", ["Log out in the top bar ends your session"], ["standard error"]),
        ("How do I sign out of other browsers?", "getting-started.md", ["until they log out too"], []),
        ("How do I upgrade to a new version?", "getting-started.md", ["`git pull`", "applies its database migrations"], []),
        ("I forgot my password", "getting-started.md", ["`manage.py changepassword NAME`"], ["current password"]),
        ("Can I change my answer after answering?", "answering-questions.md", ["a question is answered once", "in a new message"], []),
        ("What does the assistant do when it isn't sure?", "getting-started.md", ["multiple-choice question instead of guessing"], []),
        ("Can tasks have subtasks?", "projects-tasks-and-notes.md", ["A task has no subtasks"], []),
        ("Can I edit a message I sent?", "chatting-with-the-assistant.md", ["Edit on your last message changes it"], []),
        ("Is there a mobile app?", "getting-started.md", ["it works in a phone's browser"], []),
        ("Can I share a project with someone?", "your-data.md", ["There is no way to share a project"], []),
        (
            "What does the percentage on an option mean?",
            "answering-questions.md",
            ["how likely it thinks that option is, as a percentage"],
            [],
        ),
    ],
    ids=[
        "several-at-once",
        "how-long",
        "typing-while-pending",
        "pause",
        "timeout",
        "new-message",
        "add-source",
        "stored",
        "who-sees",
        "limits",
        "task-or-note",
        "mark-done",
        "delete-task",
        "see-completed",
        "rename-project",
        "archive-project",
        "no-answer",
        "upload-refused",
        "system-prompt",
        "due-date",
        "reminder",
        "upload-size",
        "delete-account",
        "offline",
        "data-sent",
        "why-asked",
        "port",
        "add-user",
        "make-admin",
        "ignore",
        "new-chat",
        "several-lines",
        "typing-indicator",
        "several-changes",
        "why-confirm",
        "switch-model",
        "requirements",
        "phone",
        "private",
        "remote-postgres",
        "turn-off-questions",
        "remove-document",
        "browser-closed",
        "stop-reply",
        "logs",
        "log-out",
        "sign-out",
        "upgrade",
        "forgot-password",
        "change-answer",
        "not-sure",
        "subtasks",
        "edit-sent",
        "mobile",
        "share",
        "percentage",
    ],
)
def test_questions_about_clarion_get_right_cited_answers_from_the_guide(user_guide, question, page, facts, stale):
    result = ask(question)

    assert result.should_reply is True, result.debug
    assert result.citations[0].source_id == GUIDE + page, [c.source_id for c in result.citations]
    assert "[1]" in result.reply_text
    for fact in facts:
        assert fact in result.reply_text, (fact, result.reply_text)
    for word in stale:
        assert word not in result.reply_text, (word, result.reply_text)
