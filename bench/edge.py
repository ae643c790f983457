"""The webhook's port under attack by someone who does not know the secret: what each attack
costs a worker (its memory), and whether GlitchTip's real webhooks are answered meanwhile.

Starts the real `gunicorn wsgi:app` (the project's gunicorn.conf.py, 2 workers, 32 threads
each) against the fake Telegram, and for each attack below posts a real webhook every
--every seconds while it runs, recording each answer and its time, and samples the workers'
resident memory (VmRSS) ten times a second:

- negative-chunk: one 70-byte chunked request per worker whose chunk size is `-6`.
- chunk-extensions: 1-byte chunks each carrying an 8 KB extension, as fast as one client can.
- big-bodies: 200 connections each sending a 1 MiB body but its last byte, then waiting.
- no-reader: 64 connections pipelining `GET /metrics` and reading no answer.
- drip: 80 clients sending a request line, then a byte a second (connecting again when closed).
- surrogate: webhooks whose link and short id carry a lone surrogate (`\\ud800`, valid JSON);
  "answers" here are theirs, and "in chat" counts those that reached the fake Telegram.
- refused-lines: 2,000 request heads that h11 refuses, each different and 60 KB long
  (`GET /<random><60,000 x a> HTTP/9`), each on a new connection, from 8 clients.
- control-lines: 500 request heads of 60 KB of control bytes, each on a new connection, from 8
  clients: each byte would be four characters in a log line.
- lingering: 32 connections, each asking for one page with `Connection: close`, then neither
  reading the answer, sending, nor closing until the attack ends.

For every attack it also says how much the relay's log grew meanwhile, up to the relay's stop
(at least a minute, --seconds 65, to include a once-a-minute line).

Prints a table. Run by hand (each attack lasts --seconds, default 12):

    .venv/bin/python bench/edge.py [--seconds S] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env, rss_mb  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402
from tests.payloads import issue, issue_alert  # noqa: E402

GLITCHTIP_TIMEOUT = 10.0
MIB = 1024 * 1024


@dataclass
class Result:
    attack: str
    statuses: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    rss_before_mb: float = 0.0
    rss_peak_mb: float = 0.0
    closed_after: list[float] = field(default_factory=list)  # each attack connection's life
    in_chat: int | None = None
    sent: int = 0
    log_grew_mb: float = 0.0

    def row(self) -> str:
        answered = sum(n for status, n in self.statuses.items() if status.isdigit())
        ms = sorted(self.latencies)
        p50 = f"{statistics.median(ms) * 1000:.0f}" if ms else "-"
        worst = f"{ms[-1] * 1000:.0f}" if ms else "-"
        answers = ", ".join(f"{k}x{v}" for k, v in sorted(self.statuses.items()))
        held = sorted(self.closed_after)
        closed = f"{statistics.median(held):.1f} / {held[-1]:.1f}" if held else "-"
        chat = "-" if self.in_chat is None else f"{self.in_chat} of {self.sent}"
        return (
            f"| {self.attack} | {answered} of {self.sent} | {p50} / {worst} | {answers} | "
            f"{self.rss_before_mb:.0f} / {self.rss_peak_mb:.0f} | {closed} | {chat} | "
            f"{self.log_grew_mb:.2f} |"
        )


def rss_or_nothing(pid: int) -> float:
    try:
        return rss_mb(pid)
    except (OSError, ValueError):  # gone meanwhile
        return 0.0


class MemoryWatch:
    """The largest VmRSS any worker reached while it ran."""

    def __init__(self, relay: RelayProcess) -> None:
        self._pids = relay.workers()
        self.before = max(rss_or_nothing(pid) for pid in self._pids)
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max([self.peak, *(rss_or_nothing(pid) for pid in self._pids)])

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(2)


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def lasted(sock: socket.socket, opened: float, until: float, send: Callable[[], bytes]) -> float:
    """Send what `send` gives until the relay closes the connection or `until` passes; how
    long the connection lasted."""
    sock.settimeout(0.5)
    while time.monotonic() < until:
        try:
            sock.sendall(send())
        except TimeoutError:
            continue  # the relay reads nothing: its buffers are full; keep it waiting
        except OSError:
            break
    return time.monotonic() - opened


def read_until_closed(sock: socket.socket, opened: float, until: float) -> float:
    """Wait, reading, until the relay closes the connection or `until` passes; how long the
    connection lasted."""
    sock.settimeout(0.5)
    while time.monotonic() < until:
        try:
            if not sock.recv(65536):
                break
        except TimeoutError:
            continue
        except OSError:
            break
    return time.monotonic() - opened


def in_parallel(clients: int, client: Callable[[], None]) -> None:
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


Attack = Callable[[int, float, list[float]], None]


def negative_chunk(port: int, until: float, closed: list[float]) -> None:
    def one() -> None:
        opened = time.monotonic()
        with connect(port) as sock:
            sock.sendall(
                b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n-6\r\nabcdef\r\n"
            )
            sock.settimeout(0.5)
            while time.monotonic() < until:
                with contextlib.suppress(TimeoutError):
                    if not sock.recv(4096):
                        break
            closed.append(time.monotonic() - opened)

    threads = [threading.Thread(target=one) for _ in range(2)]  # one per worker
    for thread in threads:
        thread.start()
        time.sleep(0.2)
    for thread in threads:
        thread.join()


def chunk_extensions(port: int, until: float, closed: list[float]) -> None:
    piece = b"1;" + b"e" * 8192 + b"\r\nx\r\n"
    while time.monotonic() < until:
        opened = time.monotonic()
        with connect(port) as sock:
            sock.sendall(b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\n")
            sock.sendall(b"Transfer-Encoding: chunked\r\n\r\n")
            closed.append(lasted(sock, opened, until, lambda: piece))


def big_bodies(port: int, until: float, closed: list[float]) -> None:
    body = b"x" * (MIB - 1)
    head = b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\nContent-Length: %d\r\n\r\n" % MIB

    def one() -> None:
        while time.monotonic() < until:
            opened = time.monotonic()
            try:
                with connect(port) as sock:
                    sock.sendall(head + body)
                    closed.append(read_until_closed(sock, opened, until))
            except OSError:
                closed.append(time.monotonic() - opened)
                time.sleep(0.1)

    in_parallel(200, one)


def no_reader(port: int, until: float, closed: list[float]) -> None:
    requests_ = b"GET /metrics HTTP/1.1\r\nHost: relay\r\n\r\n" * 64

    def one() -> None:
        opened = time.monotonic()
        try:
            with connect(port) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                closed.append(lasted(sock, opened, until, lambda: requests_))
        except OSError:
            pass

    in_parallel(64, one)


def drip(port: int, until: float, closed: list[float]) -> None:
    def one() -> None:
        while time.monotonic() < until:
            opened = time.monotonic()
            try:
                with connect(port) as sock:
                    sock.sendall(b"POST /webhook/guess HTTP/1.1\r\n")
                    sock.settimeout(1.0)
                    while time.monotonic() < until:
                        sock.sendall(b"X")
                        with contextlib.suppress(TimeoutError):
                            if sock.recv(4096) == b"":
                                break
                    closed.append(time.monotonic() - opened)
            except OSError:
                closed.append(time.monotonic() - opened)
                time.sleep(0.2)

    in_parallel(80, one)


def refused_heads(port: int, heads: list[bytes], closed: list[float]) -> None:
    """Each head on a connection of its own, from 8 clients, read until the relay closes it."""
    lock = threading.Lock()
    left = iter(heads)

    def one() -> None:
        while True:
            with lock:
                head = next(left, None)
            if head is None:
                return
            opened = time.monotonic()
            try:
                with connect(port) as sock:
                    sock.sendall(head)
                    closed.append(read_until_closed(sock, opened, opened + GLITCHTIP_TIMEOUT))
            except OSError:
                closed.append(time.monotonic() - opened)

    in_parallel(8, one)


def refused_lines(port: int, until: float, closed: list[float]) -> None:
    rng = random.Random(37)
    heads = [
        b"GET /%08x%s HTTP/9\r\nHost: relay\r\n\r\n" % (rng.getrandbits(32), b"a" * 60_000)
        for _ in range(2000)
    ]
    refused_heads(port, heads, closed)


def control_lines(port: int, until: float, closed: list[float]) -> None:
    # Each different: its first three bytes are its number in base 8, as control bytes.
    heads = [
        bytes(1 + (n >> shift) % 8 for shift in (6, 3, 0)) + b"\x01" * 60_000 + b"\r\n\r\n"
        for n in range(500)
    ]
    refused_heads(port, heads, closed)


def lingering(port: int, until: float, closed: list[float]) -> None:
    """32 connections that each ask for one page with `Connection: close`, then neither read
    the answer, send anything, nor close until the attack ends."""
    request = b"GET /healthz HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n"

    def client() -> None:
        with contextlib.suppress(OSError), connect(port) as sock:
            sock.sendall(request)
            time.sleep(max(0.0, until - time.monotonic()))

    in_parallel(32, client)


def nothing(port: int, until: float, closed: list[float]) -> None:
    time.sleep(max(0.0, until - time.monotonic()))


ATTACKS: dict[str, Attack] = {
    "none": nothing,
    "negative-chunk": negative_chunk,
    "chunk-extensions": chunk_extensions,
    "big-bodies": big_bodies,
    "no-reader": no_reader,
    "drip": drip,
    "surrogate": nothing,
    "refused-lines": refused_lines,
    "control-lines": control_lines,
    "lingering": lingering,
}


def surrogate_alert(number: int) -> str:
    alert = issue_alert(issue(number, link=f"https://gt.example.org/a/issues/{number}"))
    body = json.dumps(alert)
    # A lone surrogate, as GlitchTip's JSON could carry it: valid JSON, not valid UTF-8 text.
    return body.replace(f"/issues/{number}", f"/issues/{number}\\ud800").replace(
        "View Issue", "View Issue \\ud800"
    )


def post_webhooks(
    url: str, until: float, every: float, result: Result, body: Callable[[int], str]
) -> None:
    number = 0
    while time.monotonic() < until:
        number += 1
        started = time.monotonic()
        result.sent += 1
        try:
            reply = requests.post(
                url,
                data=body(number).encode(),
                headers={"Content-Type": "application/json"},
                timeout=GLITCHTIP_TIMEOUT,
            )
            result.statuses[str(reply.status_code)] += 1
            result.latencies.append(time.monotonic() - started)
        except requests.Timeout:
            result.statuses["timed out"] += 1
        except requests.ConnectionError:
            result.statuses["refused"] += 1
        time.sleep(max(0.0, started + every - time.monotonic()))


def run(name: str, logs: Path, seconds: float, every: float) -> Result:
    with running_fake_telegram() as fake:
        return attacked(name, fake, logs, seconds, every)


def attacked(name: str, fake: FakeTelegram, logs: Path, seconds: float, every: float) -> Result:
    env = relay_env(fake, WEB_CONCURRENCY="2", RELAY_SPOOL_PATH=str(logs / f"{name}.sqlite3"))
    env.pop("TELEGRAM_THREAD_ID")
    relay = RelayProcess(env, logs / f"{name}.log").wait_ready()
    result = Result(name)
    try:
        time.sleep(1.0)  # both workers booted and idle
        log_before = relay.log_path.stat().st_size
        with MemoryWatch(relay) as memory:
            until = time.monotonic() + seconds
            attacker = threading.Thread(
                target=ATTACKS[name], args=(relay.port, until, result.closed_after)
            )
            attacker.start()
            time.sleep(0.5)  # the attack under way first

            def body(number: int) -> str:
                if name == "surrogate":
                    return surrogate_alert(number)
                return json.dumps(issue_alert(issue(number)))

            post_webhooks(relay.webhook_url, until, every, result, body)
            attacker.join(GLITCHTIP_TIMEOUT + 5)
        result.rss_before_mb, result.rss_peak_mb = memory.before, memory.peak
        if name == "surrogate":
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and len(fake.posted_to(CHAT_ID)) < result.sent:
                time.sleep(0.2)
            texts = "\n".join(fake.texts())
            result.in_chat = sum(
                f"ZeroDivisionError: division by zero #{n}" in texts
                for n in range(1, result.sent + 1)
            )
    finally:
        relay.stop()
    # After the stop: what the workers said of the attack as they stopped counts too.
    result.log_grew_mb = (relay.log_path.stat().st_size - log_before) / MIB
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="each attack's length")
    parser.add_argument("--every", type=float, default=0.5, help="seconds between webhooks")
    parser.add_argument("--only", nargs="*", choices=sorted(ATTACKS), help="these attacks")
    args = parser.parse_args()
    names = args.only or list(ATTACKS)
    results = []
    with tempfile.TemporaryDirectory() as logs:
        for name in names:
            results.append(run(name, Path(logs), args.seconds, args.every))
            print(f"{name}: done", file=sys.stderr)
    print(
        "| attack | webhooks answered | answer p50 / max ms | answers | worker RSS before / "
        "peak MB | attack connection held p50 / max s | alerts in the chat | log grew MB |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for result in results:
        print(result.row())


if __name__ == "__main__":
    main()
