"""The spool's current schema, written out whole, one file per database (current_sqlite.sql,
current_postgres.sql): what a fresh spool is made of, read at once rather than replayed through
every step of the history (history.py), which an older spool still takes. tests/schema_files.py
writes the files from a spool that took every step, and tests/test_schema_files.py checks that
the two agree."""

from __future__ import annotations

import sqlite3
from pathlib import Path

HERE = Path(__file__).resolve().parent
CURRENT_SQLITE = HERE / "current_sqlite.sql"
CURRENT_POSTGRES = HERE / "current_postgres.sql"


def fresh_sqlite() -> list[str]:
    """The statements that make a fresh SQLite spool, each whole (a trigger's body has its
    own semicolons: SQLite says where a statement ends)."""
    return _split(CURRENT_SQLITE.read_text())


def fresh_postgres() -> str:
    """The script that makes a fresh PostgreSQL spool, sent as one (the server parses it, its
    functions' bodies too)."""
    return CURRENT_POSTGRES.read_text()


def _split(script: str) -> list[str]:
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        if not pending and (not line.strip() or line.startswith("--")):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().removesuffix(";"))
            pending = ""
    if pending.strip():
        raise ValueError(f"{CURRENT_SQLITE} ends inside a statement: {pending[:80]!r}")
    return statements
