"""search_knowledge_base inside a chat turn (offline engine): cited answers, or an honest no."""

import pytest
from channels.db import database_sync_to_async

from knowledge import services as knowledge_services
from knowledge.models import KnowledgeSource
from knowledge.rendering import render_markdown
from llm.offline import phrasing
from tests.knowledge.conftest import build_kb
from tests.websocket import one_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user_guide(db):
    report = knowledge_services.rebuild_kb_index()
    assert report.ok and report.discovered >= 5  # the user guide shipped in docs/user-guide/
    return report


async def ask(user, text):
    _, frames, reply = await one_turn(user, text)
    return reply, frames


async def test_a_question_about_clarion_gets_a_cited_answer(alice, user_guide):
    reply, frames = await ask(alice, "How do I connect my own model?")
    assert "LLM_BASE_URL" in reply.content and "[1]" in reply.content
    citations = reply.metadata["citations"]
    assert citations and citations[0]["url"].startswith("/kb/sources/")
    assert any("model" in c["title"].lower() for c in citations)
    assert 'class="citation-chip"' in frames and citations[0]["url"] in frames


async def test_a_question_the_knowledge_base_does_not_cover_is_declined(alice, user_guide):
    reply, _ = await ask(alice, "What is the boiling point of tungsten?")
    assert reply.content.startswith("The knowledge base doesn't cover that")
    assert "citations" not in reply.metadata


async def test_without_an_index_the_assistant_still_says_it_does_not_know(alice):
    reply, _ = await ask(alice, "How do I rebuild the index?")
    assert reply.content.startswith("The knowledge base doesn't cover that")


async def test_a_question_the_docs_come_close_to_without_answering_names_the_closest_page_as_a_link(alice, tmp_path):
    deploying = "# Deploying\n\nRun the server behind nginx.\n\n## Logging\n\nLogs go to stderr.\n"
    await database_sync_to_async(build_kb)(tmp_path / "kb", {"deploying.md": deploying, "garden.md": "# Garden\n\nTomatoes need sun.\n"})
    source = await KnowledgeSource.objects.aget(title="Deploying")
    reply, frames = await ask(alice, "How do I rotate the nginx logs?")
    url = f"/kb/sources/{source.pk}/"
    assert reply.content.startswith(f"The knowledge base doesn't cover that, so I won't guess. The closest page: [Deploying]({url}). ")
    assert "citations" not in reply.metadata  # named, not cited: nothing on it answers
    assert f'href="{url}"' in frames and ">Deploying</a>" in frames


def test_a_closest_pages_title_or_address_cannot_break_its_link():
    reply = phrasing.knowledge_answer(
        {"should_reply": False, "closest_pages": [{"title": "Setup [beta]", "url": "https://example.com/a_(b) c"}]}
    )
    assert "[Setup (beta)](https://example.com/a_%28b%29%20c)" in reply
    assert '<a href="https://example.com/a_%28b%29%20c"' in render_markdown(reply) and ">Setup (beta)</a>" in render_markdown(reply)
