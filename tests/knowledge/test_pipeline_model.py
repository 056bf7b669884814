"""The pipeline with a real model path: the fake OpenAI-compatible server scripts each node's
structured output (gate → select → answer → verify), over HTTP through the real SDK."""

from __future__ import annotations

import json
import logging
import time

import pytest

from knowledge.models import KnowledgeSource
from tests.fake_openai import Reply
from tests.knowledge.conftest import answer_reply, ask, build_kb, gate_reply, sample, select_reply, verify_reply, write_sources

pytestmark = pytest.mark.django_db(transaction=True)

FILES = {
    "models.md": "# Connecting a model\n\nSet `LLM_BASE_URL` to the endpoint of your server. Set `LLM_MODEL` to the model name.\n",
    "questions.md": "# Answering questions\n\nType `1a 2b` to answer two questions at once.\n",
    "index.md": "# Rebuilding the index\n\nRun `manage.py rebuild_kb_index` to rebuild the index.\n",
}
MODELS, QUESTIONS, INDEX = "kb/models.md", "kb/questions.md", "kb/index.md"


@pytest.fixture
def kb(tmp_path, ai_config):
    build_kb(tmp_path / "kb", FILES)
    return {row.source_id: row for row in KnowledgeSource.objects.all()}


def system_and_user(request: dict) -> tuple[str, str]:
    messages = request["messages"]
    return messages[0]["content"], messages[-1]["content"]


def schema_name(request: dict) -> str:
    return request["response_format"]["json_schema"]["name"]


def test_each_node_is_one_structured_call_and_the_answer_cites_the_loaded_source(model_endpoint, kb, ai_config):
    model_endpoint.script(
        gate_reply(rewrite="connect a model"),
        select_reply(MODELS),
        answer_reply("Set `LLM_BASE_URL` to your server's endpoint [1].", [1]),
        verify_reply(ok=True),
    )

    result = ask("How do I connect my model?", history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}])

    assert result.should_reply is True
    assert result.reply_text == "Set `LLM_BASE_URL` to your server's endpoint [1]."
    assert [c.model_dump() for c in result.citations] == [
        {"n": 1, "source_id": MODELS, "title": "Connecting a model", "url": f"/kb/sources/{kb[MODELS].pk}/"}
    ]
    requests = model_endpoint.requests
    assert [schema_name(r) for r in requests] == ["GateDecision", "SourceSelection", "DraftAnswer", "VerificationDecision"]
    # The gate reads the configured prompt, scope and refusal policy, and the conversation.
    system, user = system_and_user(requests[0])
    assert system.startswith(ai_config.gating_prompt.strip()[:60])
    assert ai_config.answer_scope_prompt.strip()[:40] in system and ai_config.refusal_policy.strip()[:40] in system
    assert "user: hi" in user and "assistant: Hello!" in user and user.endswith("How do I connect my model?")
    # The selector sees the index text (one line per source) and the rewritten query.
    system, user = system_and_user(requests[1])
    assert system.startswith(ai_config.selection_prompt.strip()[:60])
    assert "Question: connect a model" in user
    assert f"{MODELS} — Connecting a model: Summary of {MODELS}." in user and f"{INDEX} — Rebuilding the index: Summary of {INDEX}." in user
    # Only the selected source's text reaches the answer and verification prompts.
    _, user = system_and_user(requests[2])
    assert "[1] Connecting a model (kb/models.md)" in user and "Set `LLM_BASE_URL` to the endpoint" in user
    assert "manage.py rebuild_kb_index" not in user and f"at most {ai_config.max_answer_chars} characters" in user
    _, user = system_and_user(requests[3])
    assert "Draft answer:\nSet `LLM_BASE_URL` to your server's endpoint [1]." in user and "[1] Connecting a model" in user
    assert result.debug["result"] == "answered" and result.debug["engine"] == "model"
    assert [c["purpose"] for c in result.debug["llm_calls"]] == ["gate", "select", "answer", "verify"]


@pytest.mark.parametrize(
    "decision, reason",
    [
        (gate_reply(question=False, answerable=False), "gate: not a question"),
        (gate_reply(question=True, answerable=False), "gate: not answerable"),
    ],
)
def test_the_gate_ends_the_request_early(model_endpoint, kb, decision, reason):
    before = sample("ai_gate_total", {"answerable": "false"})
    model_endpoint.script(decision)

    result = ask("thanks, that helped")

    assert result.should_reply is False and result.reply_text is None and result.citations == []
    assert result.debug["skip_reason"] == reason and result.debug["result"] == "skipped"
    assert len(model_endpoint.requests) == 1
    assert sample("ai_gate_total", {"answerable": "false"}) == before + 1


