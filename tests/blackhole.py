"""A TCP proxy on 127.0.0.1 that can stop passing bytes while keeping every connection open: a
network partition as a client sees it (its writes are taken, no answer ever comes), which a
closed port or a stopped server cannot show."""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class Blackhole:
    def __init__(self, target_port: int) -> None:
        self._target = ("127.0.0.1", target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._frozen = threading.Event()
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        """From now on nothing passes, either way, on any connection."""
        self._frozen.set()

    def thaw(self) -> None:
        self._frozen.clear()

    def close(self) -> None:
        self._stopped.set()
        for sock in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            # Kept at once, so that close() closes it whenever it comes.
            self._sockets.append(client)
            try:
                server = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()  # the server did not take it: neither does the proxy
                continue
            self._sockets.append(server)
            if self._stopped.is_set():  # closed while this one was being connected
                for sock in (client, server):
                    sock.close()
                return
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, client: socket.socket, server: socket.socket) -> None:
        peers = {client: server, server: client}
        while not self._stopped.is_set():
            try:
                readable, _, _ = select.select(list(peers), [], [], 0.1)
            except (OSError, ValueError):
                return
            if self._frozen.is_set():
                continue  # take nothing, pass nothing: the peers wait
            for sock in readable:
                try:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
                except OSError:
                    return
