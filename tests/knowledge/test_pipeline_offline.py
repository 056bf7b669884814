"""The offline engine's pipeline: the same graph, deterministic nodes, the shipped user guide."""

from __future__ import annotations

import asyncio
import json

import pytest

from knowledge import services
from knowledge.models import KnowledgeSource
from tests.knowledge.conftest import ask, build_kb

pytestmark = pytest.mark.django_db(transaction=True)

CONNECTING = "docs/user-guide/connecting-your-own-model.md"


def test_how_do_i_connect_my_own_model_is_answered_from_the_shipped_docs_with_a_citation(user_guide):
    result = ask("How do I connect my own model?")

    assert result.should_reply is True, result.debug
    assert result.debug["engine"] == "offline" and result.debug["llm_calls"] == []
    source = KnowledgeSource.objects.get(source_id=CONNECTING)
    assert result.citations[0].model_dump() == {
        "n": 1,
        "source_id": CONNECTING,
        "title": "Connecting your own model",
        "url": f"/kb/sources/{source.pk}/",
    }
    assert "`LLM_BASE_URL`" in result.reply_text and "[1]" in result.reply_text
    # Every sentence is quoted from (and cites) a loaded source.
    assert result.debug["verification"]["is_good_enough"] is True
    for citation in result.citations:
        assert citation.source_id in result.debug["loaded_source_ids"]


@pytest.mark.parametrize(
    "question, source_id",
    [
        ("How do I rebuild the knowledge index?", "docs/user-guide/managing-sources.md"),
        ("what does 1a 2b mean?", "docs/user-guide/answering-questions.md"),
        ("What port does Ollama use?", CONNECTING),
        ("how do I tune the prompts?", "docs/user-guide/tuning-prompts-in-the-admin.md"),
    ],
)
def test_other_user_guide_questions_cite_the_right_page(user_guide, question, source_id):
    result = ask(question)
    assert result.should_reply is True, result.debug
    assert result.citations[0].source_id == source_id


@pytest.mark.parametrize(
    "message, reason",
    [
        ("thanks!", "gate: not a question"),
        ("Great, that worked.", "gate: not a question"),
        ("how?", "gate: not answerable"),
        ("What's the weather in Paris?", "select: no relevant source"),
        ("", "gate: empty question"),
    ],
)
def test_what_the_docs_do_not_answer_gets_silence(user_guide, message, reason):
    result = ask(message)
    assert result.should_reply is False and result.reply_text is None and result.citations == [] and result.closest_pages == []
    assert result.debug["skip_reason"] == reason


def test_without_an_index_there_is_no_reply(db):
    result = ask("How do I connect my own model?")
    assert result.should_reply is False and result.debug["skip_reason"] == "select: the knowledge base has no index yet"


def test_a_source_that_matches_a_word_but_does_not_answer_is_not_quoted(tmp_path):
    build_kb(tmp_path / "kb", {"garden.md": "# Garden\n\nTomatoes need a lot of sun and regular watering in summer.\n"})
    result = ask("How do I configure the proxy for tomatoes behind TLS?")
    assert result.should_reply is False
    assert result.debug["skip_reason"] == "generate: the sources do not answer the question"
    assert result.closest_pages == []  # a page with one word of the question is not where to look


DEPLOYING = "# Deploying\n\nRun the server behind nginx.\n\n## Logging\n\nLogs go to stderr.\n"


def test_a_page_with_most_of_what_is_asked_is_named_as_the_closest_when_nothing_in_it_answers(tmp_path):
    build_kb(tmp_path / "kb", {"deploying.md": DEPLOYING, "garden.md": "# Garden\n\nTomatoes need a lot of sun.\n"})
    result = ask("How do I rotate the nginx logs?")
    assert result.should_reply is False and result.reply_text is None and result.citations == []
    source = KnowledgeSource.objects.get(title="Deploying")
    assert [p.model_dump() for p in result.closest_pages] == [
        {"source_id": source.source_id, "title": "Deploying", "url": f"/kb/sources/{source.pk}/"}
    ]
    answered = ask("How do I run the server behind nginx?")
    assert answered.should_reply is True and answered.closest_pages == []


def test_the_offline_answer_respects_max_answer_chars(user_guide):
    from knowledge.selectors import get_ai_config

    config = get_ai_config()
    config.max_answer_chars = 150
    config.save()
    result = ask("How do I connect my own model?")
    assert result.should_reply is True and len(result.reply_text) <= 150
    assert all(f"[{c.n}]" in result.reply_text for c in result.citations)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"question": "How do I connect my own model?"},
        {
            "question": "How do I connect my own model?",
            "history": [{"role": "user", "text": "hello"}, {"role": "tool", "content": "x"}, "junk"],
        },
        {"question": "x" * 20_000},
        {"question": "How do I connect my own model?", "request_context": {"platform": "slack", "channel_id": "C1"}},
    ],
)
def test_representative_inputs_return_a_valid_ai_result(user_guide, kwargs):
    result = ask(**kwargs)
    payload = json.loads(result.model_dump_json())
    assert isinstance(payload["should_reply"], bool)
    assert payload["should_reply"] == (payload["reply_text"] is not None)
    assert all(set(c) == {"n", "source_id", "title", "url"} for c in payload["citations"])
    assert all(set(p) == {"source_id", "title", "url"} for p in payload["closest_pages"])


async def test_from_a_running_event_loop_a_failure_is_a_silent_result_not_an_exception(user_guide, monkeypatch):
    from knowledge import pipeline

    async def broken_loader(source_ids):
        raise RuntimeError("disk on fire")

    result = await services.answer_from_knowledge_base(question="How do I connect my own model?")
    assert result.should_reply is True

    monkeypatch.setattr(pipeline, "_load_sources", broken_loader)
    result = await services.answer_from_knowledge_base(question="How do I connect my own model?")
    assert result.should_reply is False and result.debug["skip_reason"] == "load: no selected source could be loaded"

    async def slow_graph(*args, **kwargs):
        await asyncio.sleep(5)

    from channels.db import database_sync_to_async

    from knowledge.selectors import get_ai_config

    config = await database_sync_to_async(get_ai_config)()
    config.request_timeout_seconds = 0.2
    await database_sync_to_async(config.save)()
    monkeypatch.setattr(pipeline.GRAPH, "ainvoke", slow_graph)
    result = await services.answer_from_knowledge_base(question="How do I connect my own model?")
    assert result.should_reply is False and result.debug["error"].startswith("timeout")

    monkeypatch.setattr(pipeline.GRAPH, "ainvoke", lambda *a, **k: 1 / 0)
    result = await services.answer_from_knowledge_base(question="How do I connect my own model?")
    assert result.should_reply is False and result.debug["error"] == "internal: ZeroDivisionError"


async def test_the_adapter_contract_takes_the_latest_user_message_as_the_question(user_guide):
    from knowledge.schemas import Conversation, RequestContext

    conversation = Conversation.model_validate(
        {"messages": [
            {"role": "user", "text": "hi"},
            {"role": "assistant", "text": "Hello! How can I help?"},
            {"role": "user", "text": "How do I connect my own model?"},
            {"role": "assistant", "text": "Let me check."},
        ]}
    )  # fmt: skip
    assert conversation.latest_question == "How do I connect my own model?"
    assert conversation.history() == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
    result = await services.generate_reply(conversation=conversation, context=RequestContext(platform="discord"))
    assert result.should_reply is True and result.citations[0].source_id == CONNECTING
