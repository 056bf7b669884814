"""The turn lock's own connection: lent without a test round trip, and reused for the check that
follows a turn."""

from __future__ import annotations

import psycopg
import pytest
from channels.db import database_sync_to_async

from chat import agent, locks, services
from chat.models import Message
from project.embedded_pg import connection_settings
from tests.fake_openai import Reply

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
