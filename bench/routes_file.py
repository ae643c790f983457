"""What a routes file (RELAY_ROUTES) costs at sizes up to its caps: reading and parsing it (what
a gunicorn process does once, at start and on each reload), and routing one issue that no route
takes (every route tried, which every issue of every webhook may meet). And a file far past the
byte cap: what refusing it costs.

The routes are written as an operator would: a comment, a name, two projects, an environment,
a chat and a mention each. Prints a table. Run by hand:

    .venv/bin/python bench/routes_file.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app.capabilities import REGISTRY  # noqa: E402
from relay_app.operating.settings_of import sources_named  # noqa: E402
from relay_app.routes import RoutesError, read_routes  # noqa: E402
from relay_app.routes.table import MAX_ROUTES, MAX_ROUTES_BYTES, parse_routes  # noqa: E402

ROUTE_SOURCES = sources_named(REGISTRY.settings)  # what a route's `source` may name

# What one issue of a webhook looks like to the routes; no route below takes it.
ISSUE = {
    "project": "checkout",
    "environment": "production",
    "server": "web-1",
    "release": "2.4.1",
    "title": "ZeroDivisionError: division by zero",
    "issue": "CHECKOUT-1A",
    "level": "error",
}


def routes(count: int) -> str:
    return "".join(
        f"# Project {number}'s production errors: its team's chat, calling whoever is on call.\n"
        f"[[route]]\nname = 'project {number}'\nproject = ['project-{number}', "
        f"'project-{number}-api']\nenvironment = 'production'\nchat = -100{2000000000 + number}\n"
        f"mention = '@oncall_{number:04d}'\n\n"
        for number in range(1, count + 1)
    )


def median_ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


def parse_ms(path: Path, repeat: int) -> float:
    took = []
    for _ in range(repeat):
        parse_routes.cache_clear()  # as a process that has not parsed it yet
        started = time.perf_counter()
        read_routes(str(path), ROUTE_SOURCES)
        took.append(time.perf_counter() - started)
    return median_ms(took)


def routing_ms(path: Path, repeat: int) -> float:
    table = read_routes(str(path), ROUTE_SOURCES)
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        assert table.first(ISSUE) is None
        took.append(time.perf_counter() - started)
    return median_ms(took)


def refusal_ms(path: Path, repeat: int) -> float:
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            read_routes(str(path), ROUTE_SOURCES)
        except RoutesError:
            took.append(time.perf_counter() - started)
        else:
            raise AssertionError("a file past the cap was read")
    return median_ms(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs of each measure")
    args = parser.parse_args()
    print(f"caps: {MAX_ROUTES} routes, {MAX_ROUTES_BYTES // 1024} KiB")
    print("| routes | file KiB | read and parsed, median ms | an issue no route takes, median ms |")
    print("|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as directory:
        for count in (10, 100, MAX_ROUTES):
            path = Path(directory) / f"routes-{count}.toml"
            path.write_text(routes(count))
            print(
                f"| {count} | {path.stat().st_size / 1024:.0f} | "
                f"{parse_ms(path, args.repeat):.1f} | {routing_ms(path, args.repeat):.3f} |"
            )
        huge = Path(directory) / "routes-huge.toml"
        huge.write_text(routes(MAX_ROUTES) * 200)
        print(
            f"\na file of {huge.stat().st_size / 1024 / 1024:.0f} MB is refused in "
            f"{refusal_ms(huge, args.repeat):.2f} ms (read to its cap, not parsed)"
        )


if __name__ == "__main__":
    main()
