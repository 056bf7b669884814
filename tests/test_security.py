"""Security headers, TLS settings and `check --deploy`; no inline script anywhere in the templates."""

from __future__ import annotations

import logging
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.django_db


def csp(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


@pytest.fixture
def staff_client(db):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-xxxxxxxx")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url", ["/login/", "/chat/", "/admin/", "/admin/knowledge/knowledgeindex/", "/admin/login/"])
def test_every_page_carries_a_policy_that_allows_only_the_apps_own_scripts(staff_client, url):
    response = staff_client.get(url, follow=True)
    assert response.status_code == 200
    policy = csp(response)
    assert policy["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no hosts
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert policy["default-src"] == ["'self'"] and policy["connect-src"] == ["'self'"]
    assert response["X-Content-Type-Options"] == "nosniff" and response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"


@pytest.mark.django_db(transaction=True)  # async views hop threads: the data must be committed
def test_async_views_and_errors_carry_it_too(staff_client):
    # A question id that isn't there: a 404 from an async view still has the header.
    response = staff_client.post("/chat/questions/00000000-0000-0000-0000-000000000000/answer/", {})
    assert response.status_code == 404 and "script-src 'self'" in response["Content-Security-Policy"]


def test_htmx_is_configured_for_the_policy(staff_client):
    html = staff_client.get("/chat/", follow=True).content.decode()
    config = re.search(r"<meta name=\"htmx-config\" content='([^']+)'>", html).group(1)
    assert '"allowEval": false' in config and '"includeIndicatorStyles": false' in config and '"allowScriptTags": false' in config


# Everything the browser runs or styles comes from files: no inline <script>, no event-handler
# attributes, no javascript: URLs, no style attributes (the policy would block them all).
INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "inline <script>"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "inline event handler"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
    (re.compile(r"\sstyle\s*=", re.I), "style attribute"),
    (re.compile(r"\shx-on[:-]", re.I), "hx-on handler (evaluated code)"),
    (re.compile(r"""\shx-vals\s*=\s*['"]\s*js:""", re.I), "hx-vals js: (evaluated code)"),
]


def _markup_files():
    yield from (ROOT / "templates").rglob("*.html")
    for app in ("chat", "questions", "knowledge", "workspace", "project", "llm"):
        yield from (ROOT / app).rglob("*.py")


def test_no_inline_script_or_style_in_the_markup():
    offenders = []
    for path in sorted(_markup_files()):
        text = path.read_text()
        if path.suffix == ".py":
            # Python files: only the HTML they build (format_html / mark_safe string literals).
            text = "\n".join(re.findall(r"(?:format_html|mark_safe)\(\s*(?:f?'[^']*'|f?\"[^\"]*\")", text))
        offenders += [f"{path.relative_to(ROOT)}: {what}" for pattern, what in INLINE if pattern.search(text)]
    assert not offenders


def test_the_inline_markup_guard_catches_what_it_should():
    bad = [
        "<script>alert(1)</script>",
        '<a onclick="x()">',
        '<a href="javascript:x()">',
        '<p style="color:red">',
        '<div hx-on:click="x()">',
    ]
    for sample in bad:
        assert any(p.search(sample) for p, _ in INLINE), sample
    assert not any(p.search('<script src="/static/js/clarion.js" defer></script>') for p, _ in INLINE)


# --- TLS deployments -----------------------------------------------------------------------------


def _check_deploy(**env: str) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_NAME": connection.settings_dict["NAME"],
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "clarion.example.com",
        **env,
    }
    for name in ("SECURE_TLS", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_check_deploy_is_clean_in_production_settings_over_tls():
    proc = _check_deploy(SECURE_TLS="true", SECURE_PROXY_SSL_HEADER="true")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues" in proc.stdout


def test_check_deploy_names_what_is_missing_without_tls():
    proc = _check_deploy()
    assert proc.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in proc.stderr


def test_over_tls_cookies_are_secure_hsts_is_sent_and_http_is_redirected(settings, staff_client):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True

    plain = staff_client.get("/login/")
    assert plain.status_code == 301 and plain["Location"] == "https://testserver/login/"

    client = Client()
    response = client.get("/login/", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200 and response["Strict-Transport-Security"] == "max-age=31536000"
    assert response.cookies["csrftoken"]["secure"] is True
    login = client.post(
        "/login/", {"username": "root", "password": "pw-xxxxxxxx", "csrfmiddlewaretoken": response.cookies["csrftoken"].value},
        headers={"X-Forwarded-Proto": "https"},
    )  # fmt: skip
    assert login.status_code == 302 and login.cookies["sessionid"]["secure"] is True and login.cookies["sessionid"]["httponly"] is True


@pytest.mark.parametrize(
    "path", ["/static/../manage.py", "/static/../../etc/passwd", "/static/%2e%2e/manage.py", "/static/css/../../manage.py"]
)
async def test_a_static_path_that_climbs_out_is_a_plain_404_without_a_traceback(path, caplog):
    from project.asgi import application
    from tests.communicators import HttpCommunicator

    response = await HttpCommunicator(application, "GET", path).get_response(timeout=10)
    assert response["status"] == 404
    assert b"DJANGO_SETTINGS_MODULE" not in response["body"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
