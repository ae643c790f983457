"""The spool file's schema: a fresh file made from the current schema (current.py), an older one
taken through the one history (history.py) in SQLite's types, recorded as every
spool records it, in the `relay_schema` table. A file from before that history (its version in
`user_version`, no `relay_schema`) first takes its own old steps (legacy_sqlite.py). The file's
`user_version` still holds the version too, for one reason: a relay from before reads only that,
and must refuse a file this one wrote.
"""

from __future__ import annotations

import sqlite3

from ..core.routing import Destination
from . import legacy_sqlite
from .current import fresh_sqlite
from .history import SCHEMA_VERSION, SQLITE, statements_after


def version_of(connection: sqlite3.Connection) -> int:
    """The schema version the file is at: its record, or, in a file from before it (or one
    a newer relay fenced), its `user_version`."""
    fence = int(connection.execute("PRAGMA user_version").fetchone()[0])
    recorded = _recorded(connection)
    if recorded is None or fence > SCHEMA_VERSION:
        return fence
    return recorded


def upgrade(connection: sqlite3.Connection, default: Destination | None) -> None:
    """Take the file (a fresh one included) to SCHEMA_VERSION, inside the caller's
    transaction."""
    version = _recorded(connection)
    if version is None:
        old = int(connection.execute("PRAGMA user_version").fetchone()[0])
        version = legacy_sqlite.join(connection, old, default) if old else 0
        connection.execute("CREATE TABLE relay_schema (version INTEGER NOT NULL)")
    # A fresh file is made whole from the current schema; an older one takes the steps after
    # its version.
    for statement in fresh_sqlite() if version == 0 else statements_after(version, SQLITE):
        connection.execute(statement)
    connection.execute("DELETE FROM relay_schema")
    connection.execute("INSERT INTO relay_schema VALUES (?)", (SCHEMA_VERSION,))
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _recorded(connection: sqlite3.Connection) -> int | None:
    """The version in the file's record; None in a file that has none (fresh, or from before
    the one history)."""
    found = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'relay_schema'"
    ).fetchone()
    if found is None:
        return None
    row = connection.execute("SELECT version FROM relay_schema").fetchone()
    return int(row[0]) if row is not None else 0
