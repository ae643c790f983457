"""The spool's own operations, without HTTP: what the webhook's write-ahead and delete cost.

1. One thread, one process: writing an alert ahead (with its chat's turn) and deleting it, and
   claiming one digest's worth of alerts for a chat, with 0, 1000 and 10000 alerts already
   pending.
2. Contention as in production: 2 processes x 8 threads each writing ahead and deleting, with
   a pause between (the rest of a webhook's work), and each process's checkpoint once a second
   as the dispatcher thread runs it. Prints the latency of the pair.

Run by hand:

    .venv/bin/python bench/spool_ops.py
"""

from __future__ import annotations

import multiprocessing
import random
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.payload import PAYLOAD  # noqa: E402
from relay_app.capabilities import REGISTRY  # noqa: E402
from relay_app.core.outcomes import Delivered  # noqa: E402
from relay_app.core.pacing import GROUP_INTERVAL  # noqa: E402
from relay_app.core.routing import Destination  # noqa: E402
from relay_app.delivery.render import Renderer  # noqa: E402
from relay_app.spool import (  # noqa: E402
    Admin,
    Claim,
    Claimant,
    Job,
    Lane,
    Precedence,
    Queue,
    Taking,
    on_store,
    this_process,
)
from relay_app.spool.database import Database  # noqa: E402
from relay_app.spool.model import (  # noqa: E402
    NewJob,
    Settlement,
)
from relay_app.words import ENGLISH  # noqa: E402

SOURCES = REGISTRY.sources

RENDERER = Renderer(ENGLISH, late_after=60.0, sources=SOURCES)
PAIRS = 300
WAITING = Destination(-100123)  # the chat the pending alerts wait for
CONTENTION_SECONDS = 3.0
THREADS_PER_PROCESS = 8
PAUSE_BETWEEN = 0.025  # about 600 pairs/s over the 16 threads, as at the relay's saturation


def admit(queue: Queue, destination: Destination) -> Job:
    about = {"webhook": PAYLOAD}
    return queue.add(NewJob("alert", about, destination, Precedence.ALERT), now=time.time())


def write_ahead_and_delete(queue: Queue) -> None:
    """A webhook's own spool work when Telegram accepts at once: the write-ahead, the claim of
    its lane (the chat's turn and the lease) for its first attempt, and the settlement that
    deletes it. Each to a chat of its own; past the bot's thirty turns a second an alert waits
    instead, and is deleted the same way (a delivery is recorded whoever holds the lease)."""
    job = admit(queue, Destination(-random.randrange(1, 10**12)))
    token = secrets.token_hex(8)
    claimed = queue.claim(
        Lane(job.lane, job.destination, time.time(), free=True),
        Claimant(this_process(), token, 10.0, {token}),
        Taking(fit=RENDERER.how_many, retire=lambda job, now: None, send=True),
        now=time.time(),
    )
    claim = claimed if isinstance(claimed, Claim) else Claim(job.lane, job.destination, "", [job])
    queue.settle(claim, Settlement([(job, Delivered())], "answered"), now=time.time())


def single_thread(path: str) -> list[tuple[int, float, float]]:
    queue = on_store(Database(path), max_pending=20000).queue
    rows = []
    for pending in (0, 1000, 10000):
        while queue.pending() < pending:
            admit(queue, WAITING)  # waiting, as behind a failing Telegram
        # As each worker's dispatcher does once a second: a write-ahead log of thousands of
        # frames would otherwise slow every statement after it.
        queue.tidy()
        started = time.perf_counter()
        for _ in range(PAIRS):
            write_ahead_and_delete(queue)
        pair = (time.perf_counter() - started) / PAIRS
        time.sleep(GROUP_INTERVAL)  # the waiting alerts' turn (a group's)
        started = time.perf_counter()  # what the dispatcher does: find the lane, claim
        for lane in queue.lanes(now=time.time(), holder=this_process(), in_flight=()):
            if lane.destination != WAITING:
                continue
            queue.claim(
                lane,
                Claimant(this_process(), "bench", 10, ()),
                Taking(fit=RENDERER.how_many, retire=lambda job, now: None, send=True),
                now=time.time(),
            )
        claim = time.perf_counter() - started
        queue.release(this_process())
        rows.append((pending, pair, claim))
    return rows


def contending_process(path: str, results: multiprocessing.Queue[list[float]]) -> None:
    queue = on_store(Database(path)).queue
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + CONTENTION_SECONDS

    def webhooks() -> None:
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            write_ahead_and_delete(queue)
            took = time.perf_counter() - started
            with lock:
                latencies.append(took)
            time.sleep(PAUSE_BETWEEN)

    def dispatcher() -> None:
        while time.monotonic() < stop_at:
            time.sleep(1.0)
            queue.tidy()

    threads = [threading.Thread(target=webhooks) for _ in range(THREADS_PER_PROCESS)]
    threads.append(threading.Thread(target=dispatcher))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(latencies)


def contention(path: str) -> list[float]:
    Admin(Database(path)).counts()  # create the file before the processes race to
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[list[float]] = context.Queue()
    processes = [context.Process(target=contending_process, args=(path, results)) for _ in "ab"]
    for process in processes:
        process.start()
    latencies = results.get(timeout=60) + results.get(timeout=60)
    for process in processes:
        process.join(timeout=10)
    return sorted(latencies)


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        rows = single_thread(str(Path(directory) / "single.sqlite3"))
        latencies = contention(str(Path(directory) / "contended.sqlite3"))
    print("One thread: write ahead + delete one alert, and find and claim one digest (up to 120)")
    print()
    print("| already pending | write ahead + delete µs | claim a digest ms |")
    print("|---:|---:|---:|")
    for pending, pair, claim in rows:
        print(f"| {pending} | {pair * 1e6:.0f} | {claim * 1e3:.1f} |")
    print()
    count = len(latencies)
    print(
        f"2 processes x {THREADS_PER_PROCESS} threads, {count / CONTENTION_SECONDS:.0f} pairs/s, "
        "checkpoint once a second per process: write ahead + delete "
        f"p50 {latencies[count // 2] * 1e3:.2f} ms, p90 {latencies[int(count * 0.9)] * 1e3:.2f} "
        f"ms, p99 {latencies[int(count * 0.99)] * 1e3:.2f} ms, max {latencies[-1] * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
