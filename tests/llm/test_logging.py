"""Structured logs, read back from a real process configured by settings.LOGGING: LOG_FORMAT=json
gives one JSON object per line with the record's extra fields and the turn id; the plain format
shows the same fields as a key=value suffix."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from django.db import connection

from llm.logs import ContextFilter, PlainFormatter, begin_turn
from tests.e2e.conftest import ROOT
from tests.fake_openai import FakeOpenAI, Reply

# One chat turn's worth of logging: a model call, then a knowledge-base answer (offline engine),
# both inside begin_turn().
SCRIPT = """
import asyncio, django
django.setup()
from llm import ChatMessage, build_client
from llm.logs import begin_turn
from llm.offline import OfflineEngine
from knowledge.services import answer_from_knowledge_base

async def main():
    begin_turn(conversation_id="conversation-7")
    client = build_client(base_url="{base_url}", api_key="sk-log-test", model="fake-model", timeout_seconds=5, max_retries=0)
    await client.complete([ChatMessage(role="user", content="Say hi")])
    await answer_from_knowledge_base(question="How do I connect a model?", client=OfflineEngine())

asyncio.run(main())
"""


def run_logged(fake: FakeOpenAI, database: str, **env: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(base_url=fake.base_url)],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings_test", "DATABASE_NAME": database, "LOG_LEVEL": "INFO", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.strip()]


@pytest.fixture
def database(transactional_db) -> str:
    return connection.settings_dict["NAME"]


def test_json_lines_carry_the_extra_fields_and_the_turn_id(fake_openai: FakeOpenAI, database: str) -> None:
    fake_openai.script(Reply.text("hi"))
    records = [json.loads(line) for line in run_logged(fake_openai, database, LOG_FORMAT="json")]  # every line is JSON

    (call,) = [r for r in records if r["logger"] == "clarion.llm"]
    assert call["level"] == "INFO" and call["message"].startswith("llm complete ok")
    assert (call["op"], call["model"], call["attempts"], call["outcome"]) == ("complete", "fake-model", 1, "ok")
    assert call["tokens"] > 0 and "time" in call
    (answer,) = [r for r in records if r["logger"] == "clarion.knowledge" and r["message"].startswith("kb answer")]
    # The knowledge pipeline's fields: result, gate decision, sources, per-node latency.
    assert answer["result"] in ("answered", "skipped")
    assert "gate.is_answerable" in answer and "selection.selected_sources_count" in answer
    assert "loading.loaded_sources_count" in answer and "latency_ms.total" in answer
    turn_ids = {r.get("turn_id") for r in (call, answer)}
    assert len(turn_ids) == 1 and None not in turn_ids and len(turn_ids.pop()) == 12
    assert call["conversation"] == answer["conversation"] == "conversation-7"


def test_plain_lines_show_the_extra_fields_as_key_value(fake_openai: FakeOpenAI, database: str) -> None:
    fake_openai.script(Reply.text("hi"))
    lines = run_logged(fake_openai, database)  # LOG_FORMAT unset: plain

    (call,) = [line for line in lines if " clarion.llm llm complete ok" in line]
    assert " op=complete" in call and " outcome=ok" in call and " conversation=conversation-7" in call
    assert call.count("attempts=") == 1  # shown once: the message already has it
    turn_id = call.split(" turn_id=")[1].split()[0]
    (answer,) = [line for line in lines if " clarion.knowledge kb answer " in line]
    assert f" turn_id={turn_id}" in answer
    assert " kb={" not in answer  # the bundled copy of fields already shown is left out


def test_a_bad_log_format_is_refused_at_startup() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings_test", "LOG_FORMAT": "xml"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "LOG_FORMAT must be 'plain' or 'json', not 'xml'" in proc.stderr


async def test_the_turn_id_follows_tasks_the_turn_spawns() -> None:
    import asyncio
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(PlainFormatter("%(name)s %(message)s"))
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("clarion.test-turns")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:

        async def turn(n: int) -> str:
            turn_id = begin_turn(conversation_id=f"c{n}")
            await asyncio.create_task(asyncio.sleep(0))  # interleave the two turns
            await asyncio.create_task(_log_from_a_spawned_task(logger, n))
            return turn_id

        ids = await asyncio.gather(turn(1), turn(2))
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert sorted(lines) == sorted([f"clarion.test-turns background {n} turn_id={ids[n - 1]} conversation=c{n}" for n in (1, 2)])
    assert ids[0] != ids[1]


async def _log_from_a_spawned_task(logger: logging.Logger, n: int) -> None:
    logger.info("background %d", n)
