"""The three chat questions of the knowledge-quality issue, through a real chat turn (offline engine)."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from chat import services
from chat.agent import wait_for_running_turns
from knowledge import services as knowledge_services
from tests.websocket import form_frame, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

DECLINED = "The knowledge base doesn't cover that"


@pytest.fixture
def user_guide(db):
    report = knowledge_services.rebuild_kb_index()
    assert report.ok
    return report


async def ask(user, text: str, *, timeout: float = 60.0):
    """Send a message over the websocket and wait until the assistant's reply is stored."""
    conversation = await database_sync_to_async(services.start_conversation)(user=user)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=user)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message=text))

    def reply():
        return services.Message.objects.filter(conversation=conversation, role="assistant").exclude(content="").order_by("id").last()

    async with asyncio.timeout(timeout):
        while (found := await database_sync_to_async(reply)()) is None:
            await asyncio.sleep(0.05)  # polling a condition, with a generous overall timeout
    await wait_for_running_turns()
    await socket.disconnect()
    return found


async def test_a_sql_question_naming_postgresql_goes_to_the_knowledge_base_not_the_projects(alice, user_guide):
    reply = await ask(alice, "What's the difference between a LEFT JOIN and an INNER JOIN in PostgreSQL?")
    assert reply.content.startswith(DECLINED)
    assert "project" not in reply.content.split(".")[0].lower()


async def test_how_to_export_tasks_is_a_question_not_a_task_list(alice, user_guide):
    reply = await ask(alice, "how do I export my tasks to CSV?")
    assert reply.content.startswith(DECLINED)


async def test_running_clarion_with_ollama_cites_the_ollama_section(alice, user_guide):
    reply = await ask(alice, "how do I run Clarion with Ollama?")
    assert "11434" in reply.content and "[1]" in reply.content
    citation = reply.metadata["citations"][0]
    assert citation["source_id"] == "docs/user-guide/connecting-your-own-model.md"


@pytest.mark.parametrize(
    "text, source",
    [
        ("How do I answer several questions at once?", "answering-questions.md"),
        ("How long do I have to answer a question?", "question-deadlines.md"),
        ("What happens to what I type while a question is pending?", "typing-while-a-question-waits.md"),
    ],
)
async def test_questions_about_questions_are_answered_from_the_guide_in_the_chat(alice, user_guide, text, source):
    reply = await ask(alice, text)
    assert "[1]" in reply.content and reply.metadata["citations"][0]["source_id"] == f"docs/user-guide/{source}"
    assert await tools_used(reply) == ["search_knowledge_base"]


@pytest.mark.parametrize(
    "text, fact, source",
    [
        ("rename this conversation to Planning", "Rename above the thread changes a title", "chatting-with-the-assistant.md"),
        ("switch to dark mode", "light mode, dark mode", "chatting-with-the-assistant.md"),
        ("change my password", "Password in the top bar opens a form", "getting-started.md"),
        ("where are my notes stored?", "embedded Postgres 18 server", "your-data.md"),
    ],
)
async def test_a_change_made_in_clarions_pages_or_a_question_about_the_data_is_answered_from_the_guide(
    alice, user_guide, text, fact, source
):
    reply = await ask(alice, text)
    assert fact in reply.content and reply.metadata["citations"][0]["source_id"] == f"docs/user-guide/{source}"
    assert await tools_used(reply) == ["search_knowledge_base"]


@pytest.mark.parametrize("text", ["what's pending?", "show my tasks", "what's due this week?", "anything pending in Harbor?"])
async def test_workspace_requests_in_the_chat_never_quote_the_guide(alice, user_guide, text):
    from workspace.demo_content import seed_demo_workspace

    await database_sync_to_async(seed_demo_workspace)(user=alice)
    reply = await ask(alice, text)
    assert "citations" not in reply.metadata and "[1]" not in reply.content
    assert "search_knowledge_base" not in await tools_used(reply) and "query_tasks" in await tools_used(reply)


async def tools_used(reply) -> list[str]:
    def names():
        messages = services.Message.objects.filter(conversation_id=reply.conversation_id, role="tool").order_by("id")
        return list(messages.values_list("tool_name", flat=True))

    return await database_sync_to_async(names)()
