"""gunicorn's worker for the relay: gthread, except that a thread gets a request only once all
of it has arrived, and a client that does not read its answers loses its connection.

gunicorn's gthread worker hands a connection to one of its threads as soon as the first bytes
arrive, and the thread then blocks reading the rest. A client that sends a request line and
then a byte a second holds that thread; 64 such clients (2 workers x 32 threads) hold them all,
and GlitchTip's next webhook, which waits 10 s and is never sent again, is lost. No secret is
needed for that: anyone who can reach the port can do it.

Here the worker's own event loop reads each request without blocking, one read of at most
RECV_BYTES per connection per turn (so one fast sender cannot hold the loop), and h11 decides
where it ends (framing.py). Only a whole request goes to a thread, and gunicorn's parser there
reads exactly its bytes, never the socket. Limits:

- a request not whole within REQUEST_READ_TIMEOUT of its first byte (of the connection, for a
  new one) is answered 408 and closed: a slow client costs a socket and a buffer, never a
  thread;
- one request holds at most framing.MAX_REQUEST_BYTES; the requests arriving on all of a
  worker's connections together at most WORKER_HOLD_BYTES: past it, the connection holding
  the most is answered 503 and closed;
- an answer must be taken by the client within WRITE_TIMEOUT, and a connection serves at most
  MAX_REQUESTS_PER_CONNECTION requests: a client that pipelines requests and reads nothing
  holds a thread for seconds at most. It is then reset (nginx's reset_timedout_connection), not
  closed: a close queues its FIN behind the answers the client never takes, and the kernel
  kept such a connection for minutes after the worker let go of it (FIN-WAIT-1, both windows
  shut), holding the answers, while the client could not even see that it was closed;
- what h11 refuses (framing, a Transfer-Encoding, a head too large) is answered 400, 411 or 431
  by the loop itself, and closed;
- after its last answer a connection is half-closed, and the loop reads and drops what the
  client still sends until it closes too, LINGER_BYTES arrived, or LINGER passed: never a
  wait of the loop's (gunicorn's own close waits up to 2 s in the loop for each such client,
  and 32 clients that never close held GlitchTip's webhook past its 10 s). One whose client
  has by then not taken all of its answers is reset, as above.

Every refusal is counted by its kind (a status and a fixed reason, never the refused bytes),
and logged at most once a minute, with the first bytes of one request of each kind, and once
more as the worker stops. Only plain HTTP/1.x is read this way; TLS in gunicorn itself and
HTTP/2 keep gthread's own handling (TLS belongs in a reverse proxy: docs/security.md).

This is the one module that builds on gunicorn's internals (gthread's TConn, enqueue_req,
handle, handle_request, handle_error, finish_request and the True or False its futures hold,
murder_pending; its RequestParser over an iterable; a request's `_expected_100_continue` and
`force_close`; the error log's "Invalid request from ip=" line, folded into the refusals; that
gthread's loop calls murder_pending on every turn, that TConn.init keeps a parser already set,
that nr_conns counts the connections it may accept; that the master's signal handler, which a
worker keeps until its init_signals, puts each signal on the master's SIG_QUEUE), hence the
pin to one release in pyproject.toml.
tests/e2e/test_edge.py tries each as behaviour; docs/security.md says how an upgrade is checked.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import queue
import selectors
import signal
import socket
import struct
import termios
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from gunicorn.http.errors import ParseException
from gunicorn.http.parser import RequestParser
from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import ThreadWorker

from ..core.logs import client_sample
from .framing import (
    BODY_GATE,
    SAMPLE_BYTES,
    ArrivingRequest,
    Refused,
    Verdict,
    Waiting,
    WantsBody,
    Whole,
)

# From a request's first byte (a new connection's opening) to its last. GlitchTip sends a few
# kilobytes at once; a client that cannot in this long is not an alert worth a thread.
REQUEST_READ_TIMEOUT = 5.0
# An answer not taken by the client within this is given up, and its connection closed.
WRITE_TIMEOUT = 5.0
# Then the connection closes after its answer, and the client connects again if it has more.
MAX_REQUESTS_PER_CONNECTION = 100
# After a connection's last answer: how long its close waits for the client's, and how much of
# what the client still sends it reads meanwhile (gunicorn's close_graceful's figures).
LINGER = 2.0
LINGER_BYTES = 64 * 1024
# What the requests still arriving on a worker's connections may hold together.
WORKER_HOLD_BYTES = 16 * 1024 * 1024
RECV_BYTES = 64 * 1024
# How often refusals are logged, at most: an attack must not flood the log.
REFUSALS_LOG_EVERY = 60.0
# Kinds counted apart in one line; more (not expected: the kinds are fixed words) are summed.
MAX_REFUSAL_KINDS = 32
_OTHER_KINDS = "refused for other reasons"

_TIMED_OUT = Refused(408, f"did not arrive whole within {REQUEST_READ_TIMEOUT:.0f} s")
_OVER_WORKER_HOLD = Refused(503, "the largest arriving when the worker held too much")
_SLOW_READER = f"did not take its answer within {WRITE_TIMEOUT:.0f} s, and was reset"
_UNTAKEN = f"had not taken its last answers {LINGER:.0f} s after them, and was reset"
# SO_LINGER on, with no time: close() resets the connection and the kernel drops what it holds.
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)
# gunicorn's own line for each request its parser refuses, which the refusals' count replaces.
_GUNICORN_REFUSAL_LINE = "Invalid request from ip="


@dataclass
class _Connection:
    """The worker's own state of one client connection."""

    leftover: bytes = b""  # read after the last request: the start of the next one
    served: int = 0
    arriving: ArrivingRequest | None = None
    deadline: float = 0.0  # of its request's arrival; of its close once it lingers
    drained: int = 0  # read from it while it lingers
    whole: Whole | None = None  # for the thread that takes it
    last: bool = False  # the request a thread has now is the connection's last
    not_reading: bool = False  # an answer was not taken within WRITE_TIMEOUT


