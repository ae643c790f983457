"""The current schema written out agrees with the history: a spool made fresh from the files
(relay_app/spool/current_*.sql, as the relay makes one) equals one taken through every step of
relay_app/spool/history.py, tables, indexes, triggers and seeded rows, in SQLite and in
PostgreSQL; and the files are what tests/schema_files.py writes today, so a new step without
them written again fails here, naming the command."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import psycopg

from relay_app.spool.current import CURRENT_POSTGRES, CURRENT_SQLITE
from relay_app.spool.database import Database
from relay_app.spool.postgres.database import PgDatabase
from tests.postgres import PostgresServer
from tests.schema_files import (
    postgres_dump,
    postgres_file,
    postgres_rows,
    postgres_tables,
    sqlite_file,
    sqlite_schema,
    upgraded_postgres,
    upgraded_sqlite,
)

WRITE_AGAIN = "the schema changed: write its files again with `python -m tests.schema_files`"
NAME = re.compile(r"[0-9a-f]{16}")


def _rows(connection: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = [name for kind, name, _ in sqlite_schema(connection) if kind == "table"]
    return {
        table: [tuple(row) for row in connection.execute(f"SELECT * FROM {table}")]
        for table in tables
        if table != "spool_name"
    }


def _spool_name(read: Any) -> str:
    [(_, name)] = read
    return str(name)


def test_the_files_are_what_the_history_makes_today() -> None:
    assert CURRENT_SQLITE.read_text() == sqlite_file(), WRITE_AGAIN


def test_a_fresh_sqlite_spool_made_from_the_file_equals_one_that_took_every_step(
    tmp_path: Path,
) -> None:
    Database(str(tmp_path / "fresh.sqlite3")).read(lambda tx: None, now=0.0)
    fresh = sqlite3.connect(tmp_path / "fresh.sqlite3")
    stepped = upgraded_sqlite()
    assert sqlite_schema(fresh) == sqlite_schema(stepped)
    assert _rows(fresh) == _rows(stepped)
    assert fresh.execute("SELECT version FROM relay_schema").fetchall() == [(30,)]
    # Its name is drawn afresh, as a step draws it.
    name = _spool_name(fresh.execute("SELECT * FROM spool_name"))
    assert NAME.fullmatch(name)
    Database(str(tmp_path / "other.sqlite3")).read(lambda tx: None, now=0.0)
    other = sqlite3.connect(tmp_path / "other.sqlite3")
    assert _spool_name(other.execute("SELECT * FROM spool_name")) != name


def test_a_fresh_postgresql_spool_made_from_the_file_equals_one_that_took_every_step(
    postgres_server: PostgresServer,
) -> None:
    assert CURRENT_POSTGRES.read_text() == postgres_file(postgres_server), WRITE_AGAIN
    fresh, stepped = postgres_server.new_database(), postgres_server.new_database()
    PgDatabase(fresh, caller_skew=0.0).read(lambda tx: None, now=0.0)
    upgraded_postgres(stepped)
    assert postgres_dump(postgres_server, fresh) == postgres_dump(postgres_server, stepped)
    tables = postgres_tables(fresh)
    assert tables == postgres_tables(stepped)
    for table in tables:
        if table != "spool_name":
            assert postgres_rows(fresh, table) == postgres_rows(stepped, table), table
    with psycopg.connect(fresh) as connection:
        [(version,)] = connection.execute("SELECT version FROM relay_schema").fetchall()
        [(name,)] = connection.execute("SELECT name FROM spool_name").fetchall()
    assert version == 30
    assert NAME.fullmatch(str(name))
