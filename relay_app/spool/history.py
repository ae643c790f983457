"""The spool's schema history, one for SQLite and PostgreSQL alike: one list of steps, written
once in each database's types (`Types`), one version record (the `relay_schema` table), one name
for each column. A fresh spool of either kind takes every step; an older one, the steps after
its version.

The list began as the PostgreSQL spool's own (its steps 1 to 7 keep their numbers, so a
database from before takes the steps it lacks); a SQLite file from before this history kept
its version in `user_version` (1 to 10) and first takes its own old steps (legacy_sqlite.py) to
where the two met. Step 11 is the first that both took together. New steps go at the end, one
statement per item, in `Types`' words where the databases spell a type differently
(dialects.py).
"""

from __future__ import annotations

from .dialects import POSTGRES, SQLITE, Types

__all__ = ["POSTGRES", "SCHEMA_VERSION", "SQLITE", "Types", "statements_after", "steps"]

# The version this code writes. A spool at a later one is a newer relay's: refused.
SCHEMA_VERSION = 30


def steps(types: Types) -> dict[int, list[str]]:
    """Every step, by the version it brings a spool to, in `types`."""
    return {
        1: _queue(types),
        2: acting(types),
        3: handled_updates(types),
        4: _pending_count(types),
        5: lines_and_glitchtip(types),
        6: silences(types),
        7: defaults_and_warnings(types),
        11: _no_longer_written(),
        12: webhook_arrivals(types),
        13: jobs(types),
        14: moved_from_a_host(types),
        15: on_it_and_escalations(types),
        16: watched_issues(types),
        17: snoozes(types),
        18: alerts_first(types),
        19: one_leader(types),
        20: setup_found(types),
        21: offset_in_the_leaders_term(types),
        22: replies_that_only_comment(types),
        23: on_call_from_the_chat(types),
        24: sentry_deliveries(types),
        25: takers_by_id(types),
        26: rooms_and_boards(types),
        27: photo_cards(types),
        28: marks_of_their_own(types),
        29: card_state_of_its_own(types),
        30: alerts_kept_whole(),
    }


def statements_after(version: int, types: Types) -> list[str]:
    """What takes a spool at `version` (0: a fresh one) to SCHEMA_VERSION."""
    return [
        statement
        for step, statements in sorted(steps(types).items())
        if step > version
        for statement in statements
    ]


def _queue(types: Types) -> list[str]:
    """The scheduled queue: alerts, their destinations' leases (lanes), the chats' and the
    bot's rows a relay locks to take a turn, the sends that set the pace, Telegram's health."""
    return [
        f"""CREATE TABLE alerts (
    id {types.serial},  -- never reused, so an id in a log stays unambiguous
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
    chat TEXT NOT NULL,             -- as routing.chat_key spells it
    thread {types.big},             -- the forum topic, or NULL
    lane TEXT NOT NULL,             -- chat and topic in one key (Destination.lane)
    received_at {types.time} NOT NULL,  -- when the webhook arrived
    retry_from {types.time} NOT NULL,   -- start of the retry horizon: arrival, or a retry
    html TEXT NOT NULL,
    text TEXT NOT NULL,
    fallback TEXT NOT NULL,
    entry_html TEXT,                -- its part of a digest; NULL: the message itself
    entry_text TEXT,
    brief_html TEXT,
    brief_text TEXT,
    heading_html TEXT,              -- an issue alert's heading, shown once in a digest
    heading_text TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,         -- made, each counted before it is made
    unsure_attempts INTEGER NOT NULL DEFAULT 0,  -- those that may have reached Telegram
    next_attempt_at {types.time} NOT NULL,  -- due
    scheduled_at {types.time} NOT NULL,     -- when that was decided: later than now means
                                            -- the clock stepped back, and it is due now
    after_failure {types.flag},     -- waits because Telegram failed
    second_chance {types.flag},     -- revived once after dying of used-up attempts
    last_error TEXT,
    dead_at {types.time},
    dead_kind TEXT                  -- outcomes.DeathKind
)""",
        "CREATE INDEX alerts_in_lane ON alerts (lane, state, id)",
        "CREATE INDEX alerts_by_state ON alerts (state, id)",
        "CREATE INDEX alerts_by_chat ON alerts (chat, state, after_failure)",
        f"""CREATE TABLE lanes (
    lane TEXT PRIMARY KEY,
    chat TEXT NOT NULL,
    thread {types.big},
    holder TEXT,                    -- holders.Holder: host, boot, pid, start time
    token TEXT,                     -- the claim's own: every later write presents it
    until {types.time}              -- for holders elsewhere: when it runs out
)""",
        f"""CREATE TABLE chats (
    chat TEXT PRIMARY KEY,
    paused_until {types.time},      -- Telegram's 429: no message to the chat before this
    paused_at {types.time}          -- when that was decided, for the clock guard
)""",
        "CREATE TABLE bot (id INTEGER PRIMARY KEY CHECK (id = 1))",
        "INSERT INTO bot VALUES (1)",
        f"CREATE TABLE sends (chat TEXT NOT NULL, at {types.time} NOT NULL)",
        "CREATE INDEX sends_by_chat ON sends (chat, at)",
        "CREATE INDEX sends_by_time ON sends (at)",
        f"""CREATE TABLE telegram_health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL,            -- health.State
    next_probe_at {types.time} NOT NULL,
    decided_at {types.time} NOT NULL,
    prober TEXT NOT NULL,
    probe_until {types.time} NOT NULL
)""",
        "INSERT INTO telegram_health VALUES (1, 'up', 0, 0, '', 0)",
    ]


