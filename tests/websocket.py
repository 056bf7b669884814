"""Open real websockets against Clarion's full ASGI stack (origin check, session auth, routing)."""

from __future__ import annotations

import json

from channels.db import database_sync_to_async as sync_to_async
from django.conf import settings
from django.test import Client

from project.asgi import application
from tests.communicators import WebsocketCommunicator


@sync_to_async
def session_cookie_for(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def open_socket(
    path: str, *, user=None, origin: str = "http://127.0.0.1:8000", host: str = "127.0.0.1:8000", headers: list | None = None
) -> WebsocketCommunicator:
    headers = [(b"origin", origin.encode()), (b"host", host.encode()), *(headers or [])]
    if user is not None:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={await session_cookie_for(user)}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


def form_frame(**fields) -> str:
    """What htmx's ws extension sends for a submitted form."""
    return json.dumps({**fields, "HEADERS": {"HX-Request": "true", "HX-Trigger": "composer"}})


async def receive_all(
    socket: WebsocketCommunicator, *, quiet_for: float = 0.3, first_within: float = 30.0, at_least_one: bool = True
) -> str:
    """Every frame the last thing a test did produces, joined: the first frame (waited for up to
    `first_within` seconds: on a loaded machine the consumer may take a while), then every frame
    until the socket has been quiet for `quiet_for` seconds *and* no background work (a turn, a
    guess) is left running. A quiet spell alone is no proof on a busy CPU. `at_least_one=False`
    collects what is left, if anything (after work that may already have been drained)."""
    from chat import background

    frames = [await socket.receive_from(timeout=first_within)] if at_least_one else []
    while True:
        if not await socket.receive_nothing(timeout=quiet_for):
            frames.append(await socket.receive_from())
            continue
        if not background.running():
            return "".join(frames)
        await background.wait_for_all()


async def receive_until(socket: WebsocketCommunicator, needle: str, *, timeout: float = 15.0) -> str:
    """Frames until one contains `needle`: the server answers when it gets to it, which on a loaded
    machine can be later than any quiet window."""
    frames: list[str] = []
    while not frames or needle not in frames[-1]:
        frames.append(await socket.receive_from(timeout=timeout))
    return "".join(frames)


async def frames_of_turn(socket: WebsocketCommunicator, *, at_least_one: bool = True) -> str:
    """Everything a tab receives while the turn(s) it set off run to the end."""
    return await receive_all(socket, at_least_one=at_least_one)


async def one_turn(user, text: str, **frame):
    """A message sent as the composer sends it, on a fresh conversation's open socket: the
    conversation, every frame the turn produced, and the reply it saved (None while a card waits)."""
    from chat import services

    conversation = await sync_to_async(services.start_conversation)(user=user)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=user)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message=text, **frame))
    frames = await frames_of_turn(socket)
    await socket.disconnect()
    reply = await sync_to_async(
        lambda: services.Message.objects.filter(conversation=conversation, role="assistant").exclude(content="").order_by("id").last()
    )()
    return conversation, frames, reply
