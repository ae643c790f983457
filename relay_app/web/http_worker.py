"""gunicorn's worker for the relay: gthread, except that a thread gets a request only once all
of it (head and body) has arrived.

gunicorn's gthread worker hands a connection to one of its threads as soon as the first bytes
arrive, and the thread then blocks reading the rest, with no deadline. A client that sends a
request line and then a byte a second holds that thread; 64 such clients (2 workers x 32
threads) hold them all, and GlitchTip's next webhook, which waits 10 s and is never sent again,
is lost. No secret is needed for that: anyone who can reach the port can do it.

Here the worker's own event loop reads each request, without blocking, into memory (at most
MAX_BODY_BYTES of body, as the app accepts), and gives it to a thread only when it is whole. A
request not whole within REQUEST_READ_TIMEOUT of its first byte (of the connection, for a new
one) is answered 408 and closed; slow clients then cost a socket and a buffer each, never a
thread. A request too large to keep (its Content-Length, its chunks, its head) goes to a thread
with what arrived and its connection shut for reading, so the app refuses it (413, 400) at once.

Only plain HTTP/1.x is read this way; TLS in gunicorn itself and HTTP/2 keep gthread's own
handling (TLS belongs in a reverse proxy: docs/security.md). Built on gunicorn 27's gthread
internals (TConn, enqueue_req, handle), hence the pin in pyproject.toml.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import ThreadWorker

from ..glitchtip.webhook import MAX_BODY_BYTES

# From a request's first byte (a new connection's opening) to its last. GlitchTip sends a few
# kilobytes at once; a client that cannot in this long is not an alert worth a thread.
REQUEST_READ_TIMEOUT = 5.0
# A request head larger than this is not one the relay takes (gunicorn's own limits are lower
# for any one line or header); it goes to a thread as it is, for gunicorn to refuse.
MAX_HEAD_BYTES = 64 * 1024
# How often the closing of slow requests is logged, at most: an attack must not flood the log.
SLOW_LOG_EVERY = 60.0
_RECV_SIZE = 65536
# A chunk's size line, or a trailer field: longer is not HTTP the relay takes.
_MAX_CHUNK_LINE = 8192
# What a connection's request is, after what could be read now.
Arrived = Literal["in part", "whole", "gone"]
_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class WholeRequestWorker(ThreadWorker):  # type: ignore[misc]
    """`worker_class` in gunicorn.conf.py."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Connections whose request is still arriving, oldest first (so first to expire).
        self._reading: dict[Any, None] = {}
        self._slow_closed = 0
        self._slow_clients: list[str] = []
        self._slow_logged_at = -SLOW_LOG_EVERY  # the first closing is logged at once

    def enqueue_req(self, conn: Any) -> None:
        if not self._reads_itself(conn):
            super().enqueue_req(conn)
            return
        leftover = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        conn.relay_request = _ArrivingRequest(time.monotonic() + REQUEST_READ_TIMEOUT, leftover)
        conn.sock.setblocking(False)
        arrived = self._read(conn)
        if arrived == "in part":
            self._reading[conn] = None
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        else:  # all there already (a fast client, a pipelined request), or gone
            self._leave_loop(conn, arrived)

    def _reads_itself(self, conn: Any) -> bool:
        return not (
            self.cfg.is_ssl
            or conn.is_http2
            or getattr(self.cfg, "protocol", "http") != "http"
            or negotiation.prior_knowledge_allowed(self.cfg, conn.client)
        )

    def _on_readable(self, conn: Any, _sock: socket.socket) -> None:
        arrived = self._read(conn)
        if arrived != "in part":
            del self._reading[conn]
            self.poller.unregister(conn.sock)  # before it may close: the selector maps its fd
            self._leave_loop(conn, arrived)

    def _read(self, conn: Any) -> Arrived:
        """Read what has arrived, without waiting for more."""
        request: _ArrivingRequest = conn.relay_request
        while not request.whole:
            try:
                data = conn.sock.recv(_RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                return "in part"
            except OSError:
                data = b""
            if not data:
                return "gone"
            request.add(data, answer=partial(_send_quietly, conn.sock))
        return "whole"

    def _leave_loop(self, conn: Any, arrived: Arrived) -> None:
        """A whole request goes to a thread; a client gone before its request was whole is
        closed."""
        if arrived == "gone":
            self._close(conn)
            return
        if conn.relay_request.refused:
            # The app refuses it from what arrived; nothing more is read from this client.
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RD)
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        """In the thread: the request is whole in memory; gthread parses it from there."""
        request: _ArrivingRequest | None = getattr(conn, "relay_request", None)
        if request is not None:
            conn.relay_request = None
            conn.data_ready = True  # gthread's own wait for a first byte is not needed
            conn.sock.setblocking(True)
            conn.init()
            conn.parser.unreader.unread(bytes(request.data))
        return super().handle(conn)

    def murder_pending(self) -> None:
        """Called by gthread's loop at least once a second: close the requests that did not
        arrive in time."""
        super().murder_pending()
        now = time.monotonic()
        for conn in list(self._reading):
            request: _ArrivingRequest = conn.relay_request
            if request.deadline > now:
                break  # later ones started later
            del self._reading[conn]
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(conn.sock)
            if request.data:
                _send_quietly(conn.sock, _TIMED_OUT)
            self._slow_closed += 1
            if len(self._slow_clients) < 3:
                self._slow_clients.append(_peer(conn.client))
            self._close(conn)
        if self._slow_closed and now - self._slow_logged_at >= SLOW_LOG_EVERY:
            self._log_slow(now)

    def _log_slow(self, now: float) -> None:
        self.log.warning(
            "relay_app: closed %d connection(s) whose request did not arrive whole within %.0f s "
            "(slow or idle clients, from %s%s); they held no thread",
            self._slow_closed,
            REQUEST_READ_TIMEOUT,
            ", ".join(self._slow_clients),
            " and others" if self._slow_closed > len(self._slow_clients) else "",
        )
        self._slow_closed, self._slow_clients, self._slow_logged_at = 0, [], now

    def _close(self, conn: Any) -> None:
        self.nr_conns -= 1
        conn.relay_request = None
        conn.close()


