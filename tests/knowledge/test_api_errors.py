"""The adapter API's errors: every one JSON of one shape, the body limit, the token only in the
Authorization header (never read from, nor logged with, the URL), and failed tokens throttled."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import pytest
from axes.models import AccessAttempt
from channels.db import database_sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.test import AsyncClient, Client
from django.urls import path

from knowledge import services
from project.urls import urlpatterns as app_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/reply"
BODY = {
    "conversation": {"messages": [{"role": "user", "text": "How do I connect my own model?"}]},
    "context": {"platform": "discord", "channel_id": "c", "message_id": "m"},
}


@login_not_required
def forbidden(request):
    raise PermissionDenied


@login_not_required
def crashes(request):
    raise RuntimeError("boom")


# Clarion's URLs plus two views that fail the way any view under /api/ might.
urlpatterns = [
    *app_urlpatterns,
    path("api/v1/__forbidden", forbidden),
    path("api/v1/__crash", crashes),
]


@pytest.fixture
def token(db):
    row, raw = services.create_adapter_token(name="discord-bot")
    return {"row": row, "raw": raw}


def auth(raw: str) -> dict:
    return {"Authorization": f"Bearer {raw}"}


def assert_json_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and "field" in error
    assert b"<html" not in response.content.lower()
    return error


def nothing_written(token) -> bool:
    token["row"].refresh_from_db()
    return token["row"].last_used_at is None


def test_an_unknown_endpoint_is_a_json_404():
    assert_json_error(Client().post("/api/v1/nope", data="{}", content_type="application/json"), 404, "not_found")
    assert_json_error(Client().get("/api/v1/reply/"), 404, "not_found")


def test_a_wrong_method_is_a_json_405_with_allow(token):
    response = Client().put(URL, data="{}", content_type="application/json", headers=auth(token["raw"]))
    assert_json_error(response, 405, "method_not_allowed")
    assert response["Allow"] == "POST"


def test_a_body_over_the_limit_is_a_json_413_and_writes_nothing(token, settings):
    body = json.dumps({**BODY, "padding": "x" * (3 * 1024 * 1024)})
    response = Client().post(URL, data=body, content_type="application/json", headers=auth(token["raw"]))
    error = assert_json_error(response, 413, "body_too_large")
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in error["message"]
    assert nothing_written(token)


def test_deeply_nested_json_is_a_json_400_and_writes_nothing(token):
    content = "[" * 20_000 + "]" * 20_000  # 40 KB
    response = Client().post(URL, data=content, content_type="application/json", headers=auth(token["raw"]))
    error = assert_json_error(response, 400, "bad_request")
    assert "nested too deeply" in error["message"] and error["field"] == "(body)"
    assert nothing_written(token)
    nested_object = '{"conversation":' * 20_000 + "1" + "}" * 20_000
    response = Client().post(URL, data=nested_object, content_type="application/json", headers=auth(token["raw"]))
    assert_json_error(response, 400, "bad_request")
    assert nothing_written(token)


def test_a_missing_token_is_a_json_401():
    response = Client().post(URL, data=json.dumps(BODY), content_type="application/json")
    assert_json_error(response, 401, "unauthorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_403_and_500_under_api_are_json_too(settings):
    settings.ROOT_URLCONF = __name__
    settings.DEBUG_PROPAGATE_EXCEPTIONS = False
    assert_json_error(Client().post("/api/v1/__forbidden"), 403, "forbidden")
    error = assert_json_error(Client(raise_request_exception=False).post("/api/v1/__crash"), 500, "server_error")
    assert "boom" not in error["message"]  # the details stay in the log


def test_pages_outside_the_api_keep_their_html_errors():
    response = Client().get("/kb/sources/999999/")
    assert response.status_code in (302, 404) and response.get("Content-Type", "").startswith("text/html")


@pytest.mark.parametrize("query", ["token={raw}", "access_token={raw}", "api_key={raw}", "x=1"])
def test_a_token_in_the_query_string_is_refused_and_never_read(token, query):
    raw = token["raw"]
    response = Client().post(f"{URL}?{query.format(raw=raw)}", data=json.dumps(BODY), content_type="application/json", headers=auth(raw))
    error = assert_json_error(response, 400, "bad_request")
    assert "Authorization: Bearer" in error["message"] and error["field"] == "(query)"
    assert nothing_written(token)
    assert not AccessAttempt.objects.exists()


@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_no_log_line_carries_a_token_sent_in_the_url(token, settings, log_format):
    """Django logs every 4xx/5xx with the request, whose repr is the whole URL."""
    stream = io.StringIO()
    config = {**settings.LOGGING, "handlers": {"console": {**settings.LOGGING["handlers"]["console"], "formatter": log_format}}}
    config["handlers"]["console"]["stream"] = stream
    logging.config.dictConfig(config)
    try:
        raw = token["raw"]
        Client().post(f"{URL}?token={raw}", data=json.dumps(BODY), content_type="application/json")
        Client().get(f"/api/v1/nope?access_token={raw}")
        Client().get(f"{URL}?token={raw}")
    finally:
        logging.config.dictConfig(settings.LOGGING)
    log = stream.getvalue()
    assert "/api/v1/reply" in log and "/api/v1/nope" in log  # the lines are there, without the query
    assert raw not in log and raw[:12] not in log and "token=" not in log


def test_repeated_bad_tokens_lock_out_the_address_even_for_a_good_token(token, settings):
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    statuses = [
        client.post(URL, data=json.dumps(BODY), content_type="application/json", headers=auth(f"clk_wrong{i}")).status_code
        for i in range(3)
    ]
    assert statuses == [401, 401, 429]

    response = client.post(URL, data=json.dumps(BODY), content_type="application/json", headers=auth(token["raw"]))
    error = assert_json_error(response, 429, "too_many_attempts")
    assert int(response["Retry-After"]) == 15 * 60 and "try again" in error["message"].lower()
    assert nothing_written(token)
    # No token, right or wrong, was recorded with the failures.
    recorded = " ".join(f"{a.get_data} {a.post_data} {a.username}" for a in AccessAttempt.objects.all())
    assert "clk_" not in recorded

    # Another address is not affected.
    other = Client(REMOTE_ADDR="10.0.0.9").post(URL, data=json.dumps(BODY), content_type="application/json", headers=auth(token["raw"]))
    assert other.status_code == 200


async def test_the_throttle_works_through_the_asgi_stack(token, settings):
    settings.AXES_FAILURE_LIMIT = 2
    client = AsyncClient()
    for expected in (401, 429):
        response = await client.post(URL, data=json.dumps(BODY), content_type="application/json", headers=auth("clk_wrong"))
        assert response.status_code == expected
    response = await client.post(URL, data=json.dumps(BODY), content_type="application/json", headers=auth(token["raw"]))
    assert_json_error(response, 429, "too_many_attempts")
    assert await database_sync_to_async(nothing_written)(token)  # and releases asgiref's thread's connection
