"""What SQLAlchemy Core would cost a webhook, against the spool's own statements.

The spool's statements are written once for SQLite and PostgreSQL (relay_app/spool/store.py:
one spelling, two translation rules). SQLAlchemy Core is the ecosystem's tool for that, to be
used unless it costs more than 10% of intake. This runs a webhook's two units of work in the
spool, as the relay makes them when Telegram is healthy: the admission (the pending count, the
lane's lease, the chat's turn, the alert written ahead, the lease taken) and the settlement as
delivered (the token checked, the alert deleted, the lane freed, the chat's waiting alerts made
due). The same statements, in the same transactions, on the same store, two ways:

- ours: `Store.write` with the spool's statements as text;
- SQLAlchemy Core: table objects, expressions compiled per dialect (the compiled cache on), its
  upsert constructs, `with_for_update`, and its connection pool.

It prints each way's cost per webhook, and the difference as a share of what a webhook costs
the relay in all (bench/intake.py with one client: 3.1 ms, relay_app at 326 webhooks a second
on this machine; --webhook-ms to change). SQLAlchemy is not a dependency of the relay: install
it into the venv to run this, by hand:

    .venv/bin/pip install 'sqlalchemy>=2,<3'
    .venv/bin/python bench/dialect_cost.py [--webhooks 3000] [--postgres]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402
from sqlalchemy.dialects import postgresql, sqlite  # noqa: E402

from relay_app.spool.database import Database  # noqa: E402
from relay_app.spool.postgres.database import PgDatabase  # noqa: E402
from relay_app.spool.store import Store, Tx  # noqa: E402

ROUNDS = 5
LANE, CHAT = "-100123/", "-100123"
TEXT = "🔴 GlitchTip Alert · ZeroDivisionError: division by zero " * 8

# --- ours: the spool's statements, as spool/queue.py and spool/pacer.py run them ---------------


def ours(store: Store) -> Callable[[float], None]:
    def admit(tx: Tx) -> int:
        now = tx.at.db
        tx.one(
            "SELECT (SELECT alerts FROM pending_count) AS pending, EXISTS"
            " (SELECT 1 FROM alerts WHERE lane = ? AND state = 'pending') AS ahead",
            (LANE,),
        )
        tx.execute(
            "INSERT INTO lanes (lane, chat, thread) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (LANE, CHAT, None),
        )
        tx.one(
            "SELECT holder, token, until FROM lanes WHERE lane = ? FOR UPDATE SKIP LOCKED", (LANE,)
        )
        tx.execute("INSERT INTO chats (chat) VALUES (?) ON CONFLICT DO NOTHING", (CHAT,))
        tx.execute("SELECT 1 FROM chats WHERE chat = ? FOR UPDATE", (CHAT,))
        tx.execute("SELECT 1 FROM bot FOR UPDATE")
        tx.execute("DELETE FROM sends WHERE at < ?", (now - 60,))
        tx.all("SELECT at FROM sends WHERE chat = ? ORDER BY at DESC LIMIT ?", (CHAT, 20))
        tx.all("SELECT at FROM sends WHERE at > ? ORDER BY at DESC LIMIT ?", (now - 1, 30))
        tx.one("SELECT paused_until, paused_at FROM chats WHERE chat = ?", (CHAT,))
        tx.execute("INSERT INTO sends (chat, at) VALUES (?, ?)", (CHAT, now))
        row = tx.one(
            "INSERT INTO alerts (chat, thread, lane, received_at, retry_from, html, text,"
            " fallback, subjects, attempts, unsure_attempts, next_attempt_at, scheduled_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (CHAT, None, LANE, now, now, TEXT, TEXT, TEXT, "{}", 1, 1, now, now),
        )
        tx.execute(
            "UPDATE lanes SET holder = ?, token = ?, until = ? WHERE lane = ?",
            ("host/boot/1/2/3", "token", now + 10, LANE),
        )
        return int(row["id"])

    def settle(tx: Tx, alert_id: int) -> None:
        tx.one("SELECT token FROM lanes WHERE lane = ? FOR UPDATE", (LANE,))
        tx.execute("DELETE FROM alerts WHERE id = ?", (alert_id,))
        tx.execute(
            "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE lane = ?", (LANE,)
        )
        tx.execute(
            "UPDATE alerts SET next_attempt_at = ?, scheduled_at = ?"
            " WHERE chat = ? AND state = 'pending' AND after_failure",
            (tx.at.db, tx.at.db, CHAT),
        )
        tx.notify()

    def webhook(now: float) -> None:
        alert_id = store.write(admit, now=now)
        store.write(lambda tx: settle(tx, alert_id), now=now)

    return webhook


# --- SQLAlchemy Core: the same statements as expressions ---------------------------------------

META = sa.MetaData()
ALERTS = sa.Table(
    "alerts",
    META,
    sa.Column("id", sa.BigInteger, primary_key=True),
    *(sa.Column(name, sa.Text) for name in ("state", "chat", "lane", "html", "text", "fallback")),
    sa.Column("subjects", sa.Text),
    sa.Column("thread", sa.BigInteger),
    *(sa.Column(name, sa.Float) for name in ("received_at", "retry_from", "next_attempt_at")),
    sa.Column("scheduled_at", sa.Float),
    sa.Column("attempts", sa.Integer),
    sa.Column("unsure_attempts", sa.Integer),
    sa.Column("after_failure", sa.Boolean),
)
LANES = sa.Table(
    "lanes",
    META,
    sa.Column("lane", sa.Text, primary_key=True),
    sa.Column("chat", sa.Text),
    sa.Column("thread", sa.BigInteger),
    sa.Column("holder", sa.Text),
    sa.Column("token", sa.Text),
    sa.Column("until", sa.Float),
)
CHATS = sa.Table(
    "chats",
    META,
    sa.Column("chat", sa.Text, primary_key=True),
    sa.Column("paused_until", sa.Float),
    sa.Column("paused_at", sa.Float),
)
BOT = sa.Table("bot", META, sa.Column("id", sa.Integer, primary_key=True))
SENDS = sa.Table("sends", META, sa.Column("chat", sa.Text), sa.Column("at", sa.Float))
PENDING = sa.Table("pending_count", META, sa.Column("alerts", sa.BigInteger))


def with_sqlalchemy(engine: Any, upsert: Callable[[Any], Any]) -> Callable[[float], None]:
    pending = ALERTS.c.state == "pending"

    def admit(conn: Any, now: float) -> int:
        ahead = sa.exists().where(ALERTS.c.lane == LANE, pending)
        conn.execute(sa.select(PENDING.c.alerts, ahead.label("ahead"))).one()
        conn.execute(
            upsert(LANES).values(lane=LANE, chat=CHAT, thread=None).on_conflict_do_nothing()
        )
        lease = sa.select(LANES.c.holder, LANES.c.token, LANES.c.until).where(LANES.c.lane == LANE)
        conn.execute(lease.with_for_update(skip_locked=True)).first()
        conn.execute(upsert(CHATS).values(chat=CHAT).on_conflict_do_nothing())
        conn.execute(
            sa.select(sa.literal(1))
            .select_from(CHATS)
            .where(CHATS.c.chat == CHAT)
            .with_for_update()
        )
        conn.execute(sa.select(sa.literal(1)).select_from(BOT).with_for_update())
        conn.execute(sa.delete(SENDS).where(SENDS.c.at < now - 60))
        by_chat = sa.select(SENDS.c.at).where(SENDS.c.chat == CHAT).order_by(SENDS.c.at.desc())
        conn.execute(by_chat.limit(20)).all()
        by_bot = sa.select(SENDS.c.at).where(SENDS.c.at > now - 1).order_by(SENDS.c.at.desc())
        conn.execute(by_bot.limit(30)).all()
        conn.execute(
            sa.select(CHATS.c.paused_until, CHATS.c.paused_at).where(CHATS.c.chat == CHAT)
        ).first()
        conn.execute(sa.insert(SENDS).values(chat=CHAT, at=now))
        new = sa.insert(ALERTS).values(
            chat=CHAT, thread=None, lane=LANE, received_at=now, retry_from=now, html=TEXT,
            text=TEXT, fallback=TEXT, subjects="{}", attempts=1, unsure_attempts=1,
            next_attempt_at=now, scheduled_at=now,
        )  # fmt: skip
        alert_id = conn.execute(new.returning(ALERTS.c.id)).scalar_one()
        conn.execute(
            sa.update(LANES)
            .where(LANES.c.lane == LANE)
            .values(holder="host/boot/1/2/3", token="token", until=now + 10)
        )
        return int(alert_id)

    def settle(conn: Any, alert_id: int, now: float) -> None:
        token = sa.select(LANES.c.token).where(LANES.c.lane == LANE).with_for_update()
        conn.execute(token).first()
        conn.execute(sa.delete(ALERTS).where(ALERTS.c.id == alert_id))
        conn.execute(
            sa.update(LANES).where(LANES.c.lane == LANE).values(holder=None, token=None, until=None)
        )
        conn.execute(
            sa.update(ALERTS)
            .where(ALERTS.c.chat == CHAT, pending, ALERTS.c.after_failure)
            .values(next_attempt_at=now, scheduled_at=now)
        )

    def webhook(now: float) -> None:
        with engine.begin() as conn:
            alert_id = admit(conn, now)
        with engine.begin() as conn:
            settle(conn, alert_id, now)

    return webhook


def sqlite_engine(path: str) -> Any:
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"isolation_level": None})

    def as_the_spool(dbapi_connection: Any, record: Any) -> None:
        # The spool's own settings (spool/database.py): without them each commit is flushed.
        dbapi_connection.execute("PRAGMA journal_mode = WAL")
        dbapi_connection.execute("PRAGMA synchronous = NORMAL")

    def begin_immediate(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    sa.event.listen(engine, "connect", as_the_spool)
    # SQLAlchemy's documented way to get SQLite's write lock at BEGIN, as the spool takes it.
    sa.event.listen(engine, "begin", begin_immediate)
    return engine


# --- measuring ----------------------------------------------------------------------------------


def per_webhook_ms(webhook: Callable[[float], None], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        webhook(time.time())
    return (time.perf_counter() - started) / count * 1000


def measure(
    name: str, ours_way: Callable[[float], None], theirs: Callable[[float], None], count: int
) -> tuple[str, float, float]:
    ours_way(time.time())  # the schema, the connections, the caches
    theirs(time.time())
    mine, sqla = [], []
    for _ in range(ROUNDS):  # alternating, so the machine's drift hits both
        mine.append(per_webhook_ms(ours_way, count // ROUNDS))
        sqla.append(per_webhook_ms(theirs, count // ROUNDS))
    return name, statistics.median(mine), statistics.median(sqla)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--webhooks", type=int, default=3000)
    parser.add_argument("--webhook-ms", type=float, default=3.1)
    parser.add_argument("--postgres", action="store_true", help="also on a local PostgreSQL")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "spool.sqlite3")
        store = Database(path)
        rows.append(
            measure(
                "SQLite",
                ours(store),
                with_sqlalchemy(sqlite_engine(path), sqlite.insert),
                args.webhooks,
            )
        )
        store.close()
    if args.postgres:
        from tests.postgres import PostgresServer

        server = PostgresServer()
        try:
            url = server.new_database()
            pg = PgDatabase(url)
            engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
            theirs = with_sqlalchemy(engine, postgresql.insert)
            rows.append(measure("PostgreSQL", ours(pg), theirs, args.webhooks))
            pg.close()
            engine.dispose()
        finally:
            server.close()
    print(
        f"\n{args.webhooks} webhooks' units of work (admission and settlement), median of "
        f"{ROUNDS} rounds:\n"
    )
    print(
        "| store | ours ms/webhook | SQLAlchemy Core ms/webhook | ratio "
        "| SQLAlchemy's extra, share of a webhook |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, mine, sqla in rows:
        extra = (sqla - mine) / args.webhook_ms
        print(f"| {name} | {mine:.3f} | {sqla:.3f} | {sqla / mine:.1f}x | {extra:.0%} |")
    print(f"\n(a webhook costs the relay {args.webhook_ms} ms in all: bench/intake.py, one client)")


if __name__ == "__main__":
    main()
