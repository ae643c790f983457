"""Spools as older relays left them, for the tests that upgrade them: a SQLite file at a
version of its own history from before the one history (spool/legacy_sqlite.py), and a
PostgreSQL database at a version of the one history (spool/history.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import psycopg

from relay_app.spool.database import Database
from relay_app.spool.history import POSTGRES, SQLITE, steps
from relay_app.spool.legacy_sqlite import STEPS
from relay_app.spool.postgres import PgDatabase


def old_sqlite(db: sqlite3.Connection, version: int) -> None:
    """The file's schema as SQLite's own steps 1 to `version` made it, its version in
    `user_version`."""
    for step in range(1, version + 1):
        for item in STEPS[step]:
            if isinstance(item, str):
                db.execute(item)
            else:
                item(db, None)
    db.execute(f"PRAGMA user_version = {version}")


def old_postgres(pg: psycopg.Connection[object], version: int) -> None:
    """The database's schema at `version`, recorded as the relay records it."""
    for step in range(1, version + 1):
        for statement in steps(POSTGRES).get(step, []):
            pg.execute(statement)
    pg.execute("CREATE TABLE relay_schema (version INTEGER NOT NULL)")
    pg.execute("INSERT INTO relay_schema VALUES (%s)", (version,))


def one_history_sqlite(db: sqlite3.Connection, version: int) -> None:
    """A file's schema at `version` of the one history, recorded as the relay records it."""
    for step in range(1, version + 1):
        for statement in steps(SQLITE).get(step, []):
            db.execute(statement)
    db.execute("CREATE TABLE relay_schema (version INTEGER NOT NULL)")
    db.execute("INSERT INTO relay_schema VALUES (?)", (version,))


def upgraded_from(
    kind: str, where: str, version: int, rows: Sequence[str]
) -> Database | PgDatabase:
    """A spool left at `version` of the one history holding `rows` (statements, as an older
    relay wrote them), then opened by this relay, which upgrades it: a SQLite file at `where`
    (`kind` "sqlite"), or the PostgreSQL database `where` names."""
    if kind == "sqlite":
        with sqlite3.connect(where) as db:
            one_history_sqlite(db, version)
            for statement in rows:
                db.execute(statement)
        db.close()
        return Database(where)
    with psycopg.connect(where, autocommit=True) as pg:
        old_postgres(pg, version)
        for statement in rows:
            pg.execute(statement)
    return PgDatabase(where, caller_skew=0.0)
