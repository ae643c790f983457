"""The one scaffold of the local stand-ins for the services the relay talks to
(fake_telegram.py, fake_glitchtip.py): a threaded HTTP/1.1 server on 127.0.0.1 that keeps its
port across `stop` and `start` (a service that goes away and comes back at the same address),
closes its open connections when it stops (a kept-alive connection must not be answered by a
service that is supposed to be down), and answers JSON. Each fake subclasses `LocalService` and
`Handler`, and keeps its own state and rules."""

from __future__ import annotations

import json
import random
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self, TypeVar

# Below the kernel's ephemeral range (32768 and up): while a fake is down, the relay's
# connection attempts take ephemeral ports, and one that happened to take the fake's port
# would connect to itself and keep the fake from listening again. And above the relays' own
# (tests/e2e/relay_process.py: from 20000, 1,000 for each of up to 8 xdist workers): a fake
# that took the port a relay had just found free would keep gunicorn from starting.
PORTS = (28000, 32700)
# How long a stop waits for the serving loop to notice it.
STOP_WITHIN = 0.02


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 overflows when many requests hang at once, and the kernel then
    # delays new connections by a second: a fault of the fake, not of the relay under test.
    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client gave up waiting (a relay's deadline): as it may
        super().handle_error(request, client_address)


class LocalService:
    """A stand-in listening on 127.0.0.1, on a port chosen at its first start and then kept."""

    handler: type[Handler]
    name = "a fake service"

    def __init__(self) -> None:
        self._server: _Server | None = None
        self._port = 0
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def listening(self) -> bool:
        return self._server is not None

    def start(self) -> Self:
        """Listen (again, on the same port after a stop); the service itself."""
        server = self._bind()
        server.service = self  # type: ignore[attr-defined]
        self._port = server.server_address[1]
        # stop() waits for the loop to look again: at the default 0.5 s, each test's teardown
        # paid half a second for every stand-in it stopped.
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": STOP_WITHIN}, daemon=True
        ).start()
        self._server = server
        return self

    def stop(self) -> None:
        """Stop listening (connections are refused from now on) and close what is open."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._connections_lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def _bind(self) -> _Server:
        if self._port:
            return _Server(("127.0.0.1", self._port), self.handler)
        for _ in range(100):
            try:
                port = random.SystemRandom().randrange(*PORTS)
                return _Server(("127.0.0.1", port), self.handler)
            except OSError:
                continue
        raise RuntimeError(f"no free port for {self.name} between {PORTS[0]} and {PORTS[1]}")

    def _opened(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def _closed(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)


S = TypeVar("S", bound="LocalService")


@contextmanager
def running(service: S) -> Iterator[S]:
    """The service listening for the block's time."""
    service.start()
    try:
        yield service
    finally:
        service.stop()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm the second waits for the
    # client's delayed ACK, adding 40 ms to every answer that no real service adds.
    disable_nagle_algorithm = True

    @property
    def service(self) -> Any:
        return self.server.service  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output for the relay's own logs

    def setup(self) -> None:
        super().setup()
        self.service._opened(self.connection)

    def finish(self) -> None:
        self.service._closed(self.connection)
        super().finish()

    def json_body(self) -> Any:
        """The request's body as JSON; None when there is none, or it is not JSON."""
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def reply(self, status: int, reply: Any) -> None:
        self.send(status, json.dumps(reply).encode(), "application/json")

    def send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def abort(self) -> None:
        """Close with a reset and no answer, as a lost request looks to the client."""
        self.close_connection = True
        with suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
