"""The webhook's listener fed thousands of generated requests (hypothesis): mutated real
webhooks, requests framed at random, chunked bodies with any chunk lines, sent in any pieces.
Against the real `gunicorn wsgi:app` with one worker, so that every request meets the same
event loop. The invariants (docs/security.md): each request is answered or its connection
closed within the deadline; the worker's memory stays within its caps; GlitchTip's webhook,
posted with every batch, is answered every time; and the worker is never restarted.

The examples are derandomized: the same thousands each run, so that a failure is a finding to
fix, never a flake.
"""

from __future__ import annotations

import itertools
import json
import random
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from relay_app.web.framing import MAX_REQUEST_BYTES
from relay_app.web.http_worker import WORKER_HOLD_BYTES
from tests.e2e.relay_process import SECRET, RelayProcess, relay_of_its_own, rss_mb
from tests.payloads import issue, issue_alert

MIB = 1024 * 1024
BATCH = 20  # requests sent at once, each on a connection of its own
EXAMPLES = 200  # batches: 4000 requests
# Each request's connection half-closes once it is sent, so the worker sees the end of what
# will come: it must answer or close at once, and never later than this.
DEADLINE = 3.0
GLITCHTIP_WAITS = 10.0
PROMPTLY = 3.0

WEBHOOK = f"/webhook/{SECRET}".encode()
REAL_BODY = json.dumps(issue_alert(issue(1))).encode()
REAL = (
    b"POST " + WEBHOOK + b" HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(REAL_BODY) + REAL_BODY
)


# --- what a stranger may send ------------------------------------------------------------------

EOL = st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n", b"\r", b"\r\r\n", b""])
METHOD = st.one_of(
    st.sampled_from([b"POST", b"GET", b"PUT", b"post", b"CONNECT", b"PRI", b"OPTIONS"]),
    st.binary(min_size=0, max_size=8),
)
TARGET = st.one_of(
    st.sampled_from(
        [WEBHOOK, WEBHOOK + b"/", b"/webhook/guess", b"/healthz", b"/metrics", b"*", b"/" * 3000]
    ),
    st.binary(max_size=40).map(lambda junk: WEBHOOK + b"?" + junk),
    st.binary(max_size=40),
)
VERSION = st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1 ", b"HTTP/9", b""])
NAME = st.one_of(
    st.sampled_from(
        [
            b"Host",
            b"Content-Length",
            b"content-length",
            b"Content-Length ",
            b" Content-Length",
            b"Transfer-Encoding",
            b"Transfer-Encoding\t",
            b"Expect",
            b"Connection",
            b"Content-Type",
            b"Upgrade",
            b"X-Telegram-Bot-Api-Secret-Token",
        ]
    ),
    st.binary(max_size=20),
)
VALUE = st.one_of(
    st.sampled_from(
        [
            b"relay",
            b"chunked",
            b"chunked, gzip",
            b"gzip",
            b"100-continue",
            b"close",
            b"keep-alive",
            b"upgrade",
            b"h2c",
            b"application/json",
            b"-6",
            b"0x10",
            b"5_0",
            b" 5",
            b"1e3",
            b"99999999999999999999",
        ]
    ),
    st.integers(min_value=-5, max_value=2 * MIB).map(lambda n: str(n).encode()),
    st.binary(max_size=60),
)
BODY = st.one_of(
    st.just(REAL_BODY),
    st.binary(max_size=300),
    st.integers(min_value=0, max_value=2 * MIB).map(lambda n: b"x" * n),
)
CHUNK_LINE = st.one_of(
    st.sampled_from(
        [
            b"-6",
            b"0x5",
            b"5",
            b"ff",
            b" 5",
            b"5 ",
            b"+5",
            b"5_0",
            b"0",
            b"FFFFFFFFFFFFFFFFFFFFFFFF",
            b"1;" + b"e" * 8192,
            b"5;name=value",
        ]
    ),
    st.binary(max_size=12),
)


