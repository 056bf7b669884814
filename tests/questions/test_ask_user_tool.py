"""ask_user through the real agent loop and a fake model: validation, limits, what the model gets."""

import json

import pytest
from channels.db import database_sync_to_async

from chat import agent, rendering, services
from chat.models import Message
from questions.models import PendingQuestion, QuestionGroup
from tests.fake_openai import Reply

pytestmark = pytest.mark.django_db(transaction=True)

GOOD = {"question": "Which project?", "header": "Project", "options": [{"label": "Atlas"}, {"label": "Harbor"}]}


@pytest.fixture
def model(settings, fake_openai):
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake_openai.base_url, "sk-test", "fake-model"
    settings.LLM_MAX_RETRIES = 0
    settings.CLARIFICATION_ENABLED = settings.QUESTION_DETECTOR_ENABLED = settings.QUESTION_GUESSER_ENABLED = False
    settings.QUESTIONS_MIN_INTERVAL_SECONDS = 0
    fake_openai.default = None
    return fake_openai


@database_sync_to_async
def start(user, text="help me choose"):
    conversation = services.start_conversation(user=user)
    services.post_user_message(user=user, conversation_id=conversation.pk, content=text)
    return conversation


@database_sync_to_async
def count(model, **filters):
    return model.objects.filter(**filters).count()


@database_sync_to_async
def tool_error(conversation):
    message = Message.objects.filter(conversation=conversation, role="tool").order_by("id").first()
    return json.loads(message.content)["error"]


def ask(*questions, **extra):
    return Reply.tool_call("ask_user", {"questions": list(questions), **extra})


@pytest.mark.parametrize(
    "bad, message",
    [
        ({**GOOD, "question": "x" * 501}, "questions.0.question: String should have at most 500 characters"),
        ({**GOOD, "question": "   "}, "questions.0.question: String should have at least 1 character"),
        ({**GOOD, "options": [{"label": "Only one"}]}, "questions.0.options: List should have at least 2 items"),
        ({**GOOD, "options": [{"label": str(i)} for i in range(7)]}, "questions.0.options: List should have at most 6 items"),
        ({**GOOD, "options": [{"label": "Atlas"}, {"label": " "}]}, "questions.0.options.1.label: String should have at least 1 character"),
        (
            {**GOOD, "options": [{"label": "Atlas"}, {"label": "y" * 201}]},
            "questions.0.options.1.label: String should have at most 200 characters",
        ),
        ({**GOOD, "placeholder": "p" * 101}, "questions.0.placeholder: String should have at most 100 characters"),
        ({**GOOD, "options": [{"label": "Atlas"}, {"label": "atlas"}]}, "option labels must be distinct"),
        ({**GOOD, "timeout_seconds": 1}, "timeout_seconds: Input should be greater than or equal to 5"),
    ],
)
async def test_invalid_questions_become_correctable_tool_errors_and_nothing_is_asked(model, alice, bad, message):
    model.script(ask(bad), Reply.text("I'll decide myself."))
    conversation = await start(alice)
    await agent.run_pending_turns(conversation.pk)
    assert message in await tool_error(conversation)
    assert await count(PendingQuestion) == 0 and await count(QuestionGroup) == 0


async def test_more_than_four_questions_is_refused(model, alice):
    model.script(ask(*[GOOD] * 5), Reply.text("ok"))
    conversation = await start(alice)
    await agent.run_pending_turns(conversation.pk)
    assert "questions: List should have at most 4 items" in await tool_error(conversation)
    assert await count(PendingQuestion) == 0


async def test_a_valid_ask_ends_the_turn_and_waits(model, alice):
    model.script(ask(GOOD, {**GOOD, "question": "Which colour?", "options": [{"label": "Red"}, {"label": "Blue"}], "multi_select": True}))
    conversation = await start(alice)
    await agent.run_pending_turns(conversation.pk)
    assert len(model.requests) == 1  # no further model call while the person decides
    questions = await database_sync_to_async(lambda: list(PendingQuestion.objects.order_by("position")))()
    assert [q.question for q in questions] == ["Which project?", "Which colour?"]
    assert questions[0].deadline is not None and questions[1].deadline is None  # one at a time
    assert questions[0].timeout_seconds == 300  # the five-minute default for a plain ask
    assert await database_sync_to_async(services.needs_reply)(conversation_id=conversation.pk) is False


async def test_bidirectional_controls_on_a_card_are_shown_as_markers(model, alice):
    # "Delete" written backwards after a right-to-left override reads "Delete" on a card; shown as
    # "<U+202E>eteleD" it cannot pass for the option it imitates.
    hostile = {
        "question": "Keep \u2066the\u2069 files?",
        "header": "F\u200files",
        "placeholder": "Type \u202b here",
        "options": [{"label": "\u202eeteleD", "description": "Keep \u202aall"}, {"label": "Keep"}],
    }
    model.script(ask(hostile))
    conversation = await start(alice)
    await agent.run_pending_turns(conversation.pk)
    question = await database_sync_to_async(PendingQuestion.objects.get)()
    assert (question.question, question.header, question.placeholder) == (
        "Keep <U+2066>the<U+2069> files?",
        "F<U+200F>iles",
        "Type <U+202B> here",
    )
    assert [(o["label"], o["description"]) for o in question.options] == [("<U+202E>eteleD", "Keep <U+202A>all"), ("Keep", "")]
    card = await database_sync_to_async(lambda: rendering.question_group(question.group))()
    assert "&lt;U+202E&gt;eteleD" in card and "\u202e" not in card


async def test_at_most_ten_pending_questions_per_user(model, alice):
    for _ in range(3):
        model.script(ask(*[GOOD] * 4))
    model.script(Reply.text("ok"))
    conversations = [await start(alice, f"ask {i}") for i in range(3)]
    for conversation in conversations:
        await agent.run_pending_turns(conversation.pk)
    assert await count(PendingQuestion, status="pending") == 8
    assert "at most 10 may be pending" in await tool_error(conversations[2])


async def test_at_most_one_ask_per_conversation_per_five_seconds(model, settings, alice):
    settings.QUESTIONS_MIN_INTERVAL_SECONDS = 5
    model.script(Reply.tool_call("ask_user", {"questions": [GOOD]}).and_tool_call("ask_user", {"questions": [GOOD]}))
    conversation = await start(alice)
    await agent.run_pending_turns(conversation.pk)
    assert await count(QuestionGroup) == 1
    assert "ask at most one every 5 s" in await tool_error(conversation)
