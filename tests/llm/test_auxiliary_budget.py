"""Auxiliary calls (clarification, question detection, option guessing) have a short budget of
their own: with a hung model they give up within it and the turn goes on without them ("no
clarification", offline detection, offline ranking), saying so in a log line."""

from __future__ import annotations

import logging
import time

import pytest

from llm import auxiliary_budget, client_from_settings
from questions import clarification, detector, guesser
from tests.fake_openai import FakeOpenAI, Reply

OPTIONS = [{"label": "Atlas"}, {"label": "Harbor"}]


@pytest.fixture
def hung_model(settings, fake_openai: FakeOpenAI) -> FakeOpenAI:
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake_openai.base_url, "sk-test", "fake"
    # The main calls' budget is long: the auxiliary calls must not use it.
    settings.LLM_TIMEOUT_SECONDS = 60
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_AUX_TIMEOUT_SECONDS = 3
    settings.LLM_AUX_MAX_RETRIES = 1
    fake_openai.default = Reply.hang()
    return fake_openai


def test_the_auxiliary_budget_comes_from_its_own_settings(settings) -> None:
    settings.LLM_AUX_TIMEOUT_SECONDS = 4
    settings.LLM_AUX_MAX_RETRIES = 5  # capped: at most one retry
    budget = auxiliary_budget()
    assert (budget.first_token_seconds, budget.total_seconds, budget.max_retries) == (4, 4, 1)
    settings.LLM_AUX_MAX_RETRIES = 0
    assert auxiliary_budget().max_retries == 0


async def test_clarification_gives_up_within_its_budget(hung_model: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="clarion.questions"):
        analysis = await clarification.analyze(
            client=client_from_settings(), request="clean up my tasks", context="", projects=[], threshold=0.7
        )
    elapsed = time.monotonic() - started

    assert analysis.ambiguity_type == "clear" and analysis.questions == []  # no clarification
    assert 2.9 <= elapsed < 7  # its own 3 s, not the 60 s main budget
    assert len(hung_model.requests) == 1  # the one retry would not fit in the 3 s
    (record,) = [r for r in caplog.records if getattr(r, "aux_call", None) == "clarification"]
    assert record.outcome == "timeout" and "no clarification" in record.getMessage()


async def test_detector_gives_up_within_its_budget(hung_model: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="clarion.questions"):
        found = await detector.detect(client=client_from_settings(), reply="Done. Should I archive the old ones too?")
    assert time.monotonic() - started < 7
    assert [q.options for q in found] == [["Yes", "No"]]  # the offline rules decided
    assert any(getattr(r, "aux_call", None) == "detector" and r.outcome == "timeout" for r in caplog.records)


async def test_guesser_gives_up_within_its_budget(hung_model: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="clarion.questions"):
        ranking = await guesser.rank_options(
            client=client_from_settings(), question="Which project?", options=OPTIONS, context="harbor app"
        )
    assert time.monotonic() - started < 7
    assert ranking[0]["index"] == 1  # the offline ranking
    assert any(getattr(r, "aux_call", None) == "guesser" and r.outcome == "timeout" for r in caplog.records)


async def test_a_fast_failure_gets_its_one_retry_inside_the_budget(hung_model: FakeOpenAI) -> None:
    hung_model.script(
        Reply.error(503, "warming up"), Reply.json({"ranking": [{"index": 0, "confidence": 0.9, "reasoning": "Named first"}]})
    )
    ranking = await guesser.rank_options(client=client_from_settings(), question="Which project?", options=OPTIONS, context="")
    assert ranking[0] == {"index": 0, "confidence": 0.9, "reasoning": "Named first"}
    assert len(hung_model.requests) == 2
