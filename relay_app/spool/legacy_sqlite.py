"""How a spool file from before the one schema history (history.py) reaches it: the steps
the SQLite spool took on its own, its version in the file's `user_version` (1 to 10). They are
history, kept as they ran, never extended: a file at any of them upgrades in place. After the
last, the file holds what a PostgreSQL spool held at its step 7 but for the name of three
singleton rows' key; `join` renames it, and the file goes on in the one history from there.
Where a step was the same as one the PostgreSQL spool took, it is that step (history.py).
One statement per item (a trigger's body holds semicolons of its own); a callable item is a
step that needed more than SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..core.errors import SpoolError
from ..core.routing import Destination
from .history import (
    SQLITE,
    acting,
    defaults_and_warnings,
    handled_updates,
    lines_and_glitchtip,
    silences,
)

# The last version of this history, and the one-history version a file that reached it is at.
LAST = 10
JOINED_AT = 7

Step = str | Callable[[sqlite3.Connection, Destination | None], None]


def _route_old_alerts(connection: sqlite3.Connection, default: Destination | None) -> None:
    """Alerts spooled before routing existed were all for the default destination."""
    unrouted = connection.execute("SELECT count(*) FROM alerts WHERE chat IS NULL")
    if unrouted.fetchone()[0] == 0:
        return
    if default is None:
        raise SpoolError("the spool holds alerts with no destination, and none was given")
    connection.execute(
        "UPDATE alerts SET chat = ?, thread = ? WHERE chat IS NULL",
        (default.chat_key, default.thread),
    )


STEPS: dict[int, list[Step]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
    received_at REAL NOT NULL,
    retry_from REAL NOT NULL,
    html TEXT NOT NULL,
    text TEXT NOT NULL,
    fallback TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    unsure_attempts INTEGER NOT NULL,
    next_attempt_at REAL NOT NULL,
    last_error TEXT,
    lease_owner TEXT,
    lease_until REAL,
    dead_at REAL
)""",
        "CREATE INDEX IF NOT EXISTS alerts_by_state_and_due ON alerts (state, next_attempt_at)",
    ],
    2: [
        "ALTER TABLE alerts ADD COLUMN chat TEXT",
        "ALTER TABLE alerts ADD COLUMN thread INTEGER",
        "ALTER TABLE alerts ADD COLUMN entry_html TEXT",
        "ALTER TABLE alerts ADD COLUMN entry_text TEXT",
        "ALTER TABLE alerts ADD COLUMN brief_html TEXT",
        "ALTER TABLE alerts ADD COLUMN brief_text TEXT",
        "CREATE TABLE IF NOT EXISTS sends (chat TEXT NOT NULL, at REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS sends_by_chat ON sends (chat, at)",
        "CREATE INDEX IF NOT EXISTS sends_by_time ON sends (at)",
        "CREATE TABLE IF NOT EXISTS pauses (chat TEXT PRIMARY KEY, until REAL NOT NULL)",
        "CREATE TABLE IF NOT EXISTS pending_count"
        " (only INTEGER PRIMARY KEY CHECK (only = 1), alerts INTEGER NOT NULL)",
        _route_old_alerts,
    ],
    # The scheduled queue: leases move from alerts to their destination (a lane), each alert
    # keeps when its due time was decided (the clock guard) and whether it waits because
    # Telegram failed; dead letters say why they died.
    3: [
        """CREATE TABLE alerts_v3 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so an id in a log stays unambiguous
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
    chat TEXT NOT NULL,             -- as routing.chat_key spells it
    thread INTEGER,                 -- the forum topic, or NULL
    lane TEXT NOT NULL,             -- chat and topic in one key (Destination.lane)
    received_at REAL NOT NULL,      -- Unix time the webhook arrived
    retry_from REAL NOT NULL,       -- start of the retry horizon: arrival, or a manual retry
    html TEXT NOT NULL,
    text TEXT NOT NULL,
    fallback TEXT NOT NULL,
    entry_html TEXT,                -- its part of a digest, in full and as a brief; NULL:
    entry_text TEXT,                -- the one before
    brief_html TEXT,
    brief_text TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,         -- made, each counted before it is made
    unsure_attempts INTEGER NOT NULL DEFAULT 0,  -- those that may have reached Telegram
    next_attempt_at REAL NOT NULL,  -- due
    scheduled_at REAL NOT NULL,     -- when that was decided: later than now means the clock
                                    -- stepped back, and the alert is due now
    after_failure INTEGER NOT NULL DEFAULT 0,  -- waits because Telegram failed
    second_chance INTEGER NOT NULL DEFAULT 0,  -- revived once after dying of used-up attempts
    last_error TEXT,
    dead_at REAL,
    dead_kind TEXT                  -- outcomes.DeathKind
)""",
        "INSERT INTO alerts_v3 (id, state, chat, thread, lane, received_at, retry_from, html,"
        " text, fallback, entry_html, entry_text, brief_html, brief_text, attempts,"
        " unsure_attempts, next_attempt_at, scheduled_at, last_error, dead_at)"
        " SELECT id, state, chat, thread, chat || '/' || ifnull(thread, ''), received_at,"
        " retry_from, html, text, fallback, entry_html, entry_text, brief_html, brief_text,"
        " attempts, unsure_attempts, next_attempt_at, received_at, last_error, dead_at"
        " FROM alerts",
        # Keeps AUTOINCREMENT's high-water mark: ids of deleted alerts are never reused.
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'alerts_v3', 0 FROM sqlite_sequence"
        " WHERE name = 'alerts' AND NOT EXISTS"
        " (SELECT 1 FROM sqlite_sequence WHERE name = 'alerts_v3')",
        "UPDATE sqlite_sequence SET seq = max(seq, (SELECT seq FROM sqlite_sequence"
        " WHERE name = 'alerts')) WHERE name = 'alerts_v3'",
        "DROP TABLE alerts",
        "ALTER TABLE alerts_v3 RENAME TO alerts",
        "CREATE INDEX alerts_in_lane ON alerts (lane, state, id)",
        "CREATE INDEX alerts_by_state ON alerts (state, id)",
        "CREATE INDEX alerts_by_chat ON alerts (chat, state, after_failure)",
        "INSERT OR REPLACE INTO pending_count (only, alerts)"
        " SELECT 1, count(*) FROM alerts WHERE state = 'pending'",
        *SQLITE.count_pending,
        """CREATE TABLE lanes (
    lane TEXT PRIMARY KEY,
    chat TEXT NOT NULL,
    thread INTEGER,
    holder TEXT,                    -- holders.Holder: host, boot, pid, start time
    token TEXT,                     -- the claim's own: every later write presents it
    until REAL                      -- for holders on other hosts: when it runs out
)""",
        "INSERT INTO lanes (lane, chat, thread)"
        " SELECT DISTINCT lane, chat, thread FROM alerts WHERE state = 'pending'",
        # When a pause was decided, for the clock guard; NULL in pauses from before.
        "ALTER TABLE pauses ADD COLUMN paused_at REAL",
        """CREATE TABLE telegram_health (
    only INTEGER PRIMARY KEY CHECK (only = 1),
    state TEXT NOT NULL,            -- health.State
    next_probe_at REAL NOT NULL,
    decided_at REAL NOT NULL,
    prober TEXT NOT NULL,
    probe_until REAL NOT NULL
)""",
        "INSERT INTO telegram_health VALUES (1, 'up', 0, 0, '', 0)",
    ],
    # An issue alert's heading, which a digest shows once for the alerts that share it. NULL
    # (alerts from before, and uptime alerts): the alert's entry is shown whole.
    4: [
        "ALTER TABLE alerts ADD COLUMN heading_html TEXT",
        "ALTER TABLE alerts ADD COLUMN heading_text TEXT",
    ],
    # Acting on alerts from the chat, and each of Telegram's updates acting once: the steps
    # the PostgreSQL spool took as its 2 and 3 (history.py).
    5: [*acting(SQLITE)],
    6: [*handled_updates(SQLITE)],
    # The same tables as PostgreSQL's (history.py's step 1), so one set of statements serves
    # both: each chat's pause on a row of its own, and the bot's row that PostgreSQL locks.
    7: [
        """CREATE TABLE chats (
    chat TEXT PRIMARY KEY,
    paused_until REAL,              -- Telegram's 429: no message to the chat before this
    paused_at REAL                  -- when that was decided, for the clock guard
)""",
        "INSERT INTO chats (chat, paused_until, paused_at)"
        " SELECT chat, until, paused_at FROM pauses",
        "DROP TABLE pauses",
        "CREATE TABLE bot (id INTEGER PRIMARY KEY CHECK (id = 1))",
        "INSERT INTO bot VALUES (1)",
    ],
    # An alert's lines in a backlog's digest, and whether GlitchTip's API is failing: the
    # PostgreSQL spool's 5.
    8: [*lines_and_glitchtip(SQLITE)],
    # Silences, and alerts that follow the default chat: the steps both spools took
    # (history.py's 6 and 7).
    9: [*silences(SQLITE)],
    10: [*defaults_and_warnings(SQLITE)],
}


def join(connection: sqlite3.Connection, version: int, default: Destination | None) -> int:
    """Take a file at `version` of this history to its last, then into the one history;
    the version it is at there."""
    for step in range(version + 1, LAST + 1):
        for item in STEPS[step]:
            if isinstance(item, str):
                connection.execute(item)
            else:
                item(connection, default)
    for table in ("pending_count", "telegram_health", "updates_poller"):
        columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
        if "only" in columns:  # a file that took the step before it was shared has it
            connection.execute(f"ALTER TABLE {table} RENAME COLUMN only TO id")
    return JOINED_AT
