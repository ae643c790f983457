"""A hard wall-clock deadline for one HTTP exchange made with requests (and, through
`Deadline.watch`, for one unit of work on the PostgreSQL spool's connection).

requests' timeouts bound each socket operation, not the exchange: a server that answers one
byte every few seconds keeps a call alive indefinitely, and GlitchTip stops waiting for us after
10 s. Here every socket used inside a `Deadline` block is registered with it, and when time is
up a watchdog thread (one per process) shuts those sockets down, which wakes the blocked read at
once with an error.

Sockets are registered from urllib3's connection classes (on connect, and on each request over
a kept-alive connection), installed into the session by `DeadlineAdapter`, the SOCKS proxy's
too (HTTPS_PROXY=socks5h://...): there the socket is registered before the proxy's handshake,
so a proxy that stalls is cut off at the same deadline.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from types import TracebackType
from typing import Any

import socks
from requests.adapters import HTTPAdapter
from urllib3 import poolmanager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.contrib.socks import (
    SOCKSConnection,
    SOCKSHTTPConnectionPool,
    SOCKSHTTPSConnection,
    SOCKSHTTPSConnectionPool,
    SOCKSProxyManager,
)
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from .process import PerProcess


class Deadline:
    """`with Deadline(seconds) as deadline:` aborts the block's sockets after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = False

    def __enter__(self) -> Deadline:
        _deadlines.enter(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _deadlines.leave(self)
        with self._lock:
            self._done = True
            self._sockets.clear()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self._done:
                return
            if self.expired:
                _abort(sock)
            else:
                self._sockets.append(sock)

    def expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _abort(sock)


class _Deadlines(PerProcess):
    """This process's deadlines: the one each thread is in (its sockets are registered with
    it as they are made), and one thread that expires them all: a timer thread per request
    would cost more than the relay's own work on it. Precision is one tick, far below what
    GlitchTip notices."""

    TICK = 0.02

    def __init__(self) -> None:
        self._start_in_this_process()

    def _start_over(self) -> None:
        self._lock = threading.Lock()
        self._active: set[Deadline] = set()
        self._busy = threading.Event()
        self._thread: threading.Thread | None = None
        self._each_thread = threading.local()

    def enter(self, deadline: Deadline) -> None:
        self._here()
        self._each_thread.deadline = deadline
        with self._lock:
            self._active.add(deadline)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="relay-deadline-watchdog", daemon=True
                )
                self._thread.start()
        self._busy.set()

    def leave(self, deadline: Deadline) -> None:
        if self._pid != os.getpid():
            return  # the parent's deadline: never watched here
        self._each_thread.deadline = None
        with self._lock:
            self._active.discard(deadline)

    def current(self) -> Deadline | None:
        """The deadline the calling thread is in, if any."""
        if self._pid != os.getpid():
            return None
        deadline: Deadline | None = getattr(self._each_thread, "deadline", None)
        return deadline

    def _run(self) -> None:
        while True:
            self._busy.wait()  # idle, costing nothing, while no request is in flight
            time.sleep(self.TICK)
            now = time.monotonic()
            with self._lock:
                expired = [deadline for deadline in self._active if deadline.at <= now]
                self._active.difference_update(expired)
                if not self._active:
                    self._busy.clear()
            for deadline in expired:
                deadline.expire()


_deadlines = _Deadlines()


def _abort(sock: socket.socket) -> None:
    # OSError: already closed, nothing left to abort.
    with contextlib.suppress(OSError):
        # The base class method on purpose: SSLSocket.shutdown would also drop its SSL object
        # under the feet of the thread that is reading from it.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _watch_current(sock: socket.socket | None) -> None:
    deadline = _deadlines.current()
    if deadline is not None and sock is not None:
        deadline.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _watch_current(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch_current(self.sock)  # a kept-alive connection: connect() is not called again
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _watch_current(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch_current(self.sock)
        super().request(*args, **kwargs)


class _WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


def _through_socks(connection: SOCKSConnection) -> socks.socksocket:
    """A connection through the SOCKS proxy, its socket watched from before the proxy's
    handshake (PySocks' own create_connection hands it over only once that is done)."""
    options = connection._socks_options
    host, port = options["proxy_host"], int(options["proxy_port"] or 1080)
    try:
        family, kind, proto, _, _ = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socks.socksocket(family, kind, proto)
    except OSError as exc:
        raise NewConnectionError(connection, f"the SOCKS proxy {host}:{port}: {exc}") from None
    sock.set_proxy(
        options["socks_version"],
        host,
        port,
        rdns=options["rdns"],
        username=options["username"],
        password=options["password"],
    )
    sock.settimeout(connection.timeout)
    _watch_current(sock)
    try:
        sock.connect((connection.host, connection.port))
    except TimeoutError:
        sock.close()
        raise ConnectTimeoutError(connection, f"the SOCKS proxy {host}:{port} timed out") from None
    except (socks.ProxyError, OSError) as exc:
        sock.close()
        raise NewConnectionError(connection, f"the SOCKS proxy {host}:{port}: {exc}") from None
    return sock


class _WatchedSOCKSConnection(SOCKSConnection):
    def _new_conn(self) -> socks.socksocket:
        return _through_socks(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch_current(self.sock)
        super().request(*args, **kwargs)


class _WatchedSOCKSHTTPSConnection(SOCKSHTTPSConnection):
    def _new_conn(self) -> socks.socksocket:
        return _through_socks(self)

    def connect(self) -> None:
        super().connect()
        _watch_current(self.sock)  # the TLS socket over the proxy's

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch_current(self.sock)
        super().request(*args, **kwargs)


class _WatchedSOCKSHTTPConnectionPool(SOCKSHTTPConnectionPool):
    ConnectionCls = _WatchedSOCKSConnection


class _WatchedSOCKSHTTPSConnectionPool(SOCKSHTTPSConnectionPool):
    ConnectionCls = _WatchedSOCKSHTTPSConnection


def _use_watched_pools(manager: poolmanager.PoolManager) -> None:
    if isinstance(manager, SOCKSProxyManager):
        manager.pool_classes_by_scheme = {
            "http": _WatchedSOCKSHTTPConnectionPool,
            "https": _WatchedSOCKSHTTPSConnectionPool,
        }
    elif manager.pool_classes_by_scheme is poolmanager.pool_classes_by_scheme:
        manager.pool_classes_by_scheme = {
            "http": _WatchedHTTPConnectionPool,
            "https": _WatchedHTTPSConnectionPool,
        }


class DeadlineAdapter(HTTPAdapter):
    """An HTTPAdapter whose connections can be aborted by an enclosing `Deadline`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _use_watched_pools(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        _use_watched_pools(manager)
        return manager
