"""The answer guesser, the question detector and clarification: offline rules and the model path."""

import pytest
from channels.db import database_sync_to_async

from chat import services
from llm import build_client
from llm.offline import OfflineEngine
from questions import clarification, detector, guesser
from questions.models import PendingQuestion, QuestionGroup
from tests.fake_openai import Reply
from tests.websocket import form_frame, frames_of_turn, open_socket

OPTIONS = [{"label": "Atlas", "description": "Website relaunch"}, {"label": "Harbor", "description": "Mobile app"}, {"label": "Home"}]


def client_for(fake):
    return build_client(base_url=fake.base_url, api_key="sk-test", model="fake", timeout_seconds=2, max_retries=0)


# --- guesser ---------------------------------------------------------------------------------


def test_offline_guesser_ranks_by_what_the_conversation_mentions():
    ranking = guesser.offline_rank(question="Which project?", options=OPTIONS, context="user: the mobile app beta for Harbor slipped")
    assert ranking[0]["index"] == 1 and "harbor" in ranking[0]["reasoning"]
    assert abs(sum(r["confidence"] for r in ranking) - 1) < 1e-9


async def test_model_guesser_uses_structured_output(fake_openai):
    fake_openai.script(
        Reply.json(
            {
                "ranking": [
                    {"index": 2, "confidence": 0.8, "reasoning": "Weekend errands"},
                    {"index": 0, "confidence": 0.6, "reasoning": "x"},
                ]
            }
        )
    )
    ranking = await guesser.rank_options(client=client_for(fake_openai), question="Which project?", options=OPTIONS, context="")
    assert [r["index"] for r in ranking] == [2, 0]
    assert abs(sum(r["confidence"] for r in ranking) - 1) < 1e-9  # normalised: 0.8 + 0.6 > 1
    assert fake_openai.requests[0]["response_format"]["json_schema"]["name"] == "GuessResult"


async def test_model_guesser_falls_back_to_offline_ranking(fake_openai):
    fake_openai.script(Reply.error(500, "down"))
    ranking = await guesser.rank_options(client=client_for(fake_openai), question="Which project?", options=OPTIONS, context="Home chores")
    assert ranking[0]["index"] == 2


# --- detector ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, options, complexity",
    [
        ("I found 3 stale tasks. Should I archive them?", ["Yes", "No"], "low"),
        ("Sure. Do you want it in Atlas, Harbor or Home?", ["Atlas", "Harbor", "Home"], "medium"),
    ],
)
async def test_offline_detector(reply, options, complexity):
    (found,) = await detector.detect(client=OfflineEngine(), reply=reply)
    assert (found.options, found.complexity) == (options, complexity)


@pytest.mark.parametrize("reply", ["Done — deleted 3 tasks.", "What do you think about that? Anyway, it's done.", "Why? I can't tell"])
async def test_replies_that_do_not_end_by_asking_are_left_alone(reply, fake_openai):
    assert await detector.detect(client=client_for(fake_openai), reply=reply) == []
    assert fake_openai.requests == []  # no model call for a reply that asks nothing


# --- clarification ---------------------------------------------------------------------------


def test_templates_match_ambiguous_requests_only():
    analysis = clarification.analyze_with_templates("Could you clean up my tasks?", projects=["Atlas", "Harbor"])
    assert (analysis.ambiguity_type, analysis.confidence) == ("action", 0.35)
    assert [o.label for o in analysis.questions[1].options] == ["All projects", "Atlas", "Harbor"]
    assert clarification.needs_clarification(analysis, threshold=0.7)
    assert clarification.analyze_with_templates("what's in progress?", projects=[]).ambiguity_type == "clear"
    safety = clarification.analyze_with_templates("delete everything", projects=[])
    assert safety.ambiguity_type == "safety" and not clarification.needs_clarification(safety, threshold=0.1)
    for scoped in ("delete everything due today", "clear everything in Atlas", "remove everything completed this week"):
        assert clarification.analyze_with_templates(scoped, projects=[]).ambiguity_type == "clear", scoped
    assert clarification.analyze_with_templates("wipe my workspace", projects=[]).ambiguity_type == "safety"
    # Asking how is no request to act: the guide answers it, and there is nothing to ask about.
    for asking in ("how do I reset the demo workspace?", "How can I clean up my tasks?"):
        assert clarification.analyze_with_templates(asking, projects=[]).ambiguity_type == "clear", asking


def test_enhance_with_maps_to():
    picks = [("delete all my completed tasks", True), ("in Atlas", False)]
    assert clarification.enhance("clean up my tasks", picks) == "delete all my completed tasks in Atlas"
    assert clarification.enhance("show my tasks", [("in Atlas", False)]) == "show my tasks in Atlas"
    assert clarification.enhance("show my tasks", [("", True), (" ", False)]) == "show my tasks"


async def test_model_analysis_and_failure(fake_openai):
    analysis = {
        "confidence": 0.3, "ambiguity_type": "scope", "understood": "Archive something", "unclear_aspects": ["Which project"],
        "complexity": "low",
        "questions": [{"id": "which", "question": "Which project?", "options": [
            {"key": "a", "label": "Atlas", "maps_to": "in Atlas"}, {"key": "b", "label": "Harbor", "maps_to": "in Harbor"}]}],
    }  # fmt: skip
    fake_openai.script(Reply.json(analysis), Reply.garbage())
    client = client_for(fake_openai)
    result = await clarification.analyze(client=client, request="archive it", context="", projects=[], threshold=0.7)
    assert result.ambiguity_type == "scope" and result.questions[0].options[1].maps_to == "in Harbor"
    failed = await clarification.analyze(client=client, request="archive it", context="", projects=[], threshold=0.7)
    assert failed.ambiguity_type == "clear"  # a broken analysis never blocks the turn


