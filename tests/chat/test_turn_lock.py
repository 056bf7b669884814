"""The turn lock's own connection: lent without a test round trip, and reused for the check that
follows a turn."""

from __future__ import annotations

import psycopg
import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from chat import agent, locks, services
from chat.models import Message
from project import rawsql
from project.embedded_pg import connection_settings
from questions.models import QuestionGroup
from tests.conftest import build_workspace
from tests.fake_openai import Reply

_fetch_each = rawsql.fetch_each

pytestmark = pytest.mark.django_db(transaction=True)  # the lock's connection sees only what was committed


@database_sync_to_async
def ask(user, text, conversation=None):
    conversation = conversation or services.start_conversation(user=user)
    services.post_user_message(user=user, conversation_id=conversation.pk, content=text)
    return conversation


@database_sync_to_async
def roles(conversation):
    return list(Message.objects.filter(conversation=conversation).order_by("id").values_list("role", flat=True))


@database_sync_to_async
def terminate(pid: int) -> None:
    from django.db import connection

    s = connection_settings(connection.settings_dict)
    with psycopg.connect(
        dbname=s["NAME"], user=s["USER"] or None, host=s["HOST"] or None, port=s["PORT"] or None, autocommit=True
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


async def test_a_lock_connection_postgres_dropped_while_idle_is_replaced_not_a_failed_turn(model_endpoint, alice):
    model_endpoint.script(Reply.text("first answer"), Reply.text("second answer"))
    conversation = await ask(alice, "first")
    await agent.run_pending_turns(conversation.pk)
    pool = await locks._pool()
    idle = await pool.getconn()
    pid = idle.info.backend_pid
    await pool.putconn(idle)
    await terminate(pid)  # as a Postgres restart or an idle timeout would

    await ask(alice, "second", conversation)
    await agent.run_pending_turns(conversation.pk)

    assert await roles(conversation) == ["user", "assistant", "user", "assistant"]
    fresh = await pool.getconn()
    assert fresh.info.backend_pid != pid
    await pool.putconn(fresh)


async def test_the_statement_after_release_sees_what_was_committed_during_the_hold(alice):
    conversation = await ask(alice, "hello")
    statement = services.needs_reply_statement(conversation.pk)
    async with locks.conversation_turn_lock(conversation.pk, after_release=statement) as lock:
        assert lock.acquired and lock.after_release is None
        async with locks.conversation_turn_lock(conversation.pk) as other:
            assert not other.acquired  # one holder at a time
        await database_sync_to_async(services.save_assistant_message)(
            conversation_id=conversation.pk, in_reply_to_id=await latest_user_message(conversation), content="hi",
            tool_calls=[], metadata={},
        )  # fmt: skip
        await ask(alice, "and another thing", conversation)
    assert services.reply_due(lock.after_release) is True  # the message sent while the lock was held


@database_sync_to_async
def latest_user_message(conversation) -> int:
    return Message.objects.filter(conversation=conversation, role="user").latest("id").pk


async def test_a_failing_statement_after_release_still_lets_go_of_the_lock(alice):
    conversation = await ask(alice, "hello")
    async with locks.conversation_turn_lock(conversation.pk, after_release=("SELECT no_such_column", {})) as lock:
        assert lock.acquired
    assert lock.after_release is None  # the caller asks its own way (a thread hop)
    async with locks.conversation_turn_lock(conversation.pk) as again:
        assert again.acquired


@database_sync_to_async
def a_conversation_with_everything_a_turn_reads(user):
    """Tool calls and results (JSON columns), timestamps, a workspace, a finished clarification
    round about the newest request: every kind of value the turn's reads return."""
    build_workspace(user, tag="alice")
    conversation = services.start_conversation(user=user)
    first = services.post_user_message(user=user, conversation_id=conversation.pk, content="what is open?")
    call = {"id": "call_1", "name": "list_tasks", "arguments": '{"status": "todo"}'}
    services.save_assistant_message(conversation_id=conversation.pk, in_reply_to_id=first.pk, content="", tool_calls=[call], metadata={})
    services.save_tool_results_of_calls(
        [(conversation.pk, first.pk, services.ToolResult(tool_call_id="call_1", tool_name="list_tasks", content="[]", is_error=False))]
    )
    services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=first.pk, content="Nothing.", tool_calls=[], metadata={}
    )
    request = services.post_user_message(user=user, conversation_id=conversation.pk, content="tidy up Atlas")
    QuestionGroup.objects.create(
        conversation=conversation, user=user, kind=QuestionGroup.Kind.CLARIFY, payload={"request_message_id": request.pk},
        completed_at=timezone.now(),
    )  # fmt: skip
    return conversation


async def test_the_reads_taken_with_the_lock_give_the_context_django_reads(alice, settings):
    settings.CLARIFICATION_ENABLED = True
    conversation = await a_conversation_with_everything_a_turn_reads(alice)
    reads = agent._turn_reads(conversation.pk)
    async with locks.conversation_turn_lock(conversation.pk, reads=reads) as lock:
        assert lock.acquired and lock.rows is not None and len(lock.rows) == len(reads)
        from_the_lock = agent._next_turn(lock.rows)
    through_django = await database_sync_to_async(lambda: agent._next_turn(rawsql.fetch_each(reads)))()

    assert from_the_lock is not None and from_the_lock == through_django
    assert from_the_lock.request_text == "tidy up Atlas" and from_the_lock.clarification_rounds == 1
    assert [m.role for m in from_the_lock.messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert from_the_lock.messages[2].tool_calls[0].name == "list_tasks"
    assert "Atlas alice" in from_the_lock.projects


async def test_no_turn_is_due_without_an_unanswered_message(alice):
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    reads = agent._turn_reads(conversation.pk)
    async with locks.conversation_turn_lock(conversation.pk, reads=reads) as lock:
        assert lock.acquired and agent._next_turn(lock.rows) is None


async def test_a_read_that_fails_leaves_the_lock_held_and_the_caller_reads_its_own_way(alice):
    conversation = await ask(alice, "hello")
    async with locks.conversation_turn_lock(conversation.pk, reads=[("SELECT no_such_column", {})]) as lock:
        assert lock.acquired and lock.rows is None
        async with locks.conversation_turn_lock(conversation.pk) as other:
            assert not other.acquired  # still held, on a fresh connection
    async with locks.conversation_turn_lock(conversation.pk) as again:
        assert again.acquired


async def test_a_turn_whose_reads_fail_with_the_lock_loads_in_a_thread_and_answers(model_endpoint, alice, monkeypatch):
    model_endpoint.script(Reply.text("answered all the same"))
    conversation = await ask(alice, "hello")
    real = agent._turn_reads
    monkeypatch.setattr(agent, "_turn_reads", lambda cid: [*real(cid), ("SELECT no_such_column", {})])
    monkeypatch.setattr(rawsql, "fetch_each", lambda reads: _fetch_each(reads[:-1]))  # the thread reads without it
    await agent.run_pending_turns(conversation.pk)
    assert await roles(conversation) == ["user", "assistant"]


async def test_a_text_reply_turn_reads_and_saves_on_the_lock_connection_without_a_thread_hop(model_endpoint, alice, monkeypatch):
    model_endpoint.script(Reply.text("answered on the lock's connection"))
    conversation = await ask(alice, "hello")
    hops = []
    real = agent.database_sync_to_async
    monkeypatch.setattr(agent, "database_sync_to_async", lambda func: hops.append(func) or real(func))
    await agent.run_pending_turns(conversation.pk)
    assert await roles(conversation) == ["user", "assistant"]
    assert hops == []