def test_selection_is_parsed_deduplicated_restricted_to_the_index_and_truncated(model_endpoint, kb, ai_config):
    ai_config.max_sources = 2
    ai_config.save()
    model_endpoint.script(
        gate_reply(),
        select_reply("kb/secret.md", f"  `{INDEX}` ", MODELS, INDEX, QUESTIONS),
        answer_reply("Run `manage.py rebuild_kb_index` [1]. Set `LLM_MODEL` [2].", [1, 2]),
        verify_reply(),
    )

    result = ask("how do I rebuild and configure?")

    assert result.debug["selected_source_ids"] == [INDEX, MODELS]  # model's order, first max_sources
    assert result.debug["rejected_source_ids"] == ["kb/secret.md"]
    _, user = system_and_user(model_endpoint.requests[2])
    assert "[1] Rebuilding the index (kb/index.md)" in user and "[2] Connecting a model (kb/models.md)" in user
    assert "kb/questions.md" not in user
    assert [c.source_id for c in result.citations] == [INDEX, MODELS]


def test_no_selected_source_means_no_reply(model_endpoint, kb):
    model_endpoint.script(gate_reply(), select_reply())
    result = ask("what is the capital of France?")
    assert result.should_reply is False and result.debug["skip_reason"] == "select: no relevant source"
    assert result.closest_pages == []
    assert len(model_endpoint.requests) == 2


def test_a_citation_to_a_source_that_was_not_loaded_is_dropped(model_endpoint, kb):
    model_endpoint.script(
        gate_reply(),
        select_reply(MODELS),
        answer_reply("Set `LLM_BASE_URL` [1]. Also see the secret page [3].", [1, 3]),
        verify_reply(),
    )

    result = ask("how do I connect?")

    assert result.should_reply is True
    assert result.reply_text == "Set `LLM_BASE_URL` [1]. Also see the secret page."
    assert [c.source_id for c in result.citations] == [MODELS]
    assert result.debug["dropped_citations"] == [3]
    # The verifier saw the cleaned draft, not the invented citation.
    assert "[3]" not in system_and_user(model_endpoint.requests[3])[1]


def test_citations_are_renumbered_in_order_of_appearance(model_endpoint, kb):
    model_endpoint.script(
        gate_reply(),
        select_reply(MODELS, INDEX),
        answer_reply("Rebuild with the command [2]. Then set the URL [1][1].", [2, 1]),
        verify_reply(),
    )
    result = ask("how?")
    assert result.reply_text == "Rebuild with the command [1]. Then set the URL [2]."
    assert [(c.n, c.source_id) for c in result.citations] == [(1, INDEX), (2, MODELS)]


def test_an_answer_without_a_valid_citation_is_not_sent_when_citations_are_required(model_endpoint, kb):
    model_endpoint.script(gate_reply(), select_reply(MODELS), answer_reply("Set the URL [7]. It works.", [7]))

    result = ask("how do I connect?")

    assert result.should_reply is False
    assert result.debug["skip_reason"] == "generate: no citation to a loaded source"
    assert len(model_endpoint.requests) == 3  # no verification of an answer that cannot be sent


def test_without_require_citations_an_uncited_verified_answer_is_sent(model_endpoint, kb, ai_config):
    ai_config.require_citations = False
    ai_config.save()
    model_endpoint.script(gate_reply(), select_reply(MODELS), answer_reply("Set the URL."), verify_reply())
    result = ask("how do I connect?")
    assert result.should_reply is True and result.reply_text == "Set the URL." and result.citations == []
    # With nothing cited, the verifier judges the draft against every loaded source.
    assert "[1] Connecting a model (kb/models.md)" in system_and_user(model_endpoint.requests[3])[1]


def test_the_model_saying_the_sources_do_not_answer_means_no_reply(model_endpoint, kb):
    model_endpoint.script(gate_reply(), select_reply(MODELS), answer_reply("", answered=False))
    result = ask("how do I bake bread?")
    assert result.should_reply is False and result.debug["skip_reason"] == "generate: the sources do not answer the question"
    # The pages the model chose are named as the closest (a chat says where to look), never quoted.
    assert [p.model_dump() for p in result.closest_pages] == [
        {"source_id": MODELS, "title": "Connecting a model", "url": f"/kb/sources/{kb[MODELS].pk}/"}
    ]
    assert result.reply_text is None and result.citations == []


