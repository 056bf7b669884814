"""More browsers connecting at once than Twisted's default listen backlog (50) are all served."""

from __future__ import annotations

import os
import signal
import socket

from django.db import connection

from tests.e2e.conftest import DaphneServer

CLIENTS = 300


def test_every_connection_opened_while_the_server_is_busy_is_served():
    """Daphne paused (as a busy server is, between accepts), 300 connections open: the kernel
    queues each completed handshake until Daphne accepts it — with a backlog of 50, the 52nd
    handshake is dropped and its connect times out. Resumed, every connection gets its page."""
    server = DaphneServer(database_name=connection.settings_dict["NAME"]).start()
    sockets: list[socket.socket] = []
    try:
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            for _ in range(CLIENTS):
                sockets.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        request = f"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n".encode()
        for sock in sockets:
            sock.sendall(request)
        statuses = []
        for sock in sockets:
            sock.settimeout(60)
            statuses.append(sock.makefile("rb").readline().split(b" ")[1])
        assert statuses == [b"200"] * CLIENTS
    finally:
        for sock in sockets:
            sock.close()
        server.stop()
