"""The webhook's port tried by someone who does not know the secret, against the real
`gunicorn wsgi:app` (2 workers): nothing they send may hang a worker, make it hold more than its
caps, or keep GlitchTip's webhook from being answered. docs/security.md gives the caps.

One relay serves the whole module (none of these tests stops it); at the end, its workers must
never have been restarted."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from relay_app.web.framing import MAX_REQUEST_BYTES
from relay_app.web.http_worker import (
    MAX_REQUESTS_PER_CONNECTION,
    WORKER_HOLD_BYTES,
    WRITE_TIMEOUT,
)
from tests.e2e.helpers import post, wait_until
from tests.e2e.relay_process import SECRET, RelayProcess, relay_of_its_own, rss_mb
from tests.fake_telegram import FakeTelegram
from tests.payloads import issue, issue_alert

MIB = 1024 * 1024
# A webhook answered in this is answered: GlitchTip waits 10 s, and an idle relay answers in
# milliseconds; a hung worker does not answer at all.
PROMPTLY = 3.0


@dataclass
class Edge:
    relay: RelayProcess
    fake: FakeTelegram
    numbers: Iterator[int]

    def webhook_answered(self) -> None:
        """GlitchTip's webhook, answered promptly with an alert taken."""
        reply, seconds = post(self.relay.webhook_url, issue_alert(issue(next(self.numbers))))
        assert reply.status_code in (200, 202), reply.text
        assert seconds < PROMPTLY


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    with relay_of_its_own(tmp_path_factory.mktemp("edge"), workers=2) as (relay, fake):
        yield Edge(relay, fake, iter(range(1, 100_000)))


def answer_of(sock: socket.socket, within: float) -> bytes:
    """What the relay sent before it closed the connection (at most `within` seconds)."""
    sock.settimeout(within)
    received = b""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not data:
            break
        received += data
    return received


def connect(edge: Edge) -> socket.socket:
    return socket.create_connection(("127.0.0.1", edge.relay.port), timeout=5)


def test_a_chunked_request_is_refused_at_once_and_a_negative_chunk_size_hangs_nothing(
    edge: Edge,
) -> None:
    # Two such requests per worker hung both for good on the hand-written chunk reader.
    socks = [connect(edge) for _ in range(4)]
    for sock in socks:
        sock.sendall(
            b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n-6\r\nabcdef\r\n"
        )
    for sock in socks:
        with sock:
            assert answer_of(sock, within=PROMPTLY).startswith(b"HTTP/1.1 411 ")
    edge.webhook_answered()


