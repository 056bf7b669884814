"""The source page a citation opens, and /metrics."""

from __future__ import annotations

import pytest
from django.test import Client

from knowledge.models import KnowledgeSource
from tests.knowledge.conftest import build_kb

pytestmark = pytest.mark.django_db


@pytest.fixture
def source(tmp_path):
    build_kb(
        tmp_path / "kb",
        {
            "page.md": "# Proxy setup\n\nPut **Clarion** behind a proxy.\n\n<script>alert('x')</script>\n\n"
            "[click](javascript:alert(1)) and [docs](https://example.com/docs)\n\n```\ncode block\n```\n"
        },
    )
    return KnowledgeSource.objects.get(source_id="kb/page.md")


def test_the_source_page_requires_a_login(source):
    response = Client().get(f"/kb/sources/{source.pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_source_page_renders_sanitized_markdown(source, alice):
    client = Client()
    client.force_login(alice)

    response = client.get(f"/kb/sources/{source.pk}/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1" in html and "Proxy setup" in html and "<strong>Clarion</strong>" in html
    assert "<code>kb/page.md</code>" in html and "<pre><code>code block" in html
    assert "<script>alert" not in html and "javascript:" not in html
    assert 'href="https://example.com/docs"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert html.count("Proxy setup</h1>") == 1  # the leading heading is not repeated under the title


def test_an_unknown_source_is_404(alice):
    client = Client()
    client.force_login(alice)
    assert client.get("/kb/sources/999999/").status_code == 404


def test_a_url_source_links_to_the_original(alice):
    row = KnowledgeSource.objects.create(
        source_id="https://docs.example.com/guide",
        title="Guide",
        kind="text",
        content="Plain <b>text</b>.\n\nSecond paragraph.",
        content_hash="x",
    )
    assert row.url == "https://docs.example.com/guide"
    client = Client()
    client.force_login(alice)
    html = client.get(f"/kb/sources/{row.pk}/").content.decode()
    assert (
        'href="https://docs.example.com/guide"' in html and "Plain &lt;b&gt;text&lt;/b&gt;." in html and "<p>Second paragraph.</p>" in html
    )


def test_metrics_are_forbidden_to_anonymous_and_non_staff_users(alice):
    assert Client().get("/metrics").status_code == 403
    client = Client()
    client.force_login(alice)
    assert client.get("/metrics").status_code == 403


def test_metrics_for_staff_in_prometheus_format(alice):
    alice.is_staff = True
    alice.save()
    client = Client()
    client.force_login(alice)

    response = client.get("/metrics")

    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain; version=")
    body = response.content.decode()
    for name in ("ai_requests_total", "ai_gate_total", "ai_verification_total", "ai_selected_sources_bucket", "llm_call_seconds"):
        assert name in body
    assert 'ai_requests_total{result="answered"}' in body


def test_metrics_with_the_metrics_token(settings):
    settings.METRICS_TOKEN = "scrape-me"
    assert Client().get("/metrics", headers={"Authorization": "Bearer scrape-me"}).status_code == 200
    assert Client().get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 403
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics", headers={"Authorization": "Bearer "}).status_code == 403


def test_links_between_indexed_documents_open_their_source_pages(user_guide, alice):
    from knowledge.models import KnowledgeSource as Source

    start = Source.objects.get(source_id="docs/user-guide/getting-started.md")
    target = Source.objects.get(source_id="docs/user-guide/connecting-your-own-model.md")
    client = Client()
    client.force_login(alice)
    html = client.get(f"/kb/sources/{start.pk}/").content.decode()
    assert f'href="/kb/sources/{target.pk}/"' in html and 'href="connecting-your-own-model.md"' not in html
