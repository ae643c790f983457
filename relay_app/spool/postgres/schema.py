"""The PostgreSQL spool's schema, and the steps that bring an older database up to it.

The same data as the SQLite spool's (spool/schema.py), shared by every relay pointed at the
database. Times are Unix seconds on the database's clock. Each chat has a row (`chats`) that a
relay locks to take the chat's turn, and the bot one (`bot`) for its overall limit, always in
that order, so the whole fleet keeps Telegram's limits together without deadlocks.
"""

from __future__ import annotations

from ..steps import POSTGRES, defaults_and_warnings, silences

SCHEMA_VERSION = 7

# Any fixed number: every relay takes this advisory lock to create or upgrade the schema, so
# three replicas starting at once on an empty database do it one after another.
SCHEMA_LOCK = 0x72656C6179  # "relay"

STEPS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE alerts (
    id BIGSERIAL PRIMARY KEY,       -- never reused, so an id in a log stays unambiguous
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
    chat TEXT NOT NULL,
    thread BIGINT,
    lane TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    retry_from DOUBLE PRECISION NOT NULL,
    html TEXT NOT NULL,
    text TEXT NOT NULL,
    fallback TEXT NOT NULL,
    entry_html TEXT,
    entry_text TEXT,
    brief_html TEXT,
    brief_text TEXT,
    heading_html TEXT,
    heading_text TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    unsure_attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    scheduled_at DOUBLE PRECISION NOT NULL,
    after_failure BOOLEAN NOT NULL DEFAULT FALSE,
    second_chance BOOLEAN NOT NULL DEFAULT FALSE,
    last_error TEXT,
    dead_at DOUBLE PRECISION,
    dead_kind TEXT
)""",
        "CREATE INDEX alerts_in_lane ON alerts (lane, state, id)",
        "CREATE INDEX alerts_by_state ON alerts (state, id)",
        "CREATE INDEX alerts_by_chat ON alerts (chat, state, after_failure)",
        """CREATE TABLE lanes (
    lane TEXT PRIMARY KEY,
    chat TEXT NOT NULL,
    thread BIGINT,
    holder TEXT,
    token TEXT,
    until DOUBLE PRECISION
)""",
        """CREATE TABLE chats (
    chat TEXT PRIMARY KEY,
    paused_until DOUBLE PRECISION,
    paused_at DOUBLE PRECISION
)""",
        "CREATE TABLE bot (id INTEGER PRIMARY KEY CHECK (id = 1))",
        "INSERT INTO bot VALUES (1)",
        "CREATE TABLE sends (chat TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX sends_by_chat ON sends (chat, at)",
        "CREATE INDEX sends_by_time ON sends (at)",
        """CREATE TABLE telegram_health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL,
    next_probe_at DOUBLE PRECISION NOT NULL,
    decided_at DOUBLE PRECISION NOT NULL,
    prober TEXT NOT NULL,
    probe_until DOUBLE PRECISION NOT NULL
)""",
        "INSERT INTO telegram_health VALUES (1, 'up', 0, 0, '', 0)",
    ],
    # Acting on alerts from the chat: as the SQLite spool's step 5 (spool/schema.py).
    2: [
        "ALTER TABLE alerts ADD COLUMN subjects TEXT",
        """CREATE TABLE sent_messages (
    chat TEXT NOT NULL,
    message_id BIGINT NOT NULL,
    html TEXT NOT NULL,
    notes TEXT NOT NULL DEFAULT '',
    sent_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (chat, message_id)
)""",
        "CREATE INDEX sent_messages_by_time ON sent_messages (sent_at)",
        """CREATE TABLE issue_buttons (
    key TEXT PRIMARY KEY,
    chat TEXT NOT NULL,
    message_id BIGINT NOT NULL,
    position INTEGER NOT NULL,
    issue_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    label TEXT NOT NULL,
    status TEXT,
    acted_by TEXT,
    acted_at DOUBLE PRECISION
)""",
        "CREATE INDEX issue_buttons_by_message ON issue_buttons (chat, message_id, position)",
        """CREATE TABLE outages (
    lane TEXT NOT NULL,
    link TEXT NOT NULL,
    chat TEXT NOT NULL,
    message_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    down_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (lane, link)
)""",
        """CREATE TABLE updates_poller (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT,
    until DOUBLE PRECISION,
    next_update BIGINT NOT NULL DEFAULT 0
)""",
        "INSERT INTO updates_poller (id) VALUES (1)",
    ],
    # Each of Telegram's updates acts once: as the SQLite spool's step 6.
    3: [
        """CREATE TABLE handled_updates (
    key TEXT PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL
)""",
        "CREATE INDEX handled_updates_by_time ON handled_updates (at)",
    ],
    # The pending alerts counted as SQLite's spool counts them (one row a trigger keeps), so a
    # webhook checks RELAY_SPOOL_MAX_PENDING without counting every pending row.
    4: [
        """CREATE TABLE pending_count (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    alerts BIGINT NOT NULL
)""",
        "INSERT INTO pending_count SELECT 1, count(*) FROM alerts WHERE state = 'pending'",
        """CREATE FUNCTION relay_count_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pending_count SET alerts = alerts
        + (CASE WHEN TG_OP <> 'DELETE' AND NEW.state = 'pending' THEN 1 ELSE 0 END)
        - (CASE WHEN TG_OP <> 'INSERT' AND OLD.state = 'pending' THEN 1 ELSE 0 END);
    RETURN NULL;
END $$""",
        "CREATE TRIGGER pending_counted AFTER INSERT OR DELETE OR UPDATE OF state ON alerts"
        " FOR EACH ROW EXECUTE FUNCTION relay_count_pending()",
    ],
    # An alert's lines in a backlog's digest, and whether GlitchTip's API is failing: as the
    # SQLite spool's step 8.
    5: [
        "ALTER TABLE alerts ADD COLUMN lines TEXT",
        """CREATE TABLE glitchtip_api (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    paused_until DOUBLE PRECISION,
    paused_at DOUBLE PRECISION,
    warned_at DOUBLE PRECISION
)""",
        "INSERT INTO glitchtip_api (id) VALUES (1)",
    ],
    # Silences, and alerts that follow the default chat: written once for both spools
    # (steps.py).
    6: silences(POSTGRES),
    7: defaults_and_warnings(POSTGRES),
}
