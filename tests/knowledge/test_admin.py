"""Admins tune the AI without code and see the knowledge-base index."""

from __future__ import annotations

import pytest

from knowledge import prompts, selectors
from knowledge.models import AdapterToken, AIConfig
from tests.knowledge.conftest import build_kb

pytestmark = pytest.mark.django_db


def test_ai_config_is_one_row_with_written_out_defaults(db):
    config = selectors.get_ai_config()
    assert selectors.get_ai_config().pk == config.pk and AIConfig.objects.count() == 1
    assert config.gating_prompt == prompts.GATING_PROMPT and len(config.answer_prompt) > 400
    assert (config.question_timeout_low_seconds, config.question_timeout_medium_seconds, config.question_timeout_high_seconds) == (
        8,
        15,
        25,
    )
    assert config.ask_timeout_seconds == 300 and config.clarification_threshold == 0.7
    assert config.max_sources == 4 and config.max_answer_chars == 1500 and config.require_citations is True


def test_the_ai_config_list_opens_the_single_row_and_saves_edits(admin_client):
    response = admin_client.get("/admin/knowledge/aiconfig/")
    config = selectors.get_ai_config()
    assert response.status_code == 302 and response["Location"] == f"/admin/knowledge/aiconfig/{config.pk}/change/"
    page = admin_client.get(response["Location"])
    assert page.status_code == 200 and "Answer scope prompt" in page.content.decode()

    form = {f: getattr(config, f) for f in [f.name for f in AIConfig._meta.fields if f.editable and f.name not in ("id", "singleton")]}
    form.update(answer_scope_prompt="Only questions about gardening.", max_sources=2, require_citations="")
    response = admin_client.post(f"/admin/knowledge/aiconfig/{config.pk}/change/", form)
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.answer_scope_prompt == "Only questions about gardening." and config.max_sources == 2 and config.require_citations is False

    form.update(request_timeout_seconds=-1, clarification_threshold=3)
    response = admin_client.post(f"/admin/knowledge/aiconfig/{config.pk}/change/", form)
    assert response.status_code == 200 and "Ensure this value is greater than or equal to 0.1" in response.content.decode()
    assert admin_client.get("/admin/knowledge/aiconfig/add/").status_code == 403


def test_the_index_page_shows_the_artifact_its_build_and_failed_sources(admin_client, tmp_path):
    async def summarizer(*, source_id, text, timeout_seconds):
        if source_id == "kb/b.md":
            raise RuntimeError("rate limited for good")
        return f"About {source_id}."

    build_kb(tmp_path / "kb", {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"}, summarizer=summarizer)

    html = admin_client.get("/admin/knowledge/knowledgeindex/").content.decode()

    index = selectors.current_index()
    assert "kb/a.md — About kb/a.md." in html and "<strong>1</strong> source listed" in html
    assert index.built_at.strftime("%Y-%m-%d %H:%M") in html
    assert "Sources whose summary failed" in html and "kb/b.md" in html and "rate limited for good" in html
    assert "Rebuild index" in html


def test_the_sources_list_names_each_page_and_its_view_shows_summary_and_hash(admin_client, tmp_path):
    from knowledge.models import KnowledgeSource

    build_kb(tmp_path / "kb", {"a.md": "# A\n\nAlpha.\n"})
    row = KnowledgeSource.objects.get(source_id="kb/a.md")
    listing = admin_client.get("/admin/knowledge/knowledgesource/").content.decode()
    assert row.title in listing and "kb/a.md" in listing and "configuration" in listing
    assert "Summary of kb/a.md." not in listing and row.content_hash not in listing  # one short line a page
    page = admin_client.get(f"/admin/knowledge/knowledgesource/{row.pk}/change/")
    assert page.status_code == 200
    assert "Summary of kb/a.md." in page.content.decode() and row.content_hash in page.content.decode()


def test_adding_an_adapter_token_in_the_admin_shows_it_once(admin_client):
    response = admin_client.post("/admin/knowledge/adaptertoken/add/", {"name": "matrix-bot"}, follow=True)
    html = response.content.decode()
    token = AdapterToken.objects.get(name="matrix-bot")
    assert "copy it now" in html and f"<code>{token.prefix}" in html
    raw = html.split(f"<code>{token.prefix}", 1)[1].split("</code>", 1)[0]
    assert selectors.active_adapter_token(raw_token=token.prefix + raw) == token
    assert token.prefix + raw not in admin_client.get(f"/admin/knowledge/adaptertoken/{token.pk}/change/").content.decode()
