"""A webhook's cost against its number of issues, and GlitchTip's webhook while slow clients drip.

1. Issue alerts naming 100, 1000 and 10 000 issues (compact attachments: a title, a link and a
   colour, so that 10 000 fit in the 1 MiB a webhook may have), each posted --rounds times to
   the real `gunicorn wsgi:app` (the project's gunicorn.conf.py, 2 workers) against the fake
   Telegram, and the same payloads built into their message in this process. Reports the
   medians: the cost must grow linearly with the size, and a webhook must be answered well
   inside GlitchTip's 10 s.
2. 80 clients that each send a request line and then a byte a second (and connect again when
   closed), while GlitchTip's webhook is posted every second: its answer times, and how long
   the relay let each slow client hold its connection.

Run by hand:

    .venv/bin/python bench/webhook_size.py [--rounds N] [--drip-seconds S]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app.capabilities import REGISTRY  # noqa: E402
from relay_app.core.json_body import payload_from_json  # noqa: E402
from relay_app.glitchtip.webhook import read_webhook  # noqa: E402
from relay_app.message.formatting import message_for  # noqa: E402
from relay_app.words import ENGLISH  # noqa: E402
from tests.e2e.helpers import post  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import running_fake_telegram  # noqa: E402
from tests.payloads import issue_alert  # noqa: E402

SOURCES = REGISTRY.sources

SIZES = (100, 1000, 10_000)
SLOW_CLIENTS = 80
CHATS = [f"-100100000{n:04d}" for n in range(100)]


def payload(issues: int) -> dict[str, Any]:
    attachments = [
        {"title": f"E{n}", "title_link": f"https://gt.example.org/a/issues/{n}", "color": "#e52b50"}
        for n in range(1, issues + 1)
    ]
    alert = issue_alert(*attachments)
    del alert["sections"]  # GlitchTip's copy of the same issues, for Microsoft Teams
    return alert


def build_ms(body: bytes, rounds: int) -> float:
    """The webhook's own work on its body, in this process: JSON in, message out."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        message_for(read_webhook(payload_from_json(body)), ENGLISH, sources=SOURCES)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def sizes_table(relay: RelayProcess, rounds: int) -> None:
    print(
        "| issues | payload KiB | read and built, median ms "
        "| webhook answered (sent), median ms | answers |"
    )
    print("|---:|---:|---:|---:|---|")
    chats = iter(CHATS)
    for issues in SIZES:
        alert = payload(issues)
        body = json.dumps(alert).encode()
        answers: Counter[int] = Counter()
        times = []
        for _ in range(rounds):
            # A chat of its own each time: sent at once, never paced behind the last.
            reply, seconds = post(f"{relay.webhook_url}?chat_id={next(chats)}", alert)
            answers[reply.status_code] += 1
            times.append(seconds * 1000)
        said = ", ".join(f"{status}x{count}" for status, count in sorted(answers.items()))
        print(
            f"| {issues} | {len(body) / 1024:.0f} | {build_ms(body, rounds):.1f} | "
            f"{statistics.median(times):.1f} | {said} |"
        )


def drip_table(relay: RelayProcess, seconds: float) -> None:
    stop = threading.Event()
    held: list[float] = []
    lock = threading.Lock()
    give_up_at = time.monotonic() + seconds + 10

    def drip() -> None:
        while not stop.is_set() and time.monotonic() < give_up_at:
            opened = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", relay.port), timeout=2) as sock:
                    sock.sendall(b"POST /webhook/guess HTTP/1.1\r\nHost: relay\r\n")
                    while not stop.wait(1.0) and time.monotonic() < give_up_at:
                        sock.sendall(b"X")
            except OSError:
                with lock:
                    held.append(time.monotonic() - opened)

    threads = [threading.Thread(target=drip, daemon=True) for _ in range(SLOW_CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    answers: Counter[int] = Counter()
    times = []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        reply, took = post(relay.webhook_url, issue_alert())
        answers[reply.status_code] += 1
        times.append(took * 1000)
        time.sleep(1.0)
    stop.set()
    for thread in threads:
        thread.join(5)
    times.sort()
    said = ", ".join(f"{status}x{count}" for status, count in sorted(answers.items()))
    print()
    print(
        "| slow clients | webhooks | answered p50 / max ms | answers "
        "| slow connections closed | each held p50 / max s |"
    )
    print("|---:|---:|---|---|---:|---|")
    print(
        f"| {SLOW_CLIENTS} | {len(times)} | {statistics.median(times):.1f} / {times[-1]:.1f} | "
        f"{said} | {len(held)} | {statistics.median(held):.1f} / {max(held):.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--drip-seconds", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_fake_telegram() as telegram:
        env = relay_env(
            telegram,
            RELAY_SPOOL_PATH=str(Path(workdir) / "spool.sqlite3"),
            RELAY_SEND_TIMEOUT="5",
            WEB_CONCURRENCY="2",
            TELEGRAM_ALLOWED_CHAT_IDS=",".join(CHATS),
        )
        relay = RelayProcess(env, Path(workdir) / "relay.log").wait_ready()
        try:
            sizes_table(relay, args.rounds)
            drip_table(relay, args.drip_seconds)
        finally:
            relay.stop()


if __name__ == "__main__":
    main()