class _Refusals:
    """What was refused since it was last said: a count by kind (a status and a fixed reason),
    the first few bytes of one such request per kind, and a few of the clients. Bounded
    whatever a stranger sends: kinds are the worker's and framing's fixed words (and at most
    MAX_REFUSAL_KINDS of them), a sample is SAMPLE_BYTES. The loop and the threads both add
    to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._samples: dict[str, str] = {}
        self._clients: list[str] = []
        self._logged_at = -REFUSALS_LOG_EVERY  # the first refusal is logged at once

    def add(self, kind: str, client: object, sample: bytes = b"") -> None:
        peer = _peer(client)
        with self._lock:
            if kind not in self._counts and len(self._counts) >= MAX_REFUSAL_KINDS:
                kind = _OTHER_KINDS
            self._counts[kind] = self._counts.get(kind, 0) + 1
            if sample and kind not in self._samples:
                self._samples[kind] = client_sample(sample, SAMPLE_BYTES)
            if len(self._clients) < 3 and peer not in self._clients:
                self._clients.append(peer)

    def due(self, now: float, *, last: bool = False) -> str | None:
        """What to log now, if anything: at most once every REFUSALS_LOG_EVERY, and what is
        left when the worker stops (`last`)."""
        with self._lock:
            if not self._counts or (now - self._logged_at < REFUSALS_LOG_EVERY and not last):
                return None
            said = "; ".join(
                f"{count} {kind}"
                + (f', as "{self._samples[kind]}"' if kind in self._samples else "")
                for kind, count in self._counts.items()
            )
            more = " and others" if sum(self._counts.values()) > len(self._clients) else ""
            line = f"{said}; from {', '.join(self._clients)}{more}"
            self._counts, self._samples, self._clients = {}, {}, []
            self._logged_at = now
            return line


class _CountedNotLogged(logging.Filter):
    """Drops gunicorn's line for each request its parser refused: a stranger could write one
    WARNING per request. `handle_error` counts them with the other refusals instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_GUNICORN_REFUSAL_LINE)


# The signals with which the master stops a worker.
_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


def stops_missed_at_boot() -> list[int]:
    """The stops the master sent this worker before it took its signals over (once each).
    Until then the handler in place is the master's own, inherited through the fork, which
    only puts the signal on the master's queue, this process's copy of it, where nobody reads
    it: a relay stopped while a worker booted waited gunicorn's graceful_timeout (30 s) for that
    worker and then killed it, its alerts held in memory with it."""
    master = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    queued = getattr(master, "SIG_QUEUE", None)
    if not isinstance(queued, queue.SimpleQueue):
        return []
    missed: list[int] = []
    while True:
        try:
            sig = queued.get_nowait()
        except queue.Empty:
            return missed
        if sig in _STOPS and sig not in missed:
            missed.append(sig)


