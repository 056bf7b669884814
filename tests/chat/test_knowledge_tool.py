"""search_knowledge_base inside a chat turn (offline engine): cited answers, or an honest no."""

import pytest

from knowledge import services as knowledge_services
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