def test_at_most_two_closest_pages_are_named_in_the_selections_order(model_endpoint, kb):
    model_endpoint.script(gate_reply(), select_reply(INDEX, MODELS, QUESTIONS), answer_reply("", answered=False))
    result = ask("how do I bake bread?")
    assert [p.source_id for p in result.closest_pages] == [INDEX, MODELS]


def test_verification_rejection_means_no_reply(model_endpoint, kb):
    before = sample("ai_verification_total", {"good_enough": "false"})
    model_endpoint.script(
        gate_reply(),
        select_reply(MODELS),
        answer_reply("Set `LLM_BASE_URL` [1].", [1]),
        verify_reply(ok=False, issues=["Unsupported claim."]),
    )

    result = ask("how do I connect?")

    assert result.should_reply is False and result.reply_text is None and result.citations == []
    assert result.debug["skip_reason"] == "verify: the draft was rejected"
    assert [p.source_id for p in result.closest_pages] == [MODELS]
    assert result.debug["verification"]["issues"] == ["Unsupported claim."]
    assert result.debug["draft"] == "Set `LLM_BASE_URL` [1]."  # for the logs, never the user
    assert sample("ai_verification_total", {"good_enough": "false"}) == before + 1


def test_the_answer_respects_max_answer_chars(model_endpoint, kb, ai_config):
    ai_config.max_answer_chars = 120
    ai_config.save()
    long_answer = "Set `LLM_BASE_URL` to the endpoint of your server [1]. " + "Then rebuild the index with the command [2]. " * 5
    model_endpoint.script(gate_reply(), select_reply(MODELS, INDEX), answer_reply(long_answer, [1, 2]), verify_reply())

    result = ask("how?")

    assert result.should_reply is True and len(result.reply_text) <= 120
    assert result.reply_text.endswith(".")
    for citation in result.citations:
        assert f"[{citation.n}]" in result.reply_text


def test_a_selected_source_that_fails_to_load_is_skipped(model_endpoint, kb, caplog):
    KnowledgeSource.objects.filter(source_id=MODELS).delete()  # the index still names it
    model_endpoint.script(gate_reply(), select_reply(MODELS, INDEX), answer_reply("Run the command [1].", [1]), verify_reply())

    with caplog.at_level(logging.WARNING, logger="clarion.knowledge"):
        result = ask("how?")

    assert result.should_reply is True
    assert result.debug["failed_to_load"] == [MODELS] and result.debug["loaded_source_ids"] == [INDEX]
    assert [c.source_id for c in result.citations] == [INDEX]
    assert "[1] Rebuilding the index" in system_and_user(model_endpoint.requests[2])[1]
    assert any(getattr(r, "source_id", None) == MODELS for r in caplog.records)


def test_nothing_loadable_means_no_reply(model_endpoint, kb):
    KnowledgeSource.objects.all().delete()
    model_endpoint.script(gate_reply(), select_reply(MODELS))
    result = ask("how?")
    assert result.should_reply is False and result.debug["skip_reason"] == "load: no selected source could be loaded"


