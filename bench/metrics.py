"""What operating the relay costs: counting, the log records, and a Prometheus scrape.

1. The counting a webhook does (its outcome, its attempt, its delivery), in one process and in
   prometheus_client's multiprocess mode (files, as under gunicorn).
2. A webhook's two log records (the attempt and the webhook), text and JSON, to /dev/null.
3. GET /metrics on the real `gunicorn wsgi:app` (2 workers, as gunicorn.conf.py sets them up)
   with 0, 1000 and 10000 alerts pending in the spool, whose gauges are read at scrape time.

Run by hand (it starts its own gunicorn and fake Telegram on 127.0.0.1):

    .venv/bin/python bench/metrics.py
"""

from __future__ import annotations

import io
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.payload import PAYLOAD  # noqa: E402
from relay_app.core.logs import LOG_DATE_FORMAT, LOG_FORMAT, JsonFormatter, event  # noqa: E402
from relay_app.core.routing import Destination  # noqa: E402
from relay_app.spool import (  # noqa: E402
    Claimant,
    Lane,
    Precedence,
    Queue,
    Taking,
    on_store,
    this_process,
)
from relay_app.spool.database import Database  # noqa: E402
from relay_app.spool.model import NewJob  # noqa: E402
from tests.e2e.relay_process import RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import running_fake_telegram  # noqa: E402

REPEAT = 20000
SCRAPES = 200
BACKLOGS = (0, 1000, 10000)
# Held by this process, alive on the relay's host: the relay under test leaves that backlog
# alone while it is scraped.
HELD = Destination(-100123)


def counting_cost(multiprocess_dir: str | None) -> float:
    """µs per webhook's worth of counting, measured in a fresh interpreter: prometheus_client
    picks its value class at import."""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    if multiprocess_dir:
        env["PROMETHEUS_MULTIPROC_DIR"] = multiprocess_dir
    code = f"""
import sys, time, timeit
sys.path.insert(0, {str(ROOT)!r})
from relay_app.core.metrics import Metrics
from relay_app.words import ENGLISH
metrics = Metrics()
def one_webhook():
    metrics.webhook("sent", "delivered")
    metrics.attempt("sync", "delivered", None)
    metrics.delivered([time.time()], time.time())
print(min(timeit.repeat(one_webhook, number={REPEAT}, repeat=5)) / {REPEAT} * 1e6)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(result.stdout)


def logging_cost(formatter: logging.Formatter) -> float:
    """µs for a webhook's two records, formatted and written."""
    logger = logging.getLogger("bench.records")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(formatter)
    logger.handlers = [handler]
    fields = {"alerts": ["#12"], "destination": "chat -1001234567890 topic 77", "latency_ms": 4.2}

    def two_records() -> None:
        logger.info(
            "attempt %d of alert(s) %s to %s (%s, %.0f ms): %s",
            1,
            "#12",
            "chat -1001234567890 topic 77",
            "sync",
            4.2,
            "delivered 0.0 s after it arrived",
            extra=event(event="attempt", kind="sync", attempt=1, outcome="delivered", **fields),
        )
        logger.info(
            "webhook for alert %s %s (%d, %s) for %s in %.1f ms",
            "#12",
            "sent",
            200,
            "delivered",
            "chat -1001234567890 topic 77",
            4.9,
            extra=event(event="webhook", outcome="sent", reason="delivered", status=200, **fields),
        )
        handler.stream.seek(0)
        handler.stream.truncate()

    return min(timeit.repeat(two_records, number=REPEAT // 4, repeat=5)) / (REPEAT // 4) * 1e6


def hold(queue: Queue) -> None:
    """One more alert for HELD, whose lane this process leases (it takes the lease with the
    first alert: a webhook's claim, never settled)."""
    job = queue.add(NewJob("alert", {"webhook": PAYLOAD}, HELD, Precedence.ALERT), now=time.time())
    queue.claim(
        Lane(job.lane, HELD, time.time(), free=True),
        Claimant(this_process(), "held", 10.0, {"held"}),
        Taking(fit=lambda jobs: 1, retire=lambda job, now: None, send=True),
        now=time.time(),
    )


def scrape_latencies(workdir: Path) -> list[tuple[int, float, float, int]]:
    spool_path = str(workdir / "spool.sqlite3")
    rows = []
    with running_fake_telegram() as fake:
        relay = RelayProcess(
            relay_env(fake, RELAY_SPOOL_PATH=spool_path, WEB_CONCURRENCY="2"),
            workdir / "relay.log",
        )
        try:
            relay.wait_ready()
            queue = on_store(Database(spool_path), max_pending=20000).queue
            for backlog in BACKLOGS:
                for _ in range(backlog - queue.pending()):
                    hold(queue)
                session = requests.Session()
                latencies = []
                deadline = time.monotonic() + 60
                for _ in range(SCRAPES):
                    started = time.perf_counter()
                    reply = session.get(f"{relay.url}/metrics", timeout=5)
                    latencies.append(time.perf_counter() - started)
                    assert reply.status_code == 200
                    if time.monotonic() > deadline:
                        break
                latencies.sort()
                p99 = latencies[int(len(latencies) * 0.99) - 1]
                p50 = statistics.median(latencies)
                rows.append((backlog, p50 * 1000, p99 * 1000, len(reply.content)))
        finally:
            relay.stop()
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="relay-bench-metrics-") as workdir:
        in_process = counting_cost(None)
        files_dir = Path(workdir) / "multiproc"
        files_dir.mkdir()
        in_files = counting_cost(str(files_dir))
        text = logging_cost(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
        json_lines = logging_cost(JsonFormatter())
        scrapes = scrape_latencies(Path(workdir))

    print("\nCost per webhook (best of 5)")
    print(f"  counting, one process            {in_process:7.1f} µs")
    print(f"  counting, multiprocess files     {in_files:7.1f} µs")
    print(f"  two log records, text            {text:7.1f} µs")
    print(f"  two log records, json            {json_lines:7.1f} µs")
    print(f"\nGET /metrics, 2 workers, {SCRAPES} scrapes each")
    print(f"  {'pending':>8}  {'p50 ms':>7}  {'p99 ms':>7}  {'bytes':>6}")
    for backlog, p50, p99, size in scrapes:
        print(f"  {backlog:>8}  {p50:7.2f}  {p99:7.2f}  {size:>6}")


if __name__ == "__main__":
    main()
