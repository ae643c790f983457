"""How each database spells what the schema history's steps use (history.py): its types, the
triggers that keep the count of pending alerts, and two functions. The one place the history's
SQL differs between SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass

from .store import Tx


@dataclass(frozen=True)
class Types:
    """How each database spells what the steps use."""

    time: str  # Unix seconds
    big: str  # an id or a topic
    serial: str  # a primary key that numbers itself, never reusing a number
    flag: str  # a yes or no, false unless set
    # The statements that keep `pending_count` (step 4) as alerts come, change state and go:
    # a trigger is the one thing the two databases cannot say alike.
    count_pending: tuple[str, ...]
    # The same, counting alerts alone (step 18): the other writes waiting never count.
    count_pending_alerts: tuple[str, ...]
    # A JSON object built from alternating keys and values, as text.
    json_object: str
    # Sixteen random hexadecimal digits.
    random_name: str


def types_of(tx: Tx) -> Types:
    """The types of the store this unit of work runs on."""
    return SQLITE if tx.dialect.name == "sqlite" else POSTGRES


SQLITE = Types(
    time="REAL",
    big="INTEGER",
    serial="INTEGER PRIMARY KEY AUTOINCREMENT",
    flag="INTEGER NOT NULL DEFAULT 0",
    count_pending=(
        "CREATE TRIGGER pending_added AFTER INSERT ON alerts WHEN NEW.state = 'pending'"
        " BEGIN UPDATE pending_count SET alerts = alerts + 1; END",
        "CREATE TRIGGER pending_removed AFTER DELETE ON alerts WHEN OLD.state = 'pending'"
        " BEGIN UPDATE pending_count SET alerts = alerts - 1; END",
        "CREATE TRIGGER pending_changed AFTER UPDATE OF state ON alerts"
        " WHEN OLD.state != NEW.state"
        " BEGIN UPDATE pending_count"
        " SET alerts = alerts + (NEW.state = 'pending') - (OLD.state = 'pending'); END",
    ),
    count_pending_alerts=(
        "DROP TRIGGER IF EXISTS pending_added",
        "DROP TRIGGER IF EXISTS pending_removed",
        "DROP TRIGGER IF EXISTS pending_changed",
        "CREATE TRIGGER pending_added AFTER INSERT ON jobs"
        " WHEN NEW.state = 'pending' AND NEW.precedence = 0"
        " BEGIN UPDATE pending_count SET alerts = alerts + 1; END",
        "CREATE TRIGGER pending_removed AFTER DELETE ON jobs"
        " WHEN OLD.state = 'pending' AND OLD.precedence = 0"
        " BEGIN UPDATE pending_count SET alerts = alerts - 1; END",
        "CREATE TRIGGER pending_changed AFTER UPDATE OF state, precedence ON jobs"
        " WHEN OLD.state != NEW.state OR OLD.precedence != NEW.precedence"
        " BEGIN UPDATE pending_count SET alerts = alerts"
        " + (NEW.state = 'pending' AND NEW.precedence = 0)"
        " - (OLD.state = 'pending' AND OLD.precedence = 0); END",
    ),
    json_object="json_object",
    random_name="lower(hex(randomblob(8)))",
)
POSTGRES = Types(
    time="DOUBLE PRECISION",
    big="BIGINT",
    serial="BIGSERIAL PRIMARY KEY",
    flag="BOOLEAN NOT NULL DEFAULT FALSE",
    count_pending=(
        """CREATE FUNCTION relay_count_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pending_count SET alerts = alerts
        + (CASE WHEN TG_OP <> 'DELETE' AND NEW.state = 'pending' THEN 1 ELSE 0 END)
        - (CASE WHEN TG_OP <> 'INSERT' AND OLD.state = 'pending' THEN 1 ELSE 0 END);
    RETURN NULL;
END $$""",
        "CREATE TRIGGER pending_counted AFTER INSERT OR DELETE OR UPDATE OF state ON alerts"
        " FOR EACH ROW EXECUTE FUNCTION relay_count_pending()",
    ),
    count_pending_alerts=(
        """CREATE OR REPLACE FUNCTION relay_count_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pending_count SET alerts = alerts
        + (CASE WHEN TG_OP <> 'DELETE' AND NEW.state = 'pending' AND NEW.precedence = 0
           THEN 1 ELSE 0 END)
        - (CASE WHEN TG_OP <> 'INSERT' AND OLD.state = 'pending' AND OLD.precedence = 0
           THEN 1 ELSE 0 END);
    RETURN NULL;
END $$""",
        "DROP TRIGGER IF EXISTS pending_counted ON jobs",
        "CREATE TRIGGER pending_counted AFTER INSERT OR DELETE OR UPDATE OF state, precedence"
        " ON jobs FOR EACH ROW EXECUTE FUNCTION relay_count_pending()",
    ),
    json_object="json_build_object",
    random_name="substr(md5(random()::text), 1, 16)",
)
