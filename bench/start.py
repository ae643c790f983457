"""What a relay's start costs: the import of the package (which gunicorn's master pays once, its
workers inherit, and every `relay-app` run pays again), with and without the PostgreSQL driver,
and `gunicorn wsgi:app` from its start until it answers, then stopped gracefully, against the
fake Telegram on 127.0.0.1. Printed as a table.

    .venv/bin/python bench/start.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app.operating.console import print_table  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import running_fake_telegram  # noqa: E402


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def import_cpu(statement: str, rounds: int) -> list[float]:
    """CPU seconds of a fresh interpreter running `statement`, each round."""
    spent = []
    for _ in range(rounds):
        before = children_cpu()
        subprocess.run([sys.executable, "-c", statement], cwd=ROOT, check=True, timeout=60)
        spent.append(children_cpu() - before)
    return spent


def relay_rounds(rounds: int) -> list[tuple[float, float, float]]:
    """Per round: seconds until it answers (its workers' start-up checks done), seconds to stop
    it gracefully, and the CPU seconds of its processes."""
    measured = []
    with running_fake_telegram() as fake, tempfile.TemporaryDirectory() as directory:
        fake.add_chat(CHAT_ID)
        for number in range(rounds):
            env = relay_env(fake, RELAY_SPOOL_PATH=str(Path(directory) / "spool.sqlite3"))
            before = children_cpu()
            started = time.monotonic()
            relay = RelayProcess(env, Path(directory) / f"relay-{number}.log", telegram=fake)
            relay.wait_ready()
            ready = time.monotonic()
            relay.stop()
            measured.append((ready - started, time.monotonic() - ready, children_cpu() - before))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    os.environ.pop("PYTHONPROFILEIMPORTTIME", None)
    rows: list[tuple[str, ...]] = [("what", "median", "min", "max")]

    def row(what: str, values: list[float]) -> None:
        rows.append(
            (what, f"{statistics.median(values):.2f} s", f"{min(values):.2f}", f"{max(values):.2f}")
        )

    row("import relay_app (CPU)", import_cpu("import relay_app", rounds))
    row(
        "import relay_app + PostgreSQL driver (CPU)",
        import_cpu("import relay_app, relay_app.spool.postgres", rounds),
    )
    relays = relay_rounds(rounds)
    row("gunicorn wsgi:app, 2 workers: start until ready", [r[0] for r in relays])
    row("... graceful stop (SIGTERM)", [r[1] for r in relays])
    row("... CPU of its processes, start to stop", [r[2] for r in relays])
    print(f"the relay's start, {rounds} rounds")
    print_table(rows, sys.stdout)


if __name__ == "__main__":
    main()
