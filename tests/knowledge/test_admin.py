"""Admins tune the AI without code and see the knowledge-base index."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from knowledge import admin as knowledge_admin
from knowledge import prompts, selectors
from knowledge.models import AdapterToken, AIConfig, KnowledgeIndex
from tests.knowledge.conftest import build_kb

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(db):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-xxxxxxxx")
    client = Client()
    client.force_login(user)
    return client


def test_ai_config_is_one_row_with_written_out_defaults(db):
    config = selectors.get_ai_config()
    assert selectors.get_ai_config().pk == config.pk and AIConfig.objects.count() == 1
    assert config.gating_prompt == prompts.GATING_PROMPT and len(config.answer_prompt) > 400
    assert (config.question_timeout_low_seconds, config.question_timeout_medium_seconds, config.question_timeout_high_seconds) == (8, 15, 25)
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

    form.update(llm_timeout_seconds=-1, clarification_threshold=3)
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


def test_the_sources_list_shows_summary_and_hash(admin_client, tmp_path):
    build_kb(tmp_path / "kb", {"a.md": "# A\n\nAlpha.\n"})
    html = admin_client.get("/admin/knowledge/knowledgesource/").content.decode()
    source = selectors.load_sources(source_ids=["kb/a.md"])["kb/a.md"]
    from knowledge.models import KnowledgeSource

    row = KnowledgeSource.objects.get(source_id="kb/a.md")
    assert "Summary of kb/a.md." in html and row.content_hash[:12] in html and source.title in html
    assert admin_client.get(f"/admin/knowledge/knowledgesource/{row.pk}/change/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_rebuild_from_the_admin_runs_in_the_background(admin_client, monkeypatch, settings, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAlpha explains things.\n")
    settings.KNOWLEDGE_SOURCE_DIRS = [folder]
    threads = []
    original = knowledge_admin.services.start_rebuild_in_background
    monkeypatch.setattr(knowledge_admin.services, "start_rebuild_in_background", lambda **kw: threads.append(original(**kw)) or threads[-1])

    response = admin_client.post("/admin/knowledge/knowledgeindex/rebuild/", follow=True)

    assert "Rebuild started in the background" in response.content.decode()
    threads[0].join(timeout=30)
    index = KnowledgeIndex.objects.get(is_current=True)
    assert index.source_count == 1 and index.text.startswith("kb/a.md — A.")
    assert admin_client.get("/admin/knowledge/knowledgeindex/rebuild/").status_code == 405


def test_the_resummarise_action_forces_the_selected_sources(admin_client, monkeypatch, tmp_path):
    build_kb(tmp_path / "kb", {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"})
    from knowledge.models import KnowledgeSource

    calls = []
    monkeypatch.setattr(knowledge_admin.services, "start_rebuild_in_background", lambda **kw: calls.append(kw))
    pk = KnowledgeSource.objects.get(source_id="kb/b.md").pk
    response = admin_client.post(
        "/admin/knowledge/knowledgesource/", {"action": "resummarise_and_rebuild", "_selected_action": [pk]}, follow=True
    )
    assert response.status_code == 200 and calls == [{"force_source_ids": ["kb/b.md"]}]

    admin_client.post("/admin/knowledge/knowledgesource/", {"action": "rebuild_index", "_selected_action": [pk]}, follow=True)
    assert calls[-1] == {"force_source_ids": []}


def test_adding_an_adapter_token_in_the_admin_shows_it_once(admin_client):
    response = admin_client.post("/admin/knowledge/adaptertoken/add/", {"name": "matrix-bot"}, follow=True)
    html = response.content.decode()
    token = AdapterToken.objects.get(name="matrix-bot")
    assert "copy it now" in html and f"<code>{token.prefix}" in html
    raw = html.split(f"<code>{token.prefix}", 1)[1].split("</code>", 1)[0]
    assert selectors.active_adapter_token(raw_token=token.prefix + raw) == token
    assert token.prefix + raw not in admin_client.get(f"/admin/knowledge/adaptertoken/{token.pk}/change/").content.decode()