def test_chunk_extensions_cannot_make_a_worker_hold_memory(edge: Edge) -> None:
    # 1-byte chunks with 8 KB extensions took a worker from 49 MB to 759 MB in 6 s.
    before = {pid: rss_mb(pid) for pid in edge.relay.workers()}
    piece = b"1;" + b"e" * 8192 + b"\r\nx\r\n"
    with connect(edge) as sock:
        sock.sendall(b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\n")
        sock.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
        sent, closed = 0, False
        for _ in range(20_000):  # 160 MB at most
            try:
                sock.sendall(piece)
            except OSError:  # closed by the relay: the sender cannot go on
                closed = True
                break
            sent += len(piece)
    assert closed
    assert sent < 16 * MIB
    for pid, rss in before.items():
        assert rss_mb(pid) < rss + 16
    edge.webhook_answered()


def test_a_body_over_the_limit_is_answered_413_without_being_read(edge: Edge) -> None:
    with connect(edge) as sock:
        sock.sendall(
            f"POST /webhook/{SECRET} HTTP/1.1\r\nHost: relay\r\n"
            f"Content-Type: application/json\r\nContent-Length: {100 * MIB}\r\n\r\n".encode()
        )
        assert answer_of(sock, within=PROMPTLY).startswith(b"HTTP/1.1 413 ")


def test_a_worker_holds_at_most_its_cap_for_requests_still_arriving(edge: Edge) -> None:
    # Each connection sends all of a 1 MiB body but its last byte, then waits: 160 MiB offered
    # to two workers. Each holds its cap at most; the largest arriving requests are refused.
    workers = edge.relay.workers()
    before = {pid: rss_mb(pid) for pid in workers}
    peak = dict(before)
    head = b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\nContent-Length: %d\r\n\r\n" % MIB
    answers: list[bytes] = []
    lock = threading.Lock()

    def almost_whole() -> None:
        try:
            with connect(edge) as sock:
                sock.sendall(head + b"x" * (MIB - 1))
                answer = answer_of(sock, within=8)
        except OSError as exc:  # refused while sending: the relay closed it
            answer = repr(exc).encode()
        with lock:
            answers.append(answer)

    senders = [threading.Thread(target=almost_whole) for _ in range(160)]
    for sender in senders:
        sender.start()
    deadline = time.monotonic() + 20
    while any(sender.is_alive() for sender in senders) and time.monotonic() < deadline:
        peak = {pid: max(peak[pid], rss_mb(pid)) for pid in workers}
        time.sleep(0.05)
    for sender in senders:
        sender.join(5)
    cap_mb = (WORKER_HOLD_BYTES + MAX_REQUEST_BYTES) / MIB
    for pid in workers:
        assert peak[pid] - before[pid] < 2 * cap_mb, (before, peak)
    shed = [answer for answer in answers if answer.startswith(b"HTTP/1.1 503 ")]
    timed_out = [answer for answer in answers if answer.startswith(b"HTTP/1.1 408 ")]
    assert shed
    assert len(shed) + len(timed_out) == len(answers) - sum(b"Error" in a for a in answers)
    edge.webhook_answered()


def test_a_client_that_reads_no_answers_loses_its_connection_within_seconds(edge: Edge) -> None:
    # 64 connections (as many as the two workers' threads) pipeline requests and read nothing:
    # before, each held a thread in send() for as long as it stayed.
    pipelined = b"GET /metrics HTTP/1.1\r\nHost: relay\r\n\r\n" * 32
    lasted: list[float] = []
    lock = threading.Lock()

    connected: list[int] = []

    def never_reads() -> None:
        opened = time.monotonic()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(0.5)
            sock.connect(("127.0.0.1", edge.relay.port))
            with lock:
                connected.append(1)
            while time.monotonic() - opened < 30:
                try:
                    sock.sendall(pipelined)
                except TimeoutError:
                    continue  # the relay reads nothing more meanwhile
                except OSError:
                    break  # closed by the relay
        with lock:
            lasted.append(time.monotonic() - opened)

    clients = [threading.Thread(target=never_reads) for _ in range(64)]
    for client in clients:
        client.start()
    assert wait_until(lambda: len(connected) == len(clients), timeout=5)  # all of them at it
    for _ in range(3):
        edge.webhook_answered()
    for client in clients:
        client.join(40)
    # Each answer must be taken within WRITE_TIMEOUT, and a connection serves at most
    # MAX_REQUESTS_PER_CONNECTION: then it is closed, whatever the client does. The margin is
    # 64 clients noticing the close on two busy cores (10.2 s seen in CI); a connection the
    # relay held would last the client's whole 30 s.
    assert MAX_REQUESTS_PER_CONNECTION <= 100
    assert max(lasted) < WRITE_TIMEOUT + 10, sorted(lasted)


def test_a_kept_alive_connection_is_told_before_it_closes(edge: Edge) -> None:
    # After its last request a connection closes: a client that keeps connections alive must
    # be told, or it sends its next request as the connection closes, and loses it.
    session = requests.Session()
    closing = []
    for _ in range(MAX_REQUESTS_PER_CONNECTION + 5):
        reply = session.get(f"{edge.relay.url}/healthz", timeout=PROMPTLY)
        assert reply.status_code == 200
        closing.append(reply.headers.get("Connection") == "close")
    assert closing.index(True) == MAX_REQUESTS_PER_CONNECTION - 1
    session.close()


def test_100_continue_only_after_the_secret_and_the_size_are_acceptable(edge: Edge) -> None:
    body = json.dumps(issue_alert(issue(next(edge.numbers)))).encode()

    def head(secret: str, length: int) -> bytes:
        return (
            f"POST /webhook/{secret} HTTP/1.1\r\nHost: relay\r\nExpect: 100-continue\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
        ).encode()

    with connect(edge) as wrong:
        wrong.sendall(head("not-the-secret-0123456789", len(body)))
        assert answer_of(wrong, within=PROMPTLY).startswith(b"HTTP/1.1 404 ")
    with connect(edge) as too_large:
        too_large.sendall(head(SECRET, 2 * MIB))
        assert answer_of(too_large, within=PROMPTLY).startswith(b"HTTP/1.1 413 ")
    with connect(edge) as right:
        right.sendall(head(SECRET, len(body)))
        right.settimeout(PROMPTLY)
        assert right.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        right.sendall(body)
        answer = right.recv(65536)
        assert answer.split(b"\r\n", 1)[0] in (b"HTTP/1.1 200 OK", b"HTTP/1.1 202 ACCEPTED")
        assert b"100 Continue" not in answer  # said once, by the worker, not again by gunicorn


def test_a_lone_surrogate_in_an_alert_costs_it_nothing(edge: Edge) -> None:
    # Valid JSON, not valid text: the spool's insert raised, the webhook got 500, and the alert
    # was neither kept, sent, nor logged with its text.
    number = next(edge.numbers)
    alert = json.dumps(issue_alert(issue(number, title=f"Boom #{number}")))
    body = alert.replace(f"/issues/{number}", f"/issues/{number}\\ud800").replace(
        "View Issue ", "View Issue \\ud800"
    )
    assert "\\ud800" in body
    with connect(edge) as sock:
        sock.sendall(
            (
                f"POST /webhook/{SECRET} HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
            ).encode()
        )
        answer = answer_of(sock, within=PROMPTLY)
    assert answer.split(b" ", 2)[1] in (b"200", b"202"), answer

    def arrived() -> bool:
        return any(f"Boom #{number}" in text for text in edge.fake.texts())

    assert wait_until(arrived, timeout=15)


def test_requests_gunicorns_parser_refuses_are_counted_not_logged_one_line_each(
    tmp_path: Path,
) -> None:
    # h11 frames a lower-case method; gunicorn's parser then refuses it. Each such request wrote
    # a WARNING line of gunicorn's own: a stranger could fill the log at will.
    with relay_of_its_own(tmp_path, workers=2) as (relay, _):
        for _ in range(50):
            with socket.create_connection(("127.0.0.1", relay.port), timeout=5) as sock:
                sock.sendall(b"get / HTTP/1.1\r\nHost: relay\r\n\r\n")
                assert answer_of(sock, within=PROMPTLY).startswith(b"HTTP/1.1 400 ")
        counted = "refused by gunicorn's parser (InvalidRequestMethod); from 127.0.0.1"
        assert wait_until(lambda: counted in relay.logs(), timeout=PROMPTLY)
        logs = relay.logs()
        assert "Invalid request from ip=" not in logs
        # Each worker says its first at once; the rest are counted for its line a minute on.
        assert 1 <= logs.count("requests refused at the edge") <= 2