def acting(types: Types) -> list[str]:
    """Acting on alerts from the chat (cards/sent.py, spool/poller.py): what each alert is
    about, the sent messages the relay may edit later, their issues' buttons, each uptime
    monitor's last outage message, and who reads Telegram's updates."""
    return [
        "ALTER TABLE alerts ADD COLUMN subjects TEXT",
        f"""CREATE TABLE sent_messages (
    chat TEXT NOT NULL,             -- the chat's id as Telegram answered it
    message_id {types.big} NOT NULL,
    html TEXT NOT NULL,             -- as sent, for the edits that add to it
    notes TEXT NOT NULL DEFAULT '', -- lines added since (a recovery), one per line
    sent_at {types.time} NOT NULL,
    PRIMARY KEY (chat, message_id)
)""",
        "CREATE INDEX sent_messages_by_time ON sent_messages (sent_at)",
        f"""CREATE TABLE issue_buttons (
    key TEXT PRIMARY KEY,           -- what the button's callback data names: nothing else
    chat TEXT NOT NULL,
    message_id {types.big} NOT NULL,
    position INTEGER NOT NULL,
    issue_id TEXT NOT NULL,
    origin TEXT NOT NULL,           -- of the alert's issue link
    label TEXT NOT NULL,
    status TEXT,                    -- as the last press set it in GlitchTip
    acted_by TEXT,
    acted_at {types.time}
)""",
        "CREATE INDEX issue_buttons_by_message ON issue_buttons (chat, message_id, position)",
        f"""CREATE TABLE outages (
    lane TEXT NOT NULL,
    link TEXT NOT NULL,             -- the monitor's
    chat TEXT NOT NULL,
    message_id {types.big} NOT NULL,
    name TEXT NOT NULL,
    down_at {types.time} NOT NULL,  -- when GlitchTip said it went down
    PRIMARY KEY (lane, link)
)""",
        f"""CREATE TABLE updates_poller (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT,                    -- holders.Holder of the one process polling
    until {types.time},
    next_update {types.big} NOT NULL DEFAULT 0  -- getUpdates' offset: the first unconfirmed
)""",
        "INSERT INTO updates_poller (id) VALUES (1)",
    ]


def handled_updates(types: Types) -> list[str]:
    """Each of Telegram's updates acts once (cards/sent.py)."""
    return [
        f"""CREATE TABLE handled_updates (
    key TEXT PRIMARY KEY,           -- 'update:<update_id>' or 'press:<callback query id>'
    at {types.time} NOT NULL        -- when it was handled
)""",
        "CREATE INDEX handled_updates_by_time ON handled_updates (at)",
    ]


