"""Fixtures for the knowledge base: offline by default, a fake model endpoint on request, and
small knowledge bases built through the real rebuild (with a scripted summariser)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.test import Client
from prometheus_client import REGISTRY

from knowledge import selectors, services
from tests.fake_openai import Reply


@pytest.fixture(autouse=True)
def _knowledge_settings(settings):
    # Offline unless a test asks for the fake endpoint; no back-off sleeps between retries.
    settings.LLM_BASE_URL = ""
    settings.LLM_API_KEY = ""
    settings.KNOWLEDGE_RETRY_BACKOFF_SECONDS = 0.0
    settings.KNOWLEDGE_SOURCE_URLS = []


@pytest.fixture
def model_endpoint(model_endpoint, settings):
    """The shared fake-model fixture, with the pipeline's per-call timeout its tests expect."""
    settings.LLM_TIMEOUT_SECONDS = 2.0
    return model_endpoint


@pytest.fixture
def ai_config(db, settings):
    """The AIConfig row with test-friendly limits; tests adjust and save() it further. The
    per-call timeout and retries are the environment's (settings), shared with the chat."""
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_TIMEOUT_SECONDS = 2.0
    config = selectors.get_ai_config()
    config.request_timeout_seconds = 10.0
    config.save()
    return config


def summary_for(source_id: str) -> str:
    return f"Summary of {source_id}."


async def scripted_summarizer(*, source_id: str, text: str, timeout_seconds: float) -> str:
    return summary_for(source_id)


def write_sources(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return folder


def build_kb(folder: Path, files: dict[str, str] | None = None, **kwargs) -> services.RebuildReport:
    """Write `files` into `folder` (if given) and rebuild the index from that folder only."""
    if files:
        write_sources(folder, files)
    kwargs.setdefault("summarizer", scripted_summarizer)
    return services.rebuild_kb_index(source_dirs=[folder], source_urls=[], **kwargs)


@pytest.fixture
def user_guide(db):
    """The shipped docs/user-guide, indexed by the offline engine, as `manage.py up` does."""
    return services.rebuild_kb_index()


def ask(question: str, **kwargs):
    """The public entry point driven from a sync test. The pipeline's ORM hops
    (database_sync_to_async) close connections held in a transaction, so tests that ask need
    `django_db(transaction=True)`, as the chat's do."""
    return async_to_sync(services.answer_from_knowledge_base)(question=question, **kwargs)


def sample(name: str, labels: dict | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


# ---- scripted model decisions (each node's structured output)


def gate_reply(*, question: bool = True, answerable: bool = True, rewrite: str | None = None, reason: str = "scripted") -> Reply:
    return Reply.json({"is_question": question, "is_answerable": answerable, "rewrite_query": rewrite, "reason": reason})


def select_reply(*source_ids: str) -> Reply:
    return Reply.json({"selected_source_ids": list(source_ids)})


def answer_reply(text: str, citations: list[int] | None = None, answered: bool = True) -> Reply:
    return Reply.json({"answer": text, "citations": citations or [], "answered_from_sources": answered})


def verify_reply(ok: bool = True, issues: list[str] | None = None) -> Reply:
    return Reply.json({"is_good_enough": ok, "issues": issues or [], "suggested_fix": None if ok else "Fix it."})


def wait_until(condition, *, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw-xxxxxxxx")


@pytest.fixture
def admin_client(root):
    client = Client()
    client.force_login(root)
    return client
