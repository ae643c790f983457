"""What every process of a test run would otherwise compile again, compiled once, before any
test starts: the relay's modules, and the test modules as pytest rewrites their asserts.

The tests start a few hundred Python processes that import relay_app (each relay's gunicorn
master, each `relay-app` run), with the test's own environment. Where PYTHONDONTWRITEBYTECODE
is set, as on this project's machines, none of them keeps what it compiles, so on a fresh clone
each compiled the whole package again: 1.5 s of CPU to start instead of 0.45 s, until some
process that did not inherit the variable happened to write the files.

Likewise pytest keeps the test modules it rewrote only where bytecode may be written: each of
xdist's processes rewrote all of them, 4 s of CPU apiece, before its first test. The process
that starts them now imports them first, which writes pytest's own cache; they read it (1.5 s).
"""

from __future__ import annotations

import compileall
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # one of xdist's processes: the one that started it has done this
    compileall.compile_dir(ROOT / "relay_app", quiet=1)
    compileall.compile_file(ROOT / "wsgi.py", quiet=1)
    if getattr(config.option, "numprocesses", None):
        _rewritten_once()


def _rewritten_once() -> None:
    """Each test module imported here, through pytest's hook (installed by now), which keeps
    the rewritten module beside its source for xdist's processes to read."""
    sys.dont_write_bytecode = False
    for path in sorted(TESTS.rglob("test_*.py")):
        try:
            importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        except Exception:  # xdist's processes meet it again, and report it
            continue
