"""A SOCKS5 proxy on 127.0.0.1 for the tests (RFC 1928: no authentication, CONNECT only), as an
SSH tunnel or a local proxy client offers one. `stall` makes it accept connections and never
answer the handshake: a proxy that hangs. It counts the connections it carried."""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Every relayed read waits at most this long, so a test's proxy never outlives it for long.
IDLE_LIMIT = 30.0


class SocksProxy:
    def __init__(self) -> None:
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port: int = self._server.getsockname()[1]
        self.stall = False
        self.carried: list[tuple[str, int]] = []  # (host, port) of each CONNECT
        self._lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"socks5h://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop listening: connections to its port are refused from now on."""
        self._closed.set()
        with contextlib.suppress(OSError):
            # Wakes the accepting thread: closing alone leaves the socket listening meanwhile.
            self._server.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._server.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            client.settimeout(IDLE_LIMIT)
            if self.stall:
                self._closed.wait(IDLE_LIMIT)
                return
            try:
                target = self._handshake(client)
            except (OSError, ValueError):
                return
            if target is None:
                return
            with self._lock:
                self.carried.append(target)
            try:
                upstream = socket.create_connection(target, timeout=IDLE_LIMIT)
            except OSError:
                client.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")  # refused
                return
            with upstream:
                client.sendall(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
                _relay(client, upstream)

    def _handshake(self, client: socket.socket) -> tuple[str, int] | None:
        version, methods = _read(client, 2)
        _read(client, methods)
        if version != 5:
            return None
        client.sendall(b"\x05\x00")  # no authentication
        _, command, _, kind = _read(client, 4)
        if kind == 1:
            host = socket.inet_ntoa(bytes(_read(client, 4)))
        elif kind == 3:
            host = bytes(_read(client, _read(client, 1)[0])).decode()
        else:
            return None
        (port,) = struct.unpack("!H", bytes(_read(client, 2)))
        return (host, port) if command == 1 else None


def _read(sock: socket.socket, count: int) -> bytearray:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ValueError("the client hung up mid-handshake")
        data += chunk
    return data


def _relay(one: socket.socket, other: socket.socket) -> None:
    pair = {one: other, other: one}
    while True:
        ready, _, _ = select.select(list(pair), [], [], IDLE_LIMIT)
        if not ready:
            return
        for sock in ready:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            pair[sock].sendall(data)


@contextmanager
def running_socks_proxy() -> Iterator[SocksProxy]:
    proxy = SocksProxy()
    try:
        yield proxy
    finally:
        proxy.close()
