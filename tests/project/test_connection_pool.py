"""One bounded pool of database connections per process, and what a person sees when it is
exhausted or Postgres is out of reach: a clear 503 (an error frame on the websocket), nothing
written, and the same request working once a connection is free."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import psycopg
import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection
from django.test import Client

from chat import agent, deadlines
from chat import services as chat_services
from chat.models import Message
from project.embedded_pg import connection_settings
from questions.models import PendingQuestion
from tests.questions.test_answer_endpoints import make_group
from tests.websocket import form_frame, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

BUSY = "Clarion is busy right now"


@pytest.fixture(autouse=True)
async def _background_work_finishes():
    yield
    await agent.wait_for_running_turns()  # an answer starts the next turn
    deadlines.stop_sweepers()


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def terminate(pids: list[int]) -> None:
    s = connection_settings(connection.settings_dict)
    with psycopg.connect(
        dbname=s["NAME"], user=s["USER"] or None, host=s["HOST"] or None, port=s["PORT"] or None, autocommit=True
    ) as other:
        other.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])


def resize_pool(**options: float) -> None:
    """A new pool for Django's connections, with `options` over the settings' (none: as set)."""
    connection.close()
    connection.close_pool()
    connection.settings_dict["OPTIONS"]["pool"] = {**settings.DATABASES["default"]["OPTIONS"]["pool"], **options}


@contextmanager
def fresh_pool(**options: float) -> Iterator[None]:
    """A new, empty pool for Django's connections (`options` over the settings'), for the block."""
    original = connection.settings_dict["OPTIONS"]["pool"]
    resize_pool(min_size=0, **options)
    try:
        yield
    finally:
        connection.close()
        connection.close_pool()
        connection.settings_dict["OPTIONS"]["pool"] = original


def pool_of_one() -> contextlib.AbstractContextManager[None]:
    """Django's pool cut to one connection, waited for at most 0.3 s."""
    return fresh_pool(max_size=1, timeout=0.3)


@contextmanager
def only_connection_taken() -> Iterator[None]:
    """The pool's only connection, held by another thread (a long request) until the block ends."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        backend_pid()
        taken.set()
        release.wait(30)
        connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(10)
    try:
        yield
    finally:
        release.set()
        thread.join()


@asynccontextmanager
async def async_fresh_pool(**options: float) -> AsyncIterator[None]:
    pool = fresh_pool(**options)
    await database_sync_to_async(pool.__enter__)()
    try:
        yield
    finally:
        await database_sync_to_async(pool.__exit__)(None, None, None)


def async_pool_of_one() -> contextlib.AbstractAsyncContextManager[None]:
    return async_fresh_pool(max_size=1, timeout=0.3)


def test_connections_are_pooled_and_bounded_by_one_setting():
    pool = settings.DATABASES["default"]["OPTIONS"]["pool"]
    assert pool["max_size"] == settings.DATABASE_POOL_MAX_SIZE
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] == 0  # nothing kept per thread


async def test_a_hop_gives_its_connection_back_and_the_next_reuses_one():
    # A fresh pool: one the other tests grew lends its idle connections in turn.
    async with async_fresh_pool():
        pids = [await database_sync_to_async(backend_pid)() for _ in range(10)]
        assert await database_sync_to_async(lambda: connection.connection)() is None  # given back
    assert len(set(pids)) == 1  # lent again, not reopened per hop


async def test_connections_postgres_dropped_are_replaced_before_they_are_lent():
    pids = {await database_sync_to_async(backend_pid)() for _ in range(3)}
    await database_sync_to_async(terminate)(sorted(pids))  # as a restart or an admin would
    # No failed statement: the pool tests a connection before lending it.
    assert await database_sync_to_async(backend_pid)() not in pids


def test_a_page_that_finds_no_free_connection_gets_a_clear_503():
    client = Client(raise_request_exception=False)
    client.cookies[settings.SESSION_COOKIE_NAME] = uuid.uuid4().hex
    with pool_of_one(), only_connection_taken():
        response = client.get("/chat/")
        assert response.status_code == 503 and response["Retry-After"] == "5"
        assert BUSY in response.content.decode()
        response = client.get("/chat/", headers={"HX-Request": "true"})  # htmx shows the text in place
        assert response.status_code == 503 and response.content.decode().startswith(BUSY)
    assert client.get("/chat/").status_code == 302  # served again at once: to the login page


async def test_an_answer_that_finds_no_free_connection_is_a_503_and_the_card_stays_answerable(async_client, alice):
    question = await database_sync_to_async(lambda: make_group(alice).questions.get())()
    await async_client.aforce_login(alice)
    url = f"/chat/questions/{question.pk}/answer/"
    async with async_pool_of_one():
        with only_connection_taken():
            response = await async_client.post(url, {"option": "1"}, headers={"HX-Request": "true"})
            assert response.status_code == 503 and response.content.decode().startswith(BUSY)
    assert await database_sync_to_async(status_of)(question) == "pending"  # nothing written
    response = await async_client.post(url, {"option": "1"}, headers={"HX-Request": "true"})  # try again
    assert response.status_code == 200 and "receipt-answer" in response.content.decode()
    assert await database_sync_to_async(status_of)(question) == "answered"


def status_of(question: PendingQuestion) -> str:
    return PendingQuestion.objects.get(pk=question.pk).status


async def test_a_frame_that_finds_no_free_connection_gets_an_error_frame_and_the_socket_stays_up(alice):
    conversation = await database_sync_to_async(chat_services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    assert (await socket.connect())[0]
    await socket.send_to(text_data=form_frame(action="send_message", message=" "))  # the handshake's work is done…
    assert "Type a message first" in await socket.receive_from(timeout=10)  # …once this is answered
    async with async_pool_of_one():
        with only_connection_taken():
            await socket.send_to(text_data=form_frame(action="send_message", message="hello while busy"))
            assert BUSY in await socket.receive_from(timeout=10)
        assert await database_sync_to_async(Message.objects.count)() == 0  # nothing written
        await socket.send_to(text_data=form_frame(action="send_message", message="hello again"))  # the same socket
        frames = ""
        while "hello again" not in frames:
            frames += await socket.receive_from(timeout=10)
    contents = await database_sync_to_async(lambda: list(Message.objects.filter(role="user").values_list("content", flat=True)))()
    assert contents == ["hello again"]
    await socket.disconnect()
