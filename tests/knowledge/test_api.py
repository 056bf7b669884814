"""The adapter API: POST /api/v1/reply with a bearer token, Conversation + RequestContext in,
AIResult out."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from knowledge import services
from knowledge.models import AdapterToken, KnowledgeIndex, KnowledgeSource, SummaryDraft

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/reply"
BODY = {
    "conversation": {
        "messages": [{"role": "user", "text": "How do I connect my own model?", "timestamp": "2026-01-02T03:04:05Z", "author_id": "42"}]
    },
    "context": {"platform": "discord", "guild_id": "g", "channel_id": "c", "thread_id": None, "message_id": "m"},
}


@pytest.fixture
def token(db):
    row, raw = services.create_adapter_token(name="discord-bot")
    return {"row": row, "raw": raw}


def post(client: Client, body, *, raw_token: str | None = None, content: str | None = None):
    headers = {"Authorization": f"Bearer {raw_token}"} if raw_token else {}
    data = content if content is not None else json.dumps(body)
    return client.post(URL, data=data, content_type="application/json", headers=headers)


def test_a_valid_request_gets_the_ai_result(user_guide, token):
    client = Client(enforce_csrf_checks=True)  # token-authenticated: no session, no CSRF token
    response = post(client, BODY, raw_token=token["raw"])

    assert response.status_code == 200
    payload = response.json()
    assert payload["should_reply"] is True and "[1]" in payload["reply_text"]
    source = KnowledgeSource.objects.get(source_id="docs/user-guide/connecting-your-own-model.md")
    citation = payload["citations"][0]
    assert {k: citation[k] for k in ("n", "source_id", "title")} == {"n": 1, "source_id": source.source_id, "title": source.title}
    # An absolute, signed link (the adapter's users have no session), here on the host that was called.
    assert citation["url"].startswith("http://testserver/kb/shared/")
    token["row"].refresh_from_db()
    assert token["row"].last_used_at is not None


def test_a_question_the_docs_do_not_cover_gets_should_reply_false(user_guide, token):
    body = {**BODY, "conversation": {"messages": [{"role": "user", "text": "thanks, bye"}]}}
    payload = post(Client(), body, raw_token=token["raw"]).json()
    assert payload["should_reply"] is False and payload["reply_text"] is None and payload["citations"] == []
    assert set(payload) == {"should_reply", "reply_text", "citations", "debug"}  # the adapter contract's shape


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer wrong-token", "Basic abc", "Token clk_x"])
def test_a_missing_or_invalid_token_is_401(token, header):
    headers = {"Authorization": header} if header else {}
    response = Client().post(URL, data=json.dumps(BODY), content_type="application/json", headers=headers)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "unauthorized" and "token" in response.json()["error"]["message"]


def test_a_revoked_token_is_401(token):
    AdapterToken.objects.filter(pk=token["row"].pk).update(is_active=False)
    assert post(Client(), BODY, raw_token=token["raw"]).status_code == 401


@pytest.mark.parametrize(
    "content, field, message",
    [
        ("{not json", "(body)", "not valid JSON"),
        ("[1, 2]", "(body)", "valid dictionary"),
        (json.dumps({"conversation": BODY["conversation"]}), "context", "Field required"),
        (json.dumps({**BODY, "conversation": {"messages": []}}), "conversation.messages", "at least 1 item"),
        (
            json.dumps({**BODY, "conversation": {"messages": [{"role": "bot", "text": "hi"}]}}),
            "conversation.messages.0.role",
            "'user' or 'assistant'",
        ),
        (
            json.dumps({**BODY, "conversation": {"messages": [{"role": "user", "text": "   "}]}}),
            "conversation.messages.0.text",
            "at least 1 character",
        ),
        (json.dumps({**BODY, "conversation": {"messages": [{"role": "assistant", "text": "hi"}]}}), "conversation.messages", "role 'user'"),
        (json.dumps({**BODY, "context": {"channel_id": "c"}}), "context.platform", "Field required"),
        (json.dumps({**BODY, "context": {**BODY["context"], "user_token": "x"}}), "context.user_token", "Extra inputs"),
        (
            json.dumps({**BODY, "conversation": {"messages": [{"role": "user", "text": "x" * 9000}]}}),
            "conversation.messages.0.text",
            "at most 8000",
        ),
    ],
)
def test_bad_json_is_a_400_naming_the_field_and_writes_nothing(user_guide, token, content, field, message):
    counts = (KnowledgeSource.objects.count(), KnowledgeIndex.objects.count(), SummaryDraft.objects.count())

    response = post(Client(), None, raw_token=token["raw"], content=content)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "bad_request" and error["field"] == field
    assert message in error["message"] and error["message"].startswith(field if field != "(body)" else "")
    token["row"].refresh_from_db()
    assert token["row"].last_used_at is None
    assert (KnowledgeSource.objects.count(), KnowledgeIndex.objects.count(), SummaryDraft.objects.count()) == counts


def test_only_post_is_allowed(token):
    response = Client().get(URL, headers={"Authorization": f"Bearer {token['raw']}"})
    assert response.status_code == 405 and response["Allow"] == "POST"


def test_create_adapter_token_prints_a_working_token_once(user_guide):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_adapter_token", "slack-bot", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    assert raw.startswith("clk_") and len(raw) > 40 and "shown once" in err.getvalue()
    row = AdapterToken.objects.get(name="slack-bot")
    assert raw not in (row.token_hash, row.prefix) and raw.startswith(row.prefix)
    assert post(Client(), BODY, raw_token=raw).status_code == 200
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_adapter_token", "slack-bot", stdout=io.StringIO(), stderr=io.StringIO())


# ---- citation links that work without a session (signed, expiring)


def test_citation_links_use_public_base_url_and_open_the_cited_section_without_a_login(user_guide, token, settings):
    settings.PUBLIC_BASE_URL = "https://clarion.example.org/"
    body = {**BODY, "conversation": {"messages": [{"role": "user", "text": "What port does Ollama use?"}]}}
    payload = post(Client(), body, raw_token=token["raw"]).json()
    url = payload["citations"][0]["url"]
    assert url.startswith("https://clarion.example.org/kb/shared/") and url.endswith("#ollama")

    page = Client().get(url.removeprefix("https://clarion.example.org").split("#")[0])  # no session at all
    assert page.status_code == 200
    assert b'id="ollama"' in page.content and b"11434" in page.content
    # The same page by its plain id still needs a login.
    source = KnowledgeSource.objects.get(source_id=payload["citations"][0]["source_id"])
    assert Client().get(f"/kb/sources/{source.pk}/").status_code == 302


def test_expired_forged_and_foreign_links_are_refused(user_guide, settings):
    from django.core import signing

    from knowledge import links

    source = KnowledgeSource.objects.get(source_id="docs/user-guide/connecting-your-own-model.md")
    path = links.signed_source_path(pk=source.pk)
    assert Client().get(path).status_code == 200

    settings.KNOWLEDGE_LINK_MAX_AGE_SECONDS = -1  # every link is already expired
    expired = Client().get(path)
    assert expired.status_code == 403 and b"expired" in expired.content
    settings.KNOWLEDGE_LINK_MAX_AGE_SECONDS = 3600

    token = path.rstrip("/").rsplit("/", 1)[-1]
    assert Client().get(path.replace(token, token[:-2] + ("AA" if not token.endswith("AA") else "BB"))).status_code == 404
    other_salt = signing.dumps({"s": source.pk}, salt="something-else", compress=True)
    assert Client().get(f"/kb/shared/{other_salt}/").status_code == 404
    gone = links.signed_source_path(pk=source.pk + 10_000)
    assert Client().get(gone).status_code == 404
