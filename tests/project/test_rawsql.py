"""The hot statements of project/rawsql.py: prepared once per connection, counted like any query."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.models import signals
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat import services
from chat.models import Message
from project import rawsql

pytestmark = pytest.mark.django_db


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:  # the ORM's own cursor: client-side binding, never prepared
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_a_hot_statement_is_prepared_on_its_connection_and_still_counted(django_user_model):
    user = django_user_model.objects.create_user("prep", password="x")
    conversation = services.start_conversation(user=user)
    sql = services._needs_reply_sql()
    assert sql not in _prepared_statements()

    with CaptureQueriesContext(connection) as queries:
        assert services.needs_reply(conversation_id=conversation.pk) is False
        services.post_user_message(user=user, conversation_id=conversation.pk, content="hello")
        assert services.needs_reply(conversation_id=conversation.pk) is True

    # Prepared by its first run; the second reused it (and saw the new row: nothing is cached
    # but the plan).
    assert _prepared_statements().count(sql.replace("%(conversation)s", "$1")) == 1
    assert sum(1 for q in queries.captured_queries if q["sql"].startswith("SELECT EXISTS")) == 2


def test_parameters_are_bound_on_the_server_with_their_types():
    # A UUID, a list of them and an int arrive typed, not as quoted text.
    ((kind, array_kind, number),) = rawsql.fetch(
        "SELECT pg_typeof(%(one)s)::text, pg_typeof(%(many)s)::text, %(n)s + 1",
        {"one": uuid.uuid4(), "many": [uuid.uuid4()], "n": 41},
    )
    assert (kind, array_kind, number) == ("uuid", "uuid[]", 42)


def test_an_insert_fills_in_defaults_and_times_as_save_would_and_returns_the_row(django_user_model):
    user = django_user_model.objects.create_user("ins", password="x")
    conversation = services.start_conversation(user=user)
    first = services.post_user_message(user=user, conversation_id=conversation.pk, content="hello")
    calls = [{"id": "call_1", "name": "query_tasks", "arguments": "{}"}]

    with CaptureQueriesContext(connection) as queries:
        saved = services.save_assistant_message(
            conversation_id=conversation.pk, in_reply_to_id=first.pk, content="hi", tool_calls=calls, metadata={"usage": {"total": 3}}
        )
    assert len(queries.captured_queries) == 1 and queries.captured_queries[0]["sql"].startswith("INSERT INTO chat_message")

    stored = Message.objects.get(pk=saved.pk)
    fields = [f.attname for f in Message._meta.concrete_fields]
    assert [getattr(saved, f) for f in fields] == [getattr(stored, f) for f in fields]
    assert saved.tool_calls == calls and saved.metadata == {"usage": {"total": 3}}  # JSON, both ways
    assert saved.tool_call_id == "" and saved.created_at is not None and saved.created_at >= first.created_at
    assert not saved._state.adding


def _message_row(message: Message) -> tuple:
    (row,) = rawsql.fetch(f"SELECT {rawsql.columns(Message, 'm')} FROM chat_message m WHERE m.id = %s", [message.pk])
    return row


def test_a_loaded_instance_is_what_from_db_gives_and_behaves_as_one(django_user_model):
    user = django_user_model.objects.create_user("load", password="x")
    conversation = services.start_conversation(user=user)
    message = services.post_user_message(user=user, conversation_id=conversation.pk, content="hello")
    row = _message_row(message)

    loaded = rawsql.load(Message, row)
    names = [f.attname for f in Message._meta.concrete_fields]
    reference = Message.from_db("default", names, [f.from_db_value(v, None, connection) if hasattr(f, "from_db_value") else v
                                                   for f, v in zip(Message._meta.concrete_fields, row, strict=True)])  # fmt: skip
    assert {n: getattr(loaded, n) for n in names} == {n: getattr(reference, n) for n in names}
    assert (loaded._state.adding, loaded._state.db) == (False, "default") and loaded == reference
    assert loaded.conversation == conversation and loaded.conversation.owner == user  # relations load on access

    loaded.content = "edited"
    loaded.save()  # an UPDATE of the row, not a second row
    assert Message.objects.filter(conversation=conversation).count() == 1
    assert Message.objects.get(pk=message.pk).content == "edited"


def test_a_model_with_init_receivers_is_loaded_through_from_db(django_user_model):
    user = django_user_model.objects.create_user("signals", password="x")
    conversation = services.start_conversation(user=user)
    row = _message_row(services.post_user_message(user=user, conversation_id=conversation.pk, content="hello"))
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    signals.post_init.connect(receiver, sender=Message)
    rawsql._loader.cache_clear()
    try:
        loaded = rawsql.load(Message, row)
    finally:
        signals.post_init.disconnect(receiver, sender=Message)
        rawsql._loader.cache_clear()
    assert seen == [loaded]


def test_many_rows_are_inserted_in_one_statement_and_returned_in_their_order(django_user_model):
    user = django_user_model.objects.create_user("many", password="x")
    conversation = services.start_conversation(user=user)
    first = services.post_user_message(user=user, conversation_id=conversation.pk, content="hello")
    results = [services.ToolResult(tool_call_id=f"call_{i}", tool_name="query_tasks", content=f"[{i}]", is_error=i == 2) for i in range(5)]

    with CaptureQueriesContext(connection) as queries:
        saved = services.save_tool_results(conversation_id=conversation.pk, in_reply_to_id=first.pk, results=results)
    assert len(queries.captured_queries) == 1
    assert [m.tool_call_id for m in saved] == [f"call_{i}" for i in range(5)]
    assert [m.metadata for m in saved] == [{"is_error": i == 2} for i in range(5)]
    stored = {m.pk: m for m in Message.objects.filter(role="tool")}
    assert [(stored[m.pk].content, stored[m.pk].created_at) for m in saved] == [(m.content, m.created_at) for m in saved]


def test_set_parameters_go_as_json_text_with_ids_and_times_as_text():
    when = timezone.now()
    key = uuid.uuid4()
    (row,) = rawsql.fetch(
        "SELECT v.id, v.at FROM json_to_recordset(%s::json) AS v(id uuid, at timestamptz)", [rawsql.as_json([{"id": key, "at": when}])]
    )
    assert row == (key, when)
    with pytest.raises(TypeError, match="is not a JSON parameter"):
        rawsql.as_json([object()])
