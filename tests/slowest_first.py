"""The slowest test files start first. pytest-xdist gives each of its processes a whole file at
a time (`--dist loadfile`), the next one when it runs out; a long file begun last is the run's
tail while the other processes sit idle. So the files go in the order of their time in the last
recorded run (tests/durations.json, longest first, a file it does not know last), and xdist
keeps that order (`--no-loadscope-reorder`, which would otherwise order them by their number of
tests). A stale file costs only some of that balance, never a test.

`pytest --record-durations` writes the times of the files it ran into the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent / "durations.json"
_spent: dict[str, float] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each test file's time in this run to {DURATIONS.name} (their order)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    known = _known()
    # A stable sort: a file's tests keep their order, and stay together.
    items.sort(key=lambda item: -known.get(_file_of(item.nodeid), 0.0))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    file = _file_of(report.nodeid)
    _spent[file] = _spent.get(file, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    # In the controlling process only: xdist's workers report their tests to it.
    if session.config.getoption("record_durations") and not hasattr(session.config, "workerinput"):
        # The files this run did not hold keep their last time.
        known = {**_known(), **{file: round(spent, 1) for file, spent in _spent.items()}}
        ranked = dict(sorted(known.items(), key=lambda entry: -entry[1]))
        DURATIONS.write_text(json.dumps(ranked, indent=1) + "\n")


def _known() -> dict[str, float]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]
