"""The current schema written out (relay_app/spool/current_sqlite.sql, current_postgres.sql):
what a spool that took every step of the history has, as each database says it, with the rows
its steps seed. A fresh spool is made from these files; tests/test_schema_files.py checks that a
spool upgraded through every step equals one made from them. After a new step, write them
again:

    .venv/bin/python -m tests.schema_files
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections.abc import Callable
from typing import Any

import psycopg

from relay_app.spool.current import CURRENT_POSTGRES, CURRENT_SQLITE
from relay_app.spool.dialects import POSTGRES, SQLITE, Types
from relay_app.spool.history import SCHEMA_VERSION, statements_after
from tests.postgres import PostgresServer

HEADER = (
    "-- The spool's schema at version {version}, as {database} says it: what a fresh spool is\n"
    "-- made of (relay_app/spool/current.py). Written by `python -m tests.schema_files` from a\n"
    "-- spool that took every step of relay_app/spool/history.py; tests/test_schema_files.py\n"
    "-- checks that the two agree. Do not edit by hand.\n"
)
# The one seeded value that is not the same in every spool: its name, drawn when it is made.
RANDOM = {"spool_name": "name"}


def upgraded_sqlite() -> sqlite3.Connection:
    """A SQLite spool that took every step, as relay_app/spool/schema.py upgrades one."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE relay_schema (version INTEGER NOT NULL)")
    for statement in statements_after(0, SQLITE):
        connection.execute(statement)
    return connection


def sqlite_schema(connection: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """What the file holds, in the order it was made: each object's type, name and SQL."""
    rows = connection.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        " AND name NOT IN ('relay_schema', 'sqlite_sequence') ORDER BY rowid"
    )
    return [(str(kind), str(name), str(sql)) for kind, name, sql in rows]


def seeds(
    tables: list[str], read: Callable[[str], list[dict[str, Any]]], types: Types
) -> list[str]:
    """The rows the steps seed, as INSERTs; the spool's name drawn afresh in each."""
    statements = []
    for table in tables:
        for row in read(table):
            values = [
                types.random_name if RANDOM.get(table) == column else _literal(value)
                for column, value in row.items()
            ]
            columns = ", ".join(row)
            statements.append(f"INSERT INTO {table} ({columns}) VALUES ({', '.join(values)})")
    return statements


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def sqlite_file() -> str:
    connection = upgraded_sqlite()
    connection.row_factory = sqlite3.Row
    objects = sqlite_schema(connection)
    tables = [name for kind, name, _ in objects if kind == "table"]

    def read(table: str) -> list[dict[str, Any]]:
        return [dict(row) for row in connection.execute(f"SELECT * FROM {table}")]

    statements = [sql for _, _, sql in objects] + seeds(tables, read, SQLITE)
    return HEADER.format(version=SCHEMA_VERSION, database="SQLite") + "".join(
        f"\n{statement};\n" for statement in statements
    )


def postgres_dump(server: PostgresServer, url: str) -> str:
    """pg_dump's schema of the database, without what names this database or server (its
    settings, the restrict key, the `public.` every name is given: a relay makes its tables
    where its search_path says)."""
    done = subprocess.run(
        [
            str(server.programs / "pg_dump"),
            "--schema-only",
            "--no-owner",
            "--no-privileges",
            "--no-comments",
            "--exclude-table=relay_schema",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    kept = []
    for line in done.stdout.splitlines():
        if line.startswith(
            ("--", "SET ", "SELECT pg_catalog.set_config", "\\restrict", "\\unrestrict")
        ):
            continue
        kept.append(line.replace("public.", ""))
    text = "\n".join(kept)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def upgraded_postgres(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE relay_schema (version INTEGER NOT NULL)")
        for statement in statements_after(0, POSTGRES):
            connection.execute(statement)


def postgres_rows(url: str, table: str) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as connection:
        return connection.execute(f"SELECT * FROM {table}").fetchall()


def postgres_tables(url: str) -> list[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename <> 'relay_schema' ORDER BY tablename"
        ).fetchall()
    return [str(row[0]) for row in rows]


def postgres_file(server: PostgresServer) -> str:
    url = server.new_database()
    upgraded_postgres(url)
    dump = postgres_dump(server, url)
    inserts = seeds(postgres_tables(url), lambda t: postgres_rows(url, t), POSTGRES)
    return (
        HEADER.format(version=SCHEMA_VERSION, database="PostgreSQL")
        + "\n"
        + dump
        + "".join(f"\n{statement};\n" for statement in inserts)
    )


def main() -> None:
    CURRENT_SQLITE.write_text(sqlite_file())
    server = PostgresServer()
    try:
        CURRENT_POSTGRES.write_text(postgres_file(server))
    finally:
        server.close()
    print(f"wrote {CURRENT_SQLITE} and {CURRENT_POSTGRES} at schema {SCHEMA_VERSION}")


if __name__ == "__main__":
    main()
