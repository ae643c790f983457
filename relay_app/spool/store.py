"""What the spool's one set of statements runs on: a unit of work (`Tx`) in SQLite or in
PostgreSQL, and the store's time (`Now`).

Every module of the spool writes its statements once, in one spelling: `?` placeholders,
`FOR UPDATE [SKIP LOCKED]` where PostgreSQL must lock rows, `ON CONFLICT` upserts, `RETURNING`,
`TRUE`/`FALSE`, and `CASE` where one would reach for `max()`/`greatest()` (they differ between
the two). `Dialect.sql` is the one place that spelling becomes each database's: PostgreSQL
takes `%s`; SQLite drops the row locks, since a write transaction there holds the whole file
from its start (`BEGIN IMMEDIATE`). Which clock is the store's, how a unit of work is bounded
in time and how errors are mapped stay with each database's module (`database.py`,
`postgres/database.py`).

The ecosystem's tool for this is SQLAlchemy Core. bench/dialect_cost.py measured what it would
add to a webhook's units of work: 13x their cost on SQLite, 2.1x on PostgreSQL, each time more
than the rest of the webhook costs in all (the bar was 10%). So the translation here is our
own: two rules, and the same statements tested on both databases and in memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
Params = Sequence[Any] | Mapping[str, Any]

_ROW_LOCK = re.compile(r"\s+FOR UPDATE(?: SKIP LOCKED)?")


@dataclass(frozen=True)
class Now:
    """One unit of work's time: the store's clock (`db`: stored, compared, shared by every
    process and relay using the store), and the caller's at the same moment (`local`: what the
    caller schedules with). They differ where the store has a clock of its own (PostgreSQL's)."""

    db: float
    local: float

    def to_local(self, at: float) -> float:
        return at - self.db + self.local

    def to_db(self, at: float) -> float:
        return at - self.local + self.db


class Row(Protocol):
    """A row by column name: sqlite3.Row, or psycopg's dict rows."""

    def __getitem__(self, column: str, /) -> Any: ...


class Result(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Raw(Protocol):
    """A DBAPI connection or cursor, in its own database's spelling."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, params: Iterable[Any], /) -> Any: ...


@dataclass(frozen=True)
class Dialect:
    name: str
    placeholder: str
    locks_rows: bool

    def sql(self, text: str) -> str:
        return _translated(self, text)


@lru_cache(maxsize=512)
def _translated(dialect: Dialect, text: str) -> str:
    if not dialect.locks_rows:
        text = _ROW_LOCK.sub("", text)
    if dialect.placeholder != "?":
        text = text.replace("%", "%%").replace("?", dialect.placeholder)
    return text


SQLITE = Dialect("sqlite", "?", locks_rows=False)
POSTGRESQL = Dialect("postgresql", "%s", locks_rows=True)


@dataclass
class Tx:
    """One unit of work: one transaction (or one read), its statements in the spool's spelling,
    and its time."""

    raw: Raw
    dialect: Dialect
    at: Now
    # Set by work that queued something another relay could take up: the store tells every
    # listener when the transaction commits (PostgreSQL's NOTIFY; nothing to tell in SQLite).
    news: bool = field(default=False, init=False)

    def execute(self, sql: str, params: Params = ()) -> Result:
        result: Result = self.raw.execute(self.dialect.sql(sql), params)
        return result

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        rows = list(rows)
        if rows:
            self.raw.executemany(self.dialect.sql(sql), rows)

    def one(self, sql: str, params: Params = ()) -> Any:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        return self.execute(sql, params).fetchall()

    def lock(self, sql: str, params: Params = ()) -> None:
        """A statement that only makes or locks a row for the rest of the transaction, so that
        no other relay's transaction slips in (PostgreSQL); nothing to do where the transaction
        holds the whole store from its start (SQLite), and none of its cost on the webhook's
        path there."""
        if self.dialect.locks_rows:
            self.execute(sql, params)

    def notify(self) -> None:
        self.news = True

    def apart(self, name: str, work: Callable[[Tx], object]) -> Exception | None:
        """Run `work` in a savepoint of this unit of work: what it writes stays only if it all
        went well, and its failure (returned, not raised) leaves the rest of the unit of work
        as it was. For what follows a delivery: it must never cost the delivery's record."""
        self.execute(f"SAVEPOINT {name}")
        try:
            work(self)
        except Exception as exc:
            self.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self.execute(f"RELEASE SAVEPOINT {name}")
            return exc
        self.execute(f"RELEASE SAVEPOINT {name}")
        return None


Work = Callable[[Tx], T]


def placeholders(values: Sized) -> str:
    """'?, ?, ?': an `IN (...)` list of one placeholder per value, the values given as
    parameters (never written into the statement)."""
    return ", ".join("?" * len(values))


def text_or_null(value: object) -> str | None:
    """A nullable column's value as text: what every store's row readers use."""
    return None if value is None else str(value)


def int_or_null(value: object) -> int | None:
    return None if value is None else int(str(value))


def float_or_null(value: object) -> float | None:
    return None if value is None else float(str(value))


class Store(Protocol):
    """A database the spool's statements run on: the spool file, a private in-memory one, or
    PostgreSQL."""

    @property
    def path(self) -> str:
        """Its name for people and logs: the file, 'memory', or the URL without password."""

    @property
    def durable(self) -> bool:
        """Whether what it holds outlives this process."""

    @property
    def opened(self) -> bool:
        """Whether this process has used it."""

    on_lock_wait: Callable[[float], None]

    def write(
        self, work: Work[T], *, now: float | None = None, wait_until: float | None = None
    ) -> T:
        """Run `work` in one transaction that no other writer slips into, within `wait_until`
        (monotonic); `now` is the caller's clock (unset: time.time())."""

    def read(
        self, work: Work[T], *, now: float | None = None, wait_until: float | None = None
    ) -> T:
        """As `write`, for work that only reads."""

    def problem(self) -> str | None:
        """Why it cannot be used now, or None."""

    def tidy(self) -> None:
        """Upkeep, off the webhooks' path."""

    def listen(self, on_news: Callable[[], None]) -> None:
        """Call `on_news` when another process tells of news, where the store can."""

    def stop_listening(self) -> None: ...

    def hears(self) -> bool:
        """Whether `listen`'s callback is told of news now (a connection listening)."""

    def close(self) -> None: ...