@st.composite
def framed(draw: st.DrawFn) -> bytes:
    """A request put together from parts, any of them wrong."""
    eol = draw(EOL)
    line = draw(METHOD) + b" " + draw(TARGET) + b" " + draw(VERSION)
    headers = draw(st.lists(st.tuples(NAME, VALUE), max_size=8))
    separator = draw(st.sampled_from([b": ", b":", b" : ", b""]))
    head = line + eol + b"".join(name + separator + value + eol for name, value in headers)
    return head + eol + draw(BODY)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A real webhook, with a few bytes changed, added, removed or cut."""
    data = bytearray(REAL)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=max(0, len(data) - 1)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "cut", "double"]))
        if kind == "flip" and data:
            data[at] = draw(st.integers(min_value=0, max_value=255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(min_value=1, max_value=16))]
        elif kind == "cut":
            del data[at:]
        else:  # a header line, or the whole request, said twice
            end = data.find(b"\r\n", at)
            data[end:end] = data[at:end] if end > at else data
    return bytes(data)


@st.composite
def chunked(draw: st.DrawFn) -> bytes:
    """A chunked body, with any chunk lines and data between them."""
    eol = draw(EOL)
    head = b"POST " + draw(TARGET) + b" HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: chunked\r\n"
    body = b"".join(
        line + eol + draw(st.binary(max_size=20)) + eol for line in draw(st.lists(CHUNK_LINE))
    )
    return head + b"\r\n" + body


REQUEST = st.one_of(framed(), mutated(), chunked())


@dataclass
class Sending:
    """One generated request on its own connection, sent in pieces."""

    sock: socket.socket
    pieces: list[bytes]
    deadline: float = 0.0
    answer: bytes = b""
    done: bool = False


def pieces_of(data: bytes, cuts: list[int]) -> list[bytes]:
    at = sorted({cut % (len(data) + 1) for cut in cuts})
    bounds = [0, *at, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def send_all(port: int, requests_: list[tuple[bytes, list[int]]]) -> list[Sending]:
    """Send each request on a connection of its own, in its pieces, half-close, and read until
    the relay closes it; each must end within DEADLINE."""
    selector = selectors.DefaultSelector()
    sendings = []
    for data, cuts in requests_:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setblocking(False)
        sending = Sending(sock, pieces_of(data, cuts))
        sendings.append(sending)
        if sending.pieces:
            selector.register(sock, selectors.EVENT_WRITE | selectors.EVENT_READ, sending)
        else:  # nothing to send: the end of it at once
            sock.shutdown(socket.SHUT_WR)
            selector.register(sock, selectors.EVENT_READ, sending)
    started = time.monotonic()
    for sending in sendings:
        sending.deadline = started + DEADLINE
    open_ = len(sendings)
    while open_ and time.monotonic() < started + DEADLINE + 1:
        for key, events in selector.select(timeout=0.1):
            sending = key.data
            if events & selectors.EVENT_WRITE and sending.pieces:
                try:
                    sent = sending.sock.send(sending.pieces[0])
                    sending.pieces[0] = sending.pieces[0][sent:]
                    if not sending.pieces[0]:
                        sending.pieces.pop(0)
                    if not sending.pieces:
                        sending.sock.shutdown(socket.SHUT_WR)
                        selector.modify(sending.sock, selectors.EVENT_READ, sending)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    sending.pieces = []  # refused mid-way: what it answered is still read
                    selector.modify(sending.sock, selectors.EVENT_READ, sending)
            if events & selectors.EVENT_READ:
                try:
                    data = sending.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    sending.answer += data
                    continue
                sending.done = True
                open_ -= 1
                selector.unregister(sending.sock)
                sending.sock.close()
    for sending in sendings:
        if not sending.done:
            sending.sock.close()
    selector.close()
    return sendings


def glitchtip_posts(url: str, answers: list[tuple[int | str, float]]) -> None:
    """GlitchTip's real webhook, as it posts it: the answer's status (or what failed), and how
    long it took."""
    started = time.monotonic()
    try:
        reply = requests.post(url, data=REAL_BODY, timeout=GLITCHTIP_WAITS)
        answers.append((reply.status_code, time.monotonic() - started))
    except requests.RequestException as exc:
        answers.append((type(exc).__name__, time.monotonic() - started))


@dataclass
class Fuzzed:
    relay: RelayProcess
    worker: int
    rss_before: float
    rss_peak: float = 0.0
    late: list[bytes] = field(default_factory=list)
    sent: int = 0


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    directory = tmp_path_factory.mktemp("fuzz")
    with relay_of_its_own(directory, workers=1, RELAY_SPOOL_MAX_PENDING="100000") as (relay, _):
        [worker] = relay.workers()
        yield Fuzzed(relay, worker, rss_mb(worker))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    # A failure shows the batch as generated: shrinking a batch of twenty takes minutes.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    batch=st.lists(
        st.tuples(REQUEST, st.lists(st.integers(min_value=0), max_size=3)),
        min_size=BATCH,
        max_size=BATCH,
    )
)
def test_every_request_is_answered_or_closed_in_time_within_the_workers_caps(
    fuzzed: Fuzzed, batch: list[tuple[bytes, list[int]]]
) -> None:
    random.Random(0).shuffle(batch)
    # GlitchTip's webhook, posted while the batch arrives.
    glitchtip: list[tuple[int | str, float]] = []
    poster = threading.Thread(target=glitchtip_posts, args=(fuzzed.relay.webhook_url, glitchtip))
    poster.start()
    sendings = send_all(fuzzed.relay.port, batch)
    poster.join(GLITCHTIP_WAITS + 1)
    fuzzed.sent += len(sendings)
    late = [sending for sending in sendings if not sending.done]
    assert late == [], [s.answer[:80] for s in late]
    [(status, seconds)] = glitchtip
    assert status in (200, 202)
    assert seconds < PROMPTLY
    fuzzed.rss_peak = max(fuzzed.rss_peak, rss_mb(fuzzed.worker))
    caps_mb = (WORKER_HOLD_BYTES + 32 * MAX_REQUEST_BYTES) / MIB
    assert fuzzed.rss_peak - fuzzed.rss_before < caps_mb