def _pending_count(types: Types) -> list[str]:
    """The pending alerts, counted as they change (one row the triggers keep), so a webhook
    checks RELAY_SPOOL_MAX_PENDING without counting every pending row."""
    return [
        f"""CREATE TABLE pending_count (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    alerts {types.big} NOT NULL
)""",
        "INSERT INTO pending_count SELECT 1, count(*) FROM alerts WHERE state = 'pending'",
        *types.count_pending,
    ]


def lines_and_glitchtip(types: Types) -> list[str]:
    """An alert's lines in a backlog's digest (message/lines.py), as JSON; NULL: it packs as
    entries. And whether GlitchTip's API is failing (glitchtip/health.py)."""
    return [
        "ALTER TABLE alerts ADD COLUMN lines TEXT",
        f"""CREATE TABLE glitchtip_api (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    paused_until {types.time},      -- no look-up of issues' details before this
    paused_at {types.time},         -- when that was decided, for the clock guard
    warned_at {types.time}          -- no longer written: the warnings table has it
)""",
        "INSERT INTO glitchtip_api (id) VALUES (1)",
    ]


def silences(types: Types) -> list[str]:
    """Silences (silences/store.py): what each holds back from a chat, the alerts it held for
    its summary, and the mute buttons' state."""
    return [
        f"""CREATE TABLE silences (
    id {types.serial},
    chat TEXT NOT NULL,             -- as routing.chat_key spells it
    issue TEXT,                     -- matchers (silences/matching.py): all that are set must match
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


def _no_longer_written() -> list[str]:
    """The columns of an alert nothing writes any more: its brief entries, which its lines
    replaced (step 5)."""
    return [
        "ALTER TABLE alerts DROP COLUMN brief_html",
        "ALTER TABLE alerts DROP COLUMN brief_text",
    ]


def webhook_arrivals(types: Types) -> list[str]:
    """The webhooks accepted lately, by any process of any relay on the spool (the last
    RECENT_WEBHOOKS): when GlitchTip last reached the relay, which tells "no errors happened" from
    "GlitchTip cannot reach the relay", and what each became, which `relay-app glitchtip connect
    --test` follows into the chat (spool/arrivals.py). And a muted issue's title, as its message
    showed it, for `relay-app silence list`."""
    return [
        f"""CREATE TABLE webhooks_seen (
    id {types.serial},
    at {types.time} NOT NULL,
    alert_id {types.big},           -- its row in alerts (which says what became of it), or:
    outcome TEXT,                   -- what became of one without a row: silenced, failed
    text TEXT NOT NULL              -- the start of its message's text
)""",
        "ALTER TABLE issue_buttons ADD COLUMN title TEXT",
        "ALTER TABLE silences ADD COLUMN issue_title TEXT",
    ]


# The columns in which an alert's row held its message as HTML and text, rendered when the
# webhook came (step 1 and later): step 13 keeps what a pending or dead alert held there, as
# the data of a job whose message was rendered already, and drops them.
_RENDERED = (
    "html",
    "text",
    "fallback",
    "entry_html",
    "entry_text",
    "heading_html",
    "heading_text",
    "subjects",
    "lines",
)


def jobs(types: Types) -> list[str]:
    """Every write to a chat is a job (delivery/outbox.py): an alert or a digest, a card's
    edit, a reply, a reaction. A job holds what it is about as JSON (`data`), rendered when it
    is sent, in the relay's language, by the code then running; `kind` says which. Alerts
    already waiting keep the message they were rendered into, under `rendered`."""
    pairs = ", ".join(f"'{column}', {column}" for column in _RENDERED)
    return [
        "ALTER TABLE alerts RENAME TO jobs",
        "ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'alert'",
        "ALTER TABLE jobs ADD COLUMN data TEXT",
        f"UPDATE jobs SET data = CAST({types.json_object}('rendered',"  # noqa: S608 (fixed text)
        f" {types.json_object}({pairs})) AS TEXT)",
        *(f"ALTER TABLE jobs DROP COLUMN {column}" for column in _RENDERED),
    ]


def moved_from_a_host(types: Types) -> list[str]:
    """What a host's own file held while the spool in PostgreSQL could not take it in time
    moves into the spool when it answers again (spool/moving.py): the name each alert arrived
    with goes along (`label`); each move is recorded by the alert's origin, the file's name and
    its id there, so a move interrupted and made again adds nothing (`moved`); and each spool
    has a name of its own, drawn once, for its alerts' origins."""
    return [
        "ALTER TABLE jobs ADD COLUMN label TEXT",
        f"CREATE TABLE moved (origin TEXT PRIMARY KEY, at {types.time} NOT NULL)",
        "CREATE TABLE spool_name (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL)",
        f"INSERT INTO spool_name VALUES (1, {types.random_name})",  # noqa: S608 (fixed text)
    ]


def on_it_and_escalations(types: Types) -> list[str]:
    """Who said "On it" for an issue of a message (`taken_by`, `taken_at`), and each route's
    escalation step of a sent alert as a timer (docs/oncall.md): due at a time of the store's
    clock, `waiting` until it fires (a reply under the alert naming `people`, JSON) or is
    stopped because someone acted; one row a step, so each fires once across the fleet."""
    return [
        "ALTER TABLE issue_buttons ADD COLUMN taken_by TEXT",
        f"ALTER TABLE issue_buttons ADD COLUMN taken_at {types.time}",
        f"""CREATE TABLE escalations (
    chat TEXT NOT NULL,
    message_id {types.big} NOT NULL,
    step INTEGER NOT NULL,
    thread {types.big},
    due_at {types.time} NOT NULL,
    after_seconds {types.time} NOT NULL,
    people TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'waiting',
    PRIMARY KEY (chat, message_id, step)
)""",
        "CREATE INDEX escalations_due ON escalations (state, due_at)",
    ]


def watched_issues(types: Types) -> list[str]:
    """The issues the relay alerted on, which the watcher asks GlitchTip about
    (watch/watcher.py): each issue alone as the webhook had it, where it went, when, and when it was
    last posted as escalating; and when the fleet's next round of questions is due, which one
    process takes."""
    return [
        f"""CREATE TABLE watched (
    issue_id TEXT PRIMARY KEY,
    org TEXT NOT NULL,
    alert TEXT NOT NULL,
    chat TEXT NOT NULL,
    thread {types.big},
    alerted_at {types.time} NOT NULL,
    escalated_at {types.time}
)""",
        "CREATE INDEX watched_by_time ON watched (alerted_at)",
        f"CREATE TABLE watch_round (id INTEGER PRIMARY KEY CHECK (id = 1), next_at {types.time})",
        "INSERT INTO watch_round VALUES (1, 0)",
    ]


def snoozes(types: Types) -> list[str]:
    """Ignore with a condition (snoozes/snoozing.py): an issue ignored in GlitchTip until a time
    or until so many more events, set unresolved again by the watcher when it is met; and on
    each card's button, whether it shows the choices of Ignore, and the snooze it shows. What
    the watcher last read of each watched issue (its status, events, last 24 hours) and when it
    was first alerted on, for the daily summary and the chat's commands (chat/issues.py);
    and when each chat's next summary is due, which one process posts."""
    return [
        "ALTER TABLE watched ADD COLUMN status TEXT",
        f"ALTER TABLE watched ADD COLUMN events {types.big}",
        "ALTER TABLE watched ADD COLUMN hourly TEXT",
        f"ALTER TABLE watched ADD COLUMN first_alerted_at {types.time}",
        "UPDATE watched SET first_alerted_at = alerted_at",
        f"""CREATE TABLE summaries (
    place TEXT PRIMARY KEY,
    next_at {types.time} NOT NULL,
    last_at {types.time} NOT NULL,
    delivered {types.big} NOT NULL DEFAULT 0,
    digested {types.big} NOT NULL DEFAULT 0,
    silenced {types.big} NOT NULL DEFAULT 0
)""",
        f"ALTER TABLE issue_buttons ADD COLUMN choosing {types.flag}",
        "ALTER TABLE issue_buttons ADD COLUMN snooze TEXT",
        f"""CREATE TABLE snoozes (
    id {types.serial},
    issue_id TEXT NOT NULL,
    org TEXT NOT NULL,
    label TEXT NOT NULL,
    until_at {types.time},
    events {types.big},
    baseline {types.big},
    by_user TEXT NOT NULL,
    chat TEXT NOT NULL,
    thread {types.big},
    message_id {types.big} NOT NULL,
    snoozed_at {types.time} NOT NULL,
    ended_at {types.time},
    ended TEXT
)""",
        "CREATE INDEX snoozes_open ON snoozes (ended_at, issue_id)",
    ]


# What each kind of write waiting when step 18 came was for, read from the start of its data
# (job_rows.insert writes it with json.dumps: keys in the order given, ", " and ": " between),
# as the precedence it takes; the rest are alerts (webhooks' and older rendered ones). In LIKE,
# "_" stands for any one character, "_" included.
def _data_starts(*heads: str) -> str:
    return "(" + " OR ".join(f"data LIKE '{{{head}%'" for head in heads) + ")"


_PRECEDENCE_OF_WAITING = (
    (1, "kind = 'alert' AND " + _data_starts('"handoff":', '"summary":', '"silence_over":')),
    (
        1,
        "kind = 'reply' AND "
        + _data_starts('"say": {"word": "escalation_call"', '"say": {"word": "snooze_back_'),
    ),
    (2, "kind = 'card'"),
    (3, "kind = 'alert' AND " + _data_starts('"link_card":')),
    (3, "kind IN ('reply', 'reaction') AND precedence = 0"),
)


def alerts_first(types: Types) -> list[str]:
    """Alerts first (docs/delivery.md): each job's precedence among its chat's writes, alerts
    (0) before calls, handoffs and summaries (1), those before cards' edits (2), and those
    before answers to what people typed (3); a lane's jobs in that order, then oldest first.
    RELAY_SPOOL_MAX_PENDING counts alerts alone from now on: `pending_count` is counted
    again, by triggers that count precedence 0 only. And the organisations GlitchTip has sent
    the relay alerts of, kept for good (a chat sees only their issues: chat/scope.py), from
    the issues watched now on."""
    return [
        "ALTER TABLE jobs ADD COLUMN precedence INTEGER NOT NULL DEFAULT 0",
        *(
            f"UPDATE jobs SET precedence = {precedence} WHERE {which}"  # noqa: S608 (fixed text)
            for precedence, which in _PRECEDENCE_OF_WAITING
        ),
        "CREATE INDEX jobs_in_lane_by_precedence ON jobs (lane, state, precedence, id)",
        "CREATE INDEX jobs_by_chat_and_precedence ON jobs (chat, state, precedence)",
        *types.count_pending_alerts,
        "UPDATE pending_count SET alerts ="
        " (SELECT count(*) FROM jobs WHERE state = 'pending' AND precedence = 0)",
        f"CREATE TABLE organizations (org TEXT PRIMARY KEY, alerted_at {types.time} NOT NULL)",
        "INSERT INTO organizations (org, alerted_at) SELECT org, max(alerted_at) FROM watched"
        " GROUP BY org",
    ]


def one_leader(types: Types) -> list[str]:
    """One leader for the fleet's chores (delivery/leadership.py): one lease, held by the one
    process of every relay on the spool that polls Telegram's updates, runs the watcher's
    rounds and the upkeep (escalation steps, summaries, handoffs, silences that ran out); it
    renews it every look, and another takes it once it lapses or its holder is gone."""
    return [
        f"""CREATE TABLE leader (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT,                    -- holders.Holder of the leading process
    token TEXT,                     -- drawn by it when it took the lease: its term's own
    until {types.time},             -- when the lease lapses unless renewed
    since {types.time}              -- when this term began
)""",
        "INSERT INTO leader (id) VALUES (1)",
    ]


def setup_found(types: Types) -> list[str]:
    """What the leader's start-up check found of the relay's setup (operating/setup_watch.py),
    for every process's /readyz and gauges: Telegram unreachable (why), or what it refuses (one
    line each), since when. One row; nothing found yet while `asked_at` is unset."""
    return [
        f"""CREATE TABLE setup (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    unreached TEXT,                 -- why Telegram could not be reached, until it answered
    refused TEXT,                   -- JSON list of what it refuses; NULL: not answered yet
    asked_at {types.time}
)""",
        "INSERT INTO setup (id) VALUES (1)",
    ]


def offset_in_the_leaders_term(types: Types) -> list[str]:
    """The offset of Telegram's updates, moved on by the leader under its term's token
    (telegram/poller.py, spool/leader.py). The poller's own lease goes: it only ever named the
    leader again. The offset keeps a row of its own, apart from the lease's: a leader stopped
    while it confirms an update (a SIGSTOP) holds that row's lock, never the lease's."""
    return [
        f"""CREATE TABLE updates_offset (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    next_update {types.big} NOT NULL DEFAULT 0  -- getUpdates' offset: the first unconfirmed
)""",
        "INSERT INTO updates_offset (id, next_update)"
        " SELECT 1, COALESCE((SELECT next_update FROM updates_poller WHERE id = 1), 0)",
        "DROP TABLE updates_poller",
    ]


def replies_that_only_comment(types: Types) -> list[str]:
    """Whether a reply under a message only comments (its route's `reply_takes = false`), or
    also takes its issue, as On it does (chat/replies.py): every message kept so far takes.
    And an issue's buttons in a chat found at once: an issue is one thing in the chat, so On it,
    Resolve and a new message of it look for its other buttons there (cards/sent.py)."""
    return [
        f"ALTER TABLE sent_messages ADD COLUMN replies_comment_only {types.flag}",
        "CREATE INDEX issue_buttons_by_issue ON issue_buttons (chat, issue_id)",
    ]


def on_call_from_the_chat(types: Types) -> list[str]:
    """On call run from the chat (docs/oncall.md): the covers (someone on duty in a rotation
    for an interval, whoever it says); the topic of each sent message, for what is said of a
    place (the report, a handoff's open issues); the people the relay has seen, by Telegram's
    id, with their username and name (a `tg:<id>` mention says the name) and, once they sent
    /start, their private chat with the bot; each private call queued, so that the buttons of
    the message it carries act on the alert it is about; a step that also calls privately
    (`direct`); how long a message's route lets an issue be taken before its taker is called
    again (`take_for`), and those calls as timers, one row per take; and every take, kept after
    a Let go, for the report (who took what, and how soon)."""
    return [
        f"""CREATE TABLE covers (
    id {types.serial},
    rotation TEXT NOT NULL,
    person TEXT NOT NULL,
    starts_at {types.time} NOT NULL,
    ends_at {types.time} NOT NULL,
    made_by TEXT NOT NULL,
    made_at {types.time} NOT NULL
)""",
        "CREATE INDEX covers_by_end ON covers (ends_at)",
        f"""CREATE TABLE people (
    user_id {types.big} PRIMARY KEY,
    username TEXT,
    name TEXT NOT NULL,
    started_at {types.time},
    seen_at {types.time} NOT NULL
)""",
        "CREATE INDEX people_by_username ON people (username)",
        f"""CREATE TABLE direct_calls (
    user_id {types.big} NOT NULL,
    chat TEXT NOT NULL,
    message_id {types.big} NOT NULL,
    called_at {types.time} NOT NULL,
    PRIMARY KEY (user_id, chat, message_id)
)""",
        f"ALTER TABLE escalations ADD COLUMN direct {types.flag}",
        f"ALTER TABLE sent_messages ADD COLUMN take_for {types.time}",
        f"ALTER TABLE sent_messages ADD COLUMN thread {types.big}",
        f"""CREATE TABLE recalls (
    chat TEXT NOT NULL,
    issue_id TEXT NOT NULL,
    taken_at {types.time} NOT NULL,
    message_id {types.big} NOT NULL,
    thread {types.big},
    taker TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 1,
    due_at {types.time} NOT NULL,
    state TEXT NOT NULL DEFAULT 'waiting',
    PRIMARY KEY (chat, issue_id, taken_at)
)""",
        "CREATE INDEX recalls_due ON recalls (state, due_at)",
        f"""CREATE TABLE takes (
    chat TEXT NOT NULL,
    issue_id TEXT NOT NULL,
    taken_by TEXT NOT NULL,
    taken_at {types.time} NOT NULL,
    PRIMARY KEY (chat, issue_id, taken_at)
)""",
        "CREATE INDEX takes_by_time ON takes (taken_at)",
    ]


def sentry_deliveries(types: Types) -> list[str]:
    """Sentry as a second source (docs/sentry.md): the deliveries of its webhooks taken in, by
    their Request-ID, so that the same one again does nothing (sentry/deliveries.py); and on
    each card's button, whom its issue is assigned to in its source, and since when (Sentry
    says so in its issue webhook)."""
    return [
        "ALTER TABLE issue_buttons ADD COLUMN assigned_to TEXT",
        f"ALTER TABLE issue_buttons ADD COLUMN assigned_at {types.time}",
        f"""CREATE TABLE sentry_deliveries (
    request_id TEXT PRIMARY KEY,
    received_at {types.time} NOT NULL
)""",
        "CREATE INDEX sentry_deliveries_by_time ON sentry_deliveries (received_at)",
    ]


def takers_by_id(types: Types) -> list[str]:
    """Who acts, on what (docs/security.md). A person is their Telegram user id: who has an
    issue (On it) is kept by id on its buttons, its takes and its recalls, beside the name
    shown; Let go and a recall compare ids, never names. Takes kept before by a username the
    relay has met get its id; the others keep none (any one allowed to act may let go of
    those). And a GlitchTip issue's button keeps the organization its alert named, the only one
    a press or a reply acts in. The organizations a chat follows are those the trackers' own
    answers showed (the watcher's), no longer those webhooks' links named: the ones kept from
    links are forgotten, and the watcher's next round names them again."""
    return [
        "ALTER TABLE issue_buttons ADD COLUMN org TEXT",
        "DELETE FROM organizations",
        f"ALTER TABLE issue_buttons ADD COLUMN taker_id {types.big}",
        f"ALTER TABLE takes ADD COLUMN taker_id {types.big}",
        f"ALTER TABLE recalls ADD COLUMN taker_id {types.big}",
        "UPDATE issue_buttons SET taker_id = (SELECT p.user_id FROM people p"
        " WHERE '@' || p.username = lower(issue_buttons.taken_by)) WHERE taken_by LIKE '@%'",
        "UPDATE takes SET taker_id = (SELECT p.user_id FROM people p"
        " WHERE '@' || p.username = lower(takes.taken_by)) WHERE taken_by LIKE '@%'",
        "UPDATE recalls SET taker_id = (SELECT p.user_id FROM people p"
        " WHERE '@' || p.username = lower(recalls.taker)) WHERE taker LIKE '@%'",
    ]


def rooms_and_boards(types: Types) -> list[str]:
    """Incident rooms (docs/rooms.md): each issue's forum topic in a chat, and the chats where
    Telegram refused topics (rooms/); the boards kept pinned, and the issues each lists
    (board/)."""
    return [
        f"""CREATE TABLE rooms (
    chat TEXT NOT NULL,
    issue_id TEXT NOT NULL,
    thread {types.big},
    state TEXT NOT NULL,
    label TEXT NOT NULL,
    title TEXT NOT NULL,
    level TEXT NOT NULL,
    home {types.big},
    card {types.big},
    why TEXT,
    maker TEXT,
    changed_at {types.time} NOT NULL,
    PRIMARY KEY (chat, issue_id)
)""",
        "CREATE INDEX rooms_by_thread ON rooms (chat, thread)",
        f"""CREATE TABLE room_refusals (
    chat TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    at {types.time} NOT NULL
)""",
        f"""CREATE TABLE boards (
    chat TEXT NOT NULL,
    thread {types.big} NOT NULL,
    message_id {types.big},
    shown TEXT NOT NULL DEFAULT '',
    edited_at {types.time},
    clear_since {types.time},
    pinned {types.flag},
    held_until {types.time},
    PRIMARY KEY (chat, thread)
)""",
        f"""CREATE TABLE board_issues (
    chat TEXT NOT NULL,
    thread {types.big} NOT NULL,
    issue_id TEXT NOT NULL,
    label TEXT NOT NULL,
    title TEXT NOT NULL,
    link TEXT NOT NULL,
    level TEXT NOT NULL,
    first_at {types.time} NOT NULL,
    last_at {types.time} NOT NULL,
    PRIMARY KEY (chat, thread, issue_id)
)""",
    ]


def photo_cards(types: Types) -> list[str]:
    """27: a card may be a photo (a chart with its issue's buttons), whose caption its edits
    change (editMessageCaption), within 1,024 characters; a message that copies a card's row
    (a chart under it) says whose, and is no alert; each issue's row keeps the level its alert
    said (the weekly report's picture counts alerts by it); each watched issue when the watcher
    last read it (`/issues` says how old its list is)."""
    return [
        f"ALTER TABLE sent_messages ADD COLUMN captioned {types.flag}",
        "ALTER TABLE sent_messages ADD COLUMN copies TEXT",
        "ALTER TABLE issue_buttons ADD COLUMN level TEXT",
        f"ALTER TABLE watched ADD COLUMN read_at {types.time}",
    ]


def marks_of_their_own(types: Types) -> list[str]:
    """28: what a capability says of an issue on its cards is no longer kept in the card's
    record, but read from the capability's own tables with the card (cards/marks.py): a mute
    from the silence Mute made (silences/marks.py), Sentry's assignment from its own table
    (sentry/assignments.py), each issue's latest as its cards showed it. A mute under way at
    the upgrade stays shown: its silence is where it always was."""
    return [
        f"""CREATE TABLE sentry_assignments (
    issue_id TEXT PRIMARY KEY,      -- 'sentry:<id>'
    assigned_to TEXT NOT NULL,      -- as Sentry names the assignee: a user, or a team
    assigned_at {types.time} NOT NULL
)""",
        "INSERT INTO sentry_assignments (issue_id, assigned_to, assigned_at)"
        " SELECT issue_id, MAX(assigned_to), MAX(assigned_at) FROM issue_buttons b"
        " WHERE assigned_to IS NOT NULL AND assigned_at = (SELECT MAX(assigned_at)"
        " FROM issue_buttons c WHERE c.issue_id = b.issue_id AND c.assigned_to IS NOT NULL)"
        " GROUP BY issue_id",
        "DROP INDEX issue_buttons_by_silence",
        *(
            f"ALTER TABLE issue_buttons DROP COLUMN {column}"
            for column in ("silence_id", "muted_by", "muted_until", "assigned_to", "assigned_at")
        ),
    ]


def card_state_of_its_own(types: Types) -> list[str]:
    """29: who has an issue (On it) and Ignore's state on a card (its choices shown, the
    condition an ignore lasts until) are kept in tables of their own, keyed by the card's row
    of the issue (takes/store.py, cards/ignore_state.py), no longer in the card's record: each
    take, choice and condition under way moves there as it stood, on the same cards."""
    return [
        f"""CREATE TABLE issue_takes (
    key TEXT PRIMARY KEY,  -- the card's row of the issue (issue_buttons.key)
    taken_by TEXT NOT NULL,  -- as the card shows the taker: '@ada', or a name
    taker_id {types.big},  -- who: Telegram's user id (NULL: kept before ids were)
    taken_at {types.time}  -- NULL only for a take kept before its time was
)""",
        "INSERT INTO issue_takes (key, taken_by, taker_id, taken_at)"
        " SELECT key, taken_by, taker_id, taken_at FROM issue_buttons WHERE taken_by IS NOT NULL",
        f"""CREATE TABLE issue_ignores (
    key TEXT PRIMARY KEY,  -- the card's row of the issue (issue_buttons.key)
    choosing {types.flag},  -- Ignore's choices shown in place of the row
    snooze TEXT  -- JSON: the condition an ignore lasts until, as the card shows it
)""",
        "INSERT INTO issue_ignores (key, choosing, snooze)"
        " SELECT key, choosing, snooze FROM issue_buttons WHERE choosing OR snooze IS NOT NULL",
        *(
            f"ALTER TABLE issue_buttons DROP COLUMN {column}"
            for column in ("taken_by", "taker_id", "taken_at", "choosing", "snooze")
        ),
    ]


def alerts_kept_whole() -> list[str]:
    """30: an alert's job keeps the alert as its source's page read it (core/alerts.py, under
    `alert`), no longer its source's body (`webhook`), and so does a watched issue's row and a
    link's card. Nothing moves: what a relay before kept is read as it was, by the first
    source's reader, when it is sent. The version says only that jobs of the new form may be
    in the spool, which a relay before would read as unreadable and give up: it refuses the
    spool instead."""
    return []
