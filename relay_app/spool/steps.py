"""Schema steps written once for both spools: each database's history (schema.py,
postgres/schema.py) takes them in its own types. The older steps predate this and stay
written out in each history."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Types:
    """How each database spells the few types the steps use."""

    time: str  # Unix seconds
    big: str  # an id or a topic
    serial: str  # a primary key that numbers itself, never reusing a number
    flag: str  # a yes or no, false unless set


SQLITE = Types("REAL", "INTEGER", "INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER NOT NULL DEFAULT 0")
POSTGRES = Types(
    "DOUBLE PRECISION", "BIGINT", "BIGSERIAL PRIMARY KEY", "BOOLEAN NOT NULL DEFAULT FALSE"
)


def silences(types: Types) -> list[str]:
    """Silences (spool/silences.py): what each holds back from a chat, the alerts it held for
    its summary, and the mute buttons' state."""
    return [
        f"""CREATE TABLE silences (
    id {types.serial},
    chat TEXT NOT NULL,             -- as routing.chat_key spells it
    issue TEXT,                     -- matchers (message/matching.py): all that are set must match
    project TEXT,
    environment TEXT,
    title TEXT,
    label TEXT,                     -- the muted issue's short id, for a mute button's silence
    created_by TEXT NOT NULL,
    comment TEXT NOT NULL,
    starts_at {types.time} NOT NULL,
    ends_at {types.time} NOT NULL,
    ended_at {types.time},          -- when it ended (ran out, or was expired early)
    ended_by TEXT,
    held INTEGER NOT NULL DEFAULT 0 -- the alerts it held back from the chat
)""",
        "CREATE INDEX silences_by_chat ON silences (chat, ended_at, ends_at)",
        f"""CREATE TABLE held_alerts (
    silence_id {types.big} NOT NULL,
    chat TEXT NOT NULL,             -- where the alert would have gone: the summary goes there
    thread {types.big},
    received_at {types.time} NOT NULL,
    lines TEXT NOT NULL             -- its lines (message/lines.py), for the summary
)""",
        "CREATE INDEX held_alerts_by_silence ON held_alerts (silence_id)",
        f"ALTER TABLE issue_buttons ADD COLUMN silence_id {types.big}",
        "ALTER TABLE issue_buttons ADD COLUMN muted_by TEXT",
        f"ALTER TABLE issue_buttons ADD COLUMN muted_until {types.time}",
        "CREATE INDEX issue_buttons_by_silence ON issue_buttons (silence_id)",
    ]


def defaults_and_warnings(types: Types) -> list[str]:
    """Whether the webhook URL named neither chat nor topic: such an alert follows
    TELEGRAM_CHAT_ID and TELEGRAM_THREAD_ID when it is retried (spool/admin.py). And the
    WARNINGs the relay's processes give once between them (spool/warnings.py)."""
    return [
        f"ALTER TABLE alerts ADD COLUMN to_default {types.flag}",
        f"CREATE TABLE warnings (key TEXT PRIMARY KEY, warned_at {types.time} NOT NULL)",
    ]
