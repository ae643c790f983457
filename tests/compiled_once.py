"""The relay's modules compiled once, before any test starts a process that imports them.

The tests start a few hundred Python processes that import relay_app (each relay's gunicorn
master, each `relay-app` run), with the test's own environment. Where PYTHONDONTWRITEBYTECODE is
set, as on this project's machines, none of them keeps the compiled modules it makes, so on a
fresh clone each compiled the whole package again: 1.5 s of CPU to start instead of 0.45 s,
until some process that did not inherit the variable happened to write them."""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    # Once, in the process that starts xdist's (or runs the tests itself): before any of them.
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(ROOT / "relay_app", quiet=1)
        compileall.compile_file(ROOT / "wsgi.py", quiet=1)