class _ArrivingRequest:
    """One request's bytes as they arrive, and whether they are all there: the head (up to a
    blank line), then a body as its Content-Length or its chunks say. Only as much HTTP as that
    takes is read here; gunicorn's parser reads the request itself, and refuses what is wrong."""

    def __init__(self, deadline: float, data: bytes) -> None:
        self.deadline = deadline
        self.data = bytearray(data)
        self.whole = False
        # Whole enough for the app to refuse: too large, or beyond reading here.
        self.refused = False
        self._body_at: int | None = None  # where the body begins, once the head is in
        self._body_length: int | None = None
        self._chunks: _Chunks | None = None
        self._expects_continue = False
        if data:
            self._look()

    def add(self, data: bytes, *, answer: Callable[[bytes], None]) -> None:
        head_was_in = self._body_at is not None
        self.data += data
        self._look()
        if not head_was_in and self._expects_continue and not self.whole:
            answer(_CONTINUE)  # the client waits for this before it sends the body

    def _look(self) -> None:
        if self._body_at is None:
            end = self.data.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES + 4)
            if end < 0:
                if len(self.data) > MAX_HEAD_BYTES:
                    self._refuse()
                return
            self._body_at = end + 4
            self._read_head(bytes(self.data[: self._body_at]))
            if self.whole:
                return
        body = len(self.data) - self._body_at
        if self._chunks is not None:
            self._chunks.scan(self.data)
            if self._chunks.done:
                self.whole = True
            elif self._chunks.broken or self._chunks.size > MAX_BODY_BYTES:
                self._refuse()
        elif self._body_length is not None and body >= self._body_length:
            self.whole = True

    def _read_head(self, head: bytes) -> None:
        lengths: set[bytes] = set()
        chunked = False
        for line in head.split(b"\r\n")[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                continue
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"content-length":
                lengths.add(value)
            elif name == b"transfer-encoding":
                chunked = chunked or b"chunked" in value
            elif name == b"expect":
                self._expects_continue = value == b"100-continue"
        if chunked and not lengths:
            assert self._body_at is not None
            self._chunks = _Chunks(self._body_at)
        elif not lengths:
            self.whole = True  # no body
        elif len(lengths) == 1 and (length := lengths.pop()).isdigit():
            self._body_length = int(length)
            if self._body_length > MAX_BODY_BYTES:
                self._refuse()
        else:
            self._refuse()  # conflicting framing: gunicorn answers 400

    def _refuse(self) -> None:
        self.whole = self.refused = True


class _Chunks:
    """Where a chunked body stands, scanned as it arrives (each byte looked at once)."""

    def __init__(self, start: int) -> None:
        self._at = start
        self._data_left = 0  # of the current chunk's data...
        self._crlf_left = 0  # ...and the line break after it
        self._in_trailer = False
        self.size = 0  # of the data arrived so far, as the app will read it
        self.done = False
        self.broken = False

    def scan(self, data: bytearray) -> None:
        while not (self.done or self.broken):
            if self._data_left or self._crlf_left:
                arrived = len(data) - self._at
                if arrived == 0:
                    return
                step = min(self._data_left, arrived)
                self.size += step
                self._data_left -= step
                crlf = min(self._crlf_left, arrived - step)
                self._crlf_left -= crlf
                self._at += step + crlf
                continue
            end = data.find(b"\r\n", self._at)
            if end < 0:
                self.broken = len(data) - self._at > _MAX_CHUNK_LINE
                return
            line = bytes(data[self._at : end])
            self._at = end + 2
            if self._in_trailer:
                self.done = line == b""  # the blank line after the trailer's fields
                continue
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.broken = True
                return
            if size == 0:
                self._in_trailer = True
            else:
                self._data_left, self._crlf_left = size, 2


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    # Best effort on a socket that does not block: a client that does not read loses the line.
    with contextlib.suppress(OSError):
        sock.send(data)


def _peer(client: object) -> str:
    if isinstance(client, tuple) and client:
        return str(client[0])
    return str(client) or "a local socket"