def test_a_model_call_timeout_gives_no_reply_and_does_not_raise(model_endpoint, kb, ai_config, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.3
    model_endpoint.script(gate_reply().with_(delay=2.0))
    started = time.monotonic()

    result = ask("how do I connect?")

    assert time.monotonic() - started < 1.5
    assert result.should_reply is False and result.debug["result"] == "error"
    assert result.debug["error"].startswith("llm_timeout")


def test_the_end_to_end_timeout_gives_no_reply_and_does_not_raise(model_endpoint, kb, ai_config, settings):
    ai_config.request_timeout_seconds = 0.5
    ai_config.save()
    settings.LLM_TIMEOUT_SECONDS = 5.0
    before = sample("ai_requests_total", {"result": "error"})
    model_endpoint.script(gate_reply(), select_reply(MODELS).with_(delay=3.0))
    started = time.monotonic()

    result = ask("how do I connect?")

    assert time.monotonic() - started < 2.0
    assert result.should_reply is False and result.debug["error"].startswith("timeout")
    assert sample("ai_requests_total", {"result": "error"}) == before + 1


def test_transient_errors_are_retried(model_endpoint, kb, ai_config, settings):
    settings.LLM_MAX_RETRIES = 2
    model_endpoint.script(
        Reply.error(500, "boom"),
        Reply.error(429, "slow down"),
        gate_reply(),
        select_reply(MODELS),
        answer_reply("Set `LLM_BASE_URL` [1].", [1]),
        verify_reply(),
    )

    result = ask("how do I connect?")

    assert result.should_reply is True
    assert [(c["purpose"], c["attempt"], c["outcome"]) for c in result.debug["llm_calls"][:3]] == [
        ("gate", 1, "server"),
        ("gate", 2, "rate_limited"),
        ("gate", 3, "ok"),
    ]
    assert len(model_endpoint.requests) == 6


def test_retries_stop_at_max_retries(model_endpoint, kb, ai_config, settings):
    settings.LLM_MAX_RETRIES = 1
    model_endpoint.script(Reply.error(503, "down"), Reply.error(503, "down"), gate_reply())
    result = ask("how do I connect?")
    assert result.should_reply is False and result.debug["error"].startswith("llm_server")
    assert len(model_endpoint.requests) == 2


@pytest.mark.parametrize(
    "reply, kind",
    [
        (Reply.error(400, "bad request"), "llm_bad_request"),
        (Reply.error(401, "bad key"), "llm_auth"),
        (Reply.json({"verdict": "yes"}), "llm_invalid_response"),  # schema validation failure
        (Reply.text("I think this is a question."), "llm_invalid_response"),  # not JSON at all
    ],
)
def test_invalid_requests_and_schema_failures_are_not_retried(model_endpoint, kb, ai_config, settings, reply, kind):
    settings.LLM_MAX_RETRIES = 3
    model_endpoint.script(reply, gate_reply())

    result = ask("how do I connect?")

    assert result.should_reply is False and result.debug["error"].startswith(kind)
    assert len(model_endpoint.requests) == 1


def test_a_large_index_is_prefiltered_by_ranking(model_endpoint, tmp_path, ai_config, settings):
    files = {f"topic{i}.md": f"# Topic {i}\n\nThis page is about gardening tip number {i}.\n" for i in range(6)}
    files["proxy.md"] = "# Proxy setup\n\nConfigure the proxy with the PROXY_URL variable.\n"
    files["tls.md"] = "# TLS behind a proxy\n\nTerminate TLS at the proxy and set CSRF_TRUSTED_ORIGINS.\n"
    build_kb(tmp_path / "kb", files)
    settings.KNOWLEDGE_PREFILTER_THRESHOLD = 5
    settings.KNOWLEDGE_PREFILTER_CANDIDATES = 2
    model_endpoint.script(
        gate_reply(rewrite="proxy configuration"), select_reply("kb/proxy.md"), answer_reply("Set PROXY_URL [1].", [1]), verify_reply()
    )

    result = ask("how do I configure the proxy?")

    _, user = system_and_user(model_endpoint.requests[1])
    assert "Index (2 sources):" in user
    assert "kb/proxy.md — " in user and "kb/tls.md — " in user and "gardening" not in user and "topic" not in user
    assert result.should_reply is True and result.debug["offered_count"] == 2 and result.debug["index_sources"] == 8


def test_the_seed_log_fields_and_metrics_are_recorded(model_endpoint, kb, caplog):
    answered = sample("ai_requests_total", {"result": "answered"})
    selected_count = sample("ai_selected_sources_count")
    llm_calls = sample("llm_call_seconds_count", {"purpose": "gate", "outcome": "ok"})
    model_endpoint.script(gate_reply(reason="About models."), select_reply(MODELS), answer_reply("Set it [1].", [1]), verify_reply())

    with caplog.at_level(logging.INFO, logger="clarion.knowledge"):
        ask("how do I connect?", request_context={"platform": "discord", "channel_id": "c1", "thread_id": "t1", "message_id": "m1"})

    (record,) = [r for r in caplog.records if r.name == "clarion.knowledge" and r.getMessage().startswith("kb answer")]
    fields = record.kb
    assert {k: fields[k] for k in ("platform", "channel_id", "thread_id", "message_id")} == {
        "platform": "discord", "channel_id": "c1", "thread_id": "t1", "message_id": "m1",
    }  # fmt: skip
    assert fields["gate.is_question"] is True and fields["gate.is_answerable"] is True and fields["gate.reason"] == "About models."
    assert fields["selection.selected_sources_count"] == 1 and fields["loading.loaded_sources_count"] == 1
    assert fields["verification.is_good_enough"] is True and fields["verification.issues_count"] == 0
    assert {
        "latency_ms.gate",
        "latency_ms.select",
        "latency_ms.load",
        "latency_ms.generate",
        "latency_ms.verify",
        "latency_ms.total",
    } <= set(fields)
    assert fields["llm.calls"] == 4 and fields["llm.seconds"] > 0
    assert "platform=discord" in record.getMessage() and "result=answered" in record.getMessage()
    assert sample("ai_requests_total", {"result": "answered"}) == answered + 1
    assert sample("ai_selected_sources_count") == selected_count + 1
    assert sample("llm_call_seconds_count", {"purpose": "gate", "outcome": "ok"}) == llm_calls + 1


def test_the_model_summarises_sources_for_the_index(model_endpoint, tmp_path, ai_config):
    from knowledge import services

    model_endpoint.script(Reply.text("**Summary:** Explains `LLM_BASE_URL` and LLM_MODEL; read it to connect a model.\n"))

    write_sources(tmp_path / "kb", {"models.md": FILES["models.md"]})

    report = services.rebuild_kb_index(source_dirs=[tmp_path / "kb"], source_urls=[])

    assert report.summarised == 1 and report.ok
    row = KnowledgeSource.objects.get(source_id="kb/models.md")
    assert row.summary == "Explains LLM_BASE_URL and LLM_MODEL; read it to connect a model."
    (request,) = model_endpoint.requests
    assert request["messages"][0]["content"] == ai_config.summarization_prompt
    assert request["messages"][1]["content"].startswith("Source id: kb/models.md\n\n# Connecting a model")
    assert "response_format" not in request


def test_a_summary_failure_raises_to_the_caller(model_endpoint, ai_config):
    from asgiref.sync import async_to_sync

    from knowledge.services import summarize_for_kb_index
    from llm import LLMError

    model_endpoint.script(Reply.error(500, "boom"))
    with pytest.raises(LLMError):
        async_to_sync(summarize_for_kb_index)(source_id="a.md", text="# A\n\nText.", timeout_seconds=2.0)
    model_endpoint.script(Reply.text("   "))
    with pytest.raises(Exception, match="empty summary"):
        async_to_sync(summarize_for_kb_index)(source_id="a.md", text="# A\n\nText.", timeout_seconds=2.0)


def test_the_result_is_json_for_adapters(model_endpoint, kb):
    model_endpoint.script(gate_reply(), select_reply(MODELS), answer_reply("Set it [1].", [1]), verify_reply())
    payload = json.loads(ask("how?").model_dump_json())
    assert set(payload) == {"should_reply", "reply_text", "citations", "closest_pages", "debug"}
    assert set(payload["citations"][0]) == {"n", "source_id", "title", "url"}


def test_the_selection_prompt_receives_titles_from_the_top_level_heading_outside_code(model_endpoint, tmp_path, ai_config):
    build_kb(tmp_path / "kb", {
        "config.md": "Configuration comes from the environment.\n\n```python\n# Config will be read from .env\nconfig = Config('.env')\n```\n\n## Secrets\n\nSecrets stay out of tracebacks.\n",
        "proxies.md": "<p align=\"center\"><img src=\"logo.png\"></p>\n\n```bash\n# install it\npip install thing\n```\n\n# Proxies\n\n!!! note \"Environment\"\n    HTTPS_PROXY is read from the environment.\n",
    })  # fmt: skip
    model_endpoint.script(gate_reply(rewrite="proxy settings"), select_reply("kb/proxies.md"), answer_reply("", answered=False))

    ask("Which proxy settings are read from the environment?")

    _, user = system_and_user(model_endpoint.requests[1])
    assert "kb/proxies.md — Proxies: Summary of kb/proxies.md." in user
    assert "kb/config.md — Config: Summary of kb/config.md." in user  # no H1 outside code: the file name
    assert "install it" not in user and "Config will be read" not in user and "<p" not in user
    # The answer prompt shows the same title, and the admonition body as prose.
    _, user = system_and_user(model_endpoint.requests[2])
    assert "[1] Proxies (kb/proxies.md)" in user
