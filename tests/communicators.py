"""Channels' test communicators, with the database cleanup of every hop left as it is in production.

Channels' own communicators turn `channels.db.close_old_connections` into a no-op while they send
or receive, with a process-wide `mock.patch` (meant for a test case whose one connection must
survive). Two communicators working at once restore it out of order and can leave the no-op in
place for the rest of the run: every later database hop then keeps its pooled connection, and the
run ends with connections nobody returned. Clarion's tests run on the real pool, so these skip
the patch and each hop returns its connection the way it does in a server.
"""

from __future__ import annotations

from typing import Any

from asgiref.testing import ApplicationCommunicator
from channels import testing


class _RealConnectionCleanup(ApplicationCommunicator):
    async def send_input(self, message: dict[str, Any]) -> None:
        return await ApplicationCommunicator.send_input(self, message)

    async def receive_output(self, timeout: float = 1) -> Any:
        return await ApplicationCommunicator.receive_output(self, timeout)


class WebsocketCommunicator(_RealConnectionCleanup, testing.WebsocketCommunicator):
    pass


class HttpCommunicator(_RealConnectionCleanup, testing.HttpCommunicator):
    pass