# --- in the agent loop, with a model ---------------------------------------------------------


@pytest.fixture
def model(settings, fake_openai):
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake_openai.base_url, "sk-test", "fake"
    settings.LLM_MAX_RETRIES = 0
    settings.QUESTIONS_MIN_INTERVAL_SECONDS = 0
    fake_openai.default = None
    return fake_openai


CLEAR = Reply.json({"confidence": 0.95, "ambiguity_type": "clear", "understood": "clear", "unclear_aspects": [], "questions": []})


@database_sync_to_async
def rows(model, **filters):
    return list(model.objects.filter(**filters).order_by("pk"))


@pytest.mark.django_db(transaction=True)
async def test_guesses_swap_into_the_card_and_become_the_default(model, settings, alice):
    settings.QUESTION_DETECTOR_ENABLED = False
    model.script(
        Reply.tool_call("ask_user", {"questions": [{"question": "Which project?", "options": [{"label": "Atlas"}, {"label": "Harbor"}]}]})
    )
    model.script_structured(
        CLEAR,
        Reply.json({"ranking": [{"index": 1, "confidence": 0.72, "reasoning": "You mentioned the app"}, {"index": 0, "confidence": 0.28, "reasoning": "Less likely"}]}),
    )  # fmt: skip
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="file this under the app project"))
    frames = await frames_of_turn(socket)
    (question,) = await rows(PendingQuestion)
    assert question.default_indexes == [1] and question.options[1]["confidence"] == 0.72
    assert "72%" in frames and "You mentioned the app" not in frames  # the guesser's reasons stay internal
    # The options keep the order they were asked in, so their keys never move: Harbor stays b.
    card = frames.split("72%")[0]
    assert card.rfind('data-key="b"') > card.rfind('data-key="a"') > card.rfind('class="options"')
    assert "Default <strong>b · Harbor</strong> applies in" in frames.split("72%")[1]
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_reply_ending_in_a_question_becomes_a_card_and_the_answer_continues(model, settings, alice):
    settings.QUESTION_GUESSER_ENABLED = False
    model.script(Reply.text("I found the old launch tasks. Should I archive them?"), Reply.text("Archived."))
    model.script_structured(
        CLEAR, Reply.json({"questions": [{"question": "Should I archive them?", "options": ["Yes", "No"], "complexity": "low"}]})
    )
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="look at the launch tasks"))
    await frames_of_turn(socket)
    (group,) = await rows(QuestionGroup)
    (question,) = await rows(PendingQuestion)
    assert group.kind == "detected" and question.complexity == "low" and question.timeout_seconds == 8
    await socket.send_to(text_data=form_frame(action="answer", question_id=str(question.pk), option=0))
    frames = await frames_of_turn(socket)
    answer = (await rows(services.Message, role="user"))[-1]
    assert answer.content == "Yes" and answer.metadata["answer_to"] == str(group.pk)
    assert "Your answer" in frames and "Archived." in frames
    chat_calls = [r for r in model.requests if "response_format" not in r]
    assert chat_calls[-1]["messages"][-1] == {"role": "user", "content": "Yes"}
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_model_clarification_asks_then_continues_with_the_enhanced_request(model, settings, alice):
    settings.QUESTION_DETECTOR_ENABLED = settings.QUESTION_GUESSER_ENABLED = False
    analysis = {
        "confidence": 0.4, "ambiguity_type": "scope", "understood": "Archive a project", "unclear_aspects": ["Which project"],
        "questions": [{"id": "p", "question": "Which project?", "options": [
            {"key": "a", "label": "Atlas", "maps_to": "the Atlas project"}, {"key": "b", "label": "Harbor", "maps_to": "the Harbor project"}]}],
    }  # fmt: skip

    # The first chat call runs beside clarification and is dropped when the card is shown (it
    # may not even reach the server first, so the reply depends on what is asked).
    def chat(body):
        asked = body["messages"][-1]["content"]
        return Reply.text("Archiving Harbor needs your confirmation." if "Harbor" in asked else "Dropped: the card was shown instead.")

    model.script(chat, chat)
    model.script_structured(Reply.json(analysis), CLEAR)
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="archive the project"))
    frames = await frames_of_turn(socket)
    assert "Why I'm asking" in frames and "Archive a project" in frames
    assert "Dropped" not in frames
    assert await rows(services.Message, role="assistant") == []  # the dropped call saved nothing
    await socket.send_to(text_data=form_frame(action="send_message", message="b"))
    frames = await frames_of_turn(socket)
    assert "Archiving Harbor needs your confirmation." in frames and "Dropped" not in frames
    derived = (await rows(services.Message, role="user"))[-1]
    assert derived.content == "archive the project the Harbor project"
    chat_calls = [r for r in model.requests if "response_format" not in r]  # clarification runs beside them
    assert chat_calls[-1]["messages"][-1]["content"] == "archive the project the Harbor project"
    await socket.disconnect()


@pytest.mark.parametrize(
    "question, options",
    [
        ("Would you like it as a task or a note?", ["A task", "A note"]),
        ("Which one: red, green or blue?", ["Red", "Green", "Blue"]),
        ("Should I file it under Atlas or Harbor?", ["Atlas", "Harbor"]),
    ],
)
def test_offline_detector_options(question, options):
    assert detector.offline_detect(question).options == options
