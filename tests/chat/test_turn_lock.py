"""The turn lock's own connection: tested before it is lent (a dropped one is replaced), and reused
for the check that follows a turn."""

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


async def test_one_holder_at_a_time_and_the_lock_is_free_again_after_the_block(alice):
    conversation = await ask(alice, "hello")
    async with locks.conversation_turn_lock(conversation.pk) as acquired:
        assert acquired
        async with locks.conversation_turn_lock(conversation.pk) as other:
            assert not other
    async with locks.conversation_turn_lock(conversation.pk) as again:
        assert again


async def test_an_error_in_the_block_still_lets_go_of_the_lock(alice):
    conversation = await ask(alice, "hello")
    with pytest.raises(RuntimeError):
        async with locks.conversation_turn_lock(conversation.pk):
            raise RuntimeError("a turn that failed")
    async with locks.conversation_turn_lock(conversation.pk) as again:
        assert again


async def test_a_message_sent_while_a_turn_holds_the_lock_is_answered_after_it(model_endpoint, alice):
    model_endpoint.script(Reply.text("first answer"), Reply.text("second answer"))
    conversation = await ask(alice, "first")
    async with locks.conversation_turn_lock(conversation.pk):
        await agent.run_pending_turns(conversation.pk)  # finds the lock taken and leaves
        assert await roles(conversation) == ["user"]
    await agent.run_pending_turns(conversation.pk)
    assert await roles(conversation) == ["user", "assistant"]
