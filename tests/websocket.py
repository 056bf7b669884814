"""Open real websockets against Clarion's full ASGI stack (origin check, session auth, routing)."""
from __future__ import annotations

import json

from channels.db import database_sync_to_async as sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from project.asgi import application


@sync_to_async
def session_cookie_for(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def open_socket(path: str, *, user=None, origin: str = "http://127.0.0.1:8000") -> WebsocketCommunicator:
    headers = [(b"origin", origin.encode()), (b"host", b"127.0.0.1:8000")]
    if user is not None:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={await session_cookie_for(user)}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


def form_frame(**fields) -> str:
    """What htmx's ws extension sends for a submitted form."""
    return json.dumps({**fields, "HEADERS": {"HX-Request": "true", "HX-Trigger": "composer"}})


async def receive_all(socket: WebsocketCommunicator, *, quiet_for: float = 0.3) -> str:
    """Every frame that arrives until the socket has been quiet for `quiet_for` seconds, joined."""
    frames = []
    while not await socket.receive_nothing(timeout=quiet_for):
        frames.append(await socket.receive_from())
    return "".join(frames)


async def frames_of_turn(socket: WebsocketCommunicator) -> str:
    """Everything a tab receives while the turn(s) it set off run to the end."""
    from chat.agent import wait_for_running_turns

    frames = await receive_all(socket)
    await wait_for_running_turns()
    return frames + await receive_all(socket)