class WholeRequestWorker(ThreadWorker):  # type: ignore[misc]
    """`worker_class` in gunicorn.conf.py."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Connections whose request is still arriving, oldest first (so first to expire).
        self._reading: dict[Any, None] = {}
        # Connections whose last answer is sent, waiting for the client's close, oldest first.
        self._lingering: dict[Any, None] = {}
        self._held = 0  # by the requests of self._reading
        self._refusals = _Refusals()
        self._gate: WantsBody | None = None
        self._gate_looked_up = False

    def init_process(self) -> None:
        # In the worker, after the fork: the master's logger is left as it is.
        self.log.error_log.addFilter(_CountedNotLogged())
        super().init_process()

    def init_signals(self) -> None:
        missed = stops_missed_at_boot()
        super().init_signals()
        for stop in missed:  # now to this worker's own handlers
            os.kill(os.getpid(), stop)

    # --- the event loop's side ----------------------------------------------------------

    def enqueue_req(self, conn: Any) -> None:
        """A new connection, or one whose next request may be arriving: read it here."""
        if not self._reads_itself(conn):
            super().enqueue_req(conn)
            return
        state: _Connection | None = getattr(conn, "relay", None)
        if state is None:
            state = conn.relay = _Connection()
        state.arriving = ArrivingRequest(wants_body=self._wants_body())
        state.deadline = time.monotonic() + REQUEST_READ_TIMEOUT
        conn.sock.setblocking(False)
        self._reading[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, lambda _sock: self._readable(conn))
        leftover, state.leftover = state.leftover, b""
        if leftover:  # a pipelined request, read with the one before it
            self._arrived(conn, leftover)

    def _reads_itself(self, conn: Any) -> bool:
        return not (
            self.cfg.is_ssl
            or conn.is_http2
            or getattr(self.cfg, "protocol", "http") != "http"
            or negotiation.prior_knowledge_allowed(self.cfg, conn.client)
        )

    def _wants_body(self) -> WantsBody | None:
        if not self._gate_looked_up:
            extensions = getattr(self.wsgi, "extensions", None)
            gate = extensions.get(BODY_GATE) if isinstance(extensions, dict) else None
            self._gate = gate if callable(gate) else None
            self._gate_looked_up = True
        return self._gate

    def _readable(self, conn: Any) -> None:
        try:
            data = conn.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # gone before its request was whole
            self._stop_reading(conn)
            self._close(conn)
            return
        self._arrived(conn, data)
        if self._held > WORKER_HOLD_BYTES:
            self._shed_largest()

    def _arrived(self, conn: Any, data: bytes) -> None:
        state: _Connection = conn.relay
        assert state.arriving is not None
        before = state.arriving.held
        verdict: Verdict = state.arriving.feed(data)
        self._held += state.arriving.held - before
        if isinstance(verdict, Waiting):
            if verdict.interim:
                _send_quietly(conn.sock, verdict.interim)
            return
        if isinstance(verdict, Refused):
            self._refuse(conn, verdict)
            return
        self._stop_reading(conn)
        state.whole = verdict
        super().enqueue_req(conn)

    def _stop_reading(self, conn: Any) -> None:
        state: _Connection = conn.relay
        if state.arriving is not None:
            self._held -= state.arriving.held
            state.arriving = None
        if conn in self._reading:
            del self._reading[conn]
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(conn.sock)  # before it may close: the selector maps its fd

    def _shed_largest(self) -> None:
        largest = max(self._reading, key=lambda conn: conn.relay.arriving.held)
        self._refuse(largest, _OVER_WORKER_HOLD)

    def _refuse(self, conn: Any, refused: Refused, *, answer: bool = True) -> None:
        """Answer `refused` (unless told not to), count it, and close: nothing of the request
        is kept but its kind and the first bytes of one such request a minute."""
        arriving = conn.relay.arriving
        sample = refused.sample or (arriving.sample() if arriving is not None else b"")
        self._stop_reading(conn)
        status = HTTPStatus(refused.status)
        if answer:
            _send_quietly(
                conn.sock,
                f"HTTP/1.1 {status.value} {status.phrase}\r\nConnection: close\r\n"
                "Content-Length: 0\r\n\r\n".encode(),
            )
        self._refusals.add(f"{refused.reason} ({status.value})", conn.client, sample)
        self._close(conn)

    def murder_pending(self) -> None:
        """Called by gthread's loop at least once a second: close the requests that did not
        arrive in time, and say what was refused."""
        super().murder_pending()
        now = time.monotonic()
        for conn in list(self._reading):
            state: _Connection = conn.relay
            if state.deadline > now:
                break  # later ones started later
            started = state.arriving is not None and state.arriving.held > 0
            # Answered when it began a request; a connection that sent nothing is just closed.
            self._refuse(conn, _TIMED_OUT, answer=started)
        for conn in list(self._lingering):
            if conn.relay.deadline > now:
                break
            self._closed_lingering(conn)
        self._say_refusals(self._refusals.due(now))

    def run(self) -> None:
        """gthread's loop; then, as the worker stops, what it refused since its last line."""
        try:
            super().run()
        finally:
            self._say_refusals(self._refusals.due(time.monotonic(), last=True))

    def _say_refusals(self, said: str | None) -> None:
        if said:
            self.log.warning(
                "relay_app: requests refused at the edge: %s (at most one such line a minute)", said
            )

    def finish_request(self, conn: Any, fs: Any) -> None:
        """A thread is done with the connection. A pipelined request already read is read on
        at once: the socket may never be readable for it. One that is done is let go of."""
        state: _Connection | None = getattr(conn, "relay", None)
        if state is None:
            super().finish_request(conn, fs)
            return
        result = None if fs.cancelled() or fs.exception() is not None else fs.result()
        if result is False:
            self._let_go(conn)
        elif state.leftover and result is True:
            self.enqueue_req(conn)
        else:
            super().finish_request(conn, fs)

    def _let_go(self, conn: Any) -> None:
        """Reset when its client did not take an answer; otherwise it lingers."""
        if conn.relay.not_reading:
            self._reset(conn)
        else:
            self._linger(conn)

    def _linger(self, conn: Any) -> None:
        """Its last answer sent: the write side closed (FIN), then what the client still sends
        read and dropped as it comes, so that closing does not reset the connection under an
        answer the client has yet to read (RFC 9112, 9.6)."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
        except OSError:
            self._close(conn)
            return
        conn.relay.deadline = time.monotonic() + LINGER
        self._lingering[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, lambda _sock: self._drain(conn))

    def _drain(self, conn: Any) -> None:
        try:
            data = conn.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        conn.relay.drained += len(data)
        if not data:
            self._closed_lingering(conn, client_closed=True)
        elif conn.relay.drained >= LINGER_BYTES:
            self._closed_lingering(conn)

    def _closed_lingering(self, conn: Any, *, client_closed: bool = False) -> None:
        del self._lingering[conn]
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        if not client_closed and _answers_untaken(conn.sock):
            self._refusals.add(_UNTAKEN, conn.client)
            self._reset(conn)
        else:
            self._close(conn)

    def _reset(self, conn: Any) -> None:
        with contextlib.suppress(OSError):
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
        self._close(conn)

    def _close(self, conn: Any) -> None:
        self.nr_conns -= 1
        conn.close()

    # --- a thread's side ----------------------------------------------------------------

    def handle(self, conn: Any) -> Any:
        """In the thread: the request is whole in memory, and gunicorn parses it from there,
        never from the socket."""
        state: _Connection | None = getattr(conn, "relay", None)
        whole = state.whole if state is not None else None
        if state is None or whole is None:
            return super().handle(conn)
        state.whole, state.leftover = None, whole.leftover
        state.served += 1
        # Its last request: answered with "Connection: close", so that a client keeping the
        # connection alive does not send another on it as it closes.
        state.last = whole.head_only or state.served >= MAX_REQUESTS_PER_CONNECTION
        conn.parser = RequestParser(self.cfg, [whole.request], conn.client)
        conn.data_ready = True  # gthread's own wait for a first byte is not needed
        keepalive = super().handle(conn)
        return keepalive and not state.last

    def handle_request(self, req: Any, conn: Any) -> bool:
        if getattr(conn, "relay", None) is None:
            return bool(super().handle_request(req, conn))
        # The loop sent 100 Continue, if the request was to have one; never again after it.
        req._expected_100_continue = False
        if conn.relay.last:
            req.force_close()
        conn.sock.settimeout(WRITE_TIMEOUT)
        try:
            return bool(super().handle_request(req, conn))
        except TimeoutError:
            # Logged with the loop's refusals, once a minute: an attack must not flood the log.
            self._refusals.add(_SLOW_READER, conn.client)
            conn.relay.not_reading = True
            return False

    def handle_error(self, req: Any, client: Any, addr: Any, einfo: Any) -> None:
        if isinstance(einfo, ParseException):
            # Said with the loop's refusals, once a minute, by its kind (a stranger's bytes
            # choose the rest of gunicorn's message).
            self._refusals.add(f"refused by gunicorn's parser ({type(einfo).__name__})", addr)
        # gunicorn's answer to what its parser refuses: on the clock too.
        with contextlib.suppress(OSError):
            client.settimeout(WRITE_TIMEOUT)
        with contextlib.suppress(TimeoutError):
            super().handle_error(req, client, addr, einfo)


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    # Best effort on a socket that does not block: a client that does not read loses the line.
    with contextlib.suppress(OSError):
        sock.send(data)


def _answers_untaken(sock: socket.socket) -> bool:
    """Whether the client has yet to acknowledge some of what was sent to it (Linux's
    SIOCOUTQ: bytes sent but not acknowledged, and not sent yet). False where that cannot be
    asked: the connection is then closed as before."""
    try:
        queued = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (OSError, ValueError):
        return False
    return bool(struct.unpack("i", queued)[0])


def _peer(client: object) -> str:
    if isinstance(client, tuple) and client:
        return str(client[0])
    return str(client) or "a local socket"
