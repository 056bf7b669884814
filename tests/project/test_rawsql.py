"""The hot statements of project/rawsql.py: prepared once per connection, counted like any query."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat import services
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
