-- The spool's schema at version 30, as SQLite says it: what a fresh spool is
-- made of (relay_app/spool/current.py). Written by `python -m tests.schema_files` from a
-- spool that took every step of relay_app/spool/history.py; tests/test_schema_files.py
-- checks that the two agree. Do not edit by hand.

CREATE TABLE "jobs" (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so an id in a log stays unambiguous
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
    chat TEXT NOT NULL,             -- as routing.chat_key spells it
    thread INTEGER,             -- the forum topic, or NULL
    lane TEXT NOT NULL,             -- chat and topic in one key (Destination.lane)
    received_at REAL NOT NULL,  -- when the webhook arrived
    retry_from REAL NOT NULL,   -- start of the retry horizon: arrival, or a retry
    attempts INTEGER NOT NULL DEFAULT 0,         -- made, each counted before it is made
    unsure_attempts INTEGER NOT NULL DEFAULT 0,  -- those that may have reached Telegram
    next_attempt_at REAL NOT NULL,  -- due
    scheduled_at REAL NOT NULL,     -- when that was decided: later than now means
                                            -- the clock stepped back, and it is due now
    after_failure INTEGER NOT NULL DEFAULT 0,     -- waits because Telegram failed
    second_chance INTEGER NOT NULL DEFAULT 0,     -- revived once after dying of used-up attempts
    last_error TEXT,
    dead_at REAL,
    dead_kind TEXT                  -- outcomes.DeathKind
, to_default INTEGER NOT NULL DEFAULT 0, kind TEXT NOT NULL DEFAULT 'alert', data TEXT, label TEXT, precedence INTEGER NOT NULL DEFAULT 0);

CREATE INDEX alerts_in_lane ON "jobs" (lane, state, id);

CREATE INDEX alerts_by_state ON "jobs" (state, id);

CREATE INDEX alerts_by_chat ON "jobs" (chat, state, after_failure);

CREATE TABLE lanes (
    lane TEXT PRIMARY KEY,
    chat TEXT NOT NULL,
    thread INTEGER,
    holder TEXT,                    -- holders.Holder: host, boot, pid, start time
    token TEXT,                     -- the claim's own: every later write presents it
    until REAL              -- for holders elsewhere: when it runs out
);

CREATE TABLE chats (
    chat TEXT PRIMARY KEY,
    paused_until REAL,      -- Telegram's 429: no message to the chat before this
    paused_at REAL          -- when that was decided, for the clock guard
);

CREATE TABLE bot (id INTEGER PRIMARY KEY CHECK (id = 1));

CREATE TABLE sends (chat TEXT NOT NULL, at REAL NOT NULL);

CREATE INDEX sends_by_chat ON sends (chat, at);

CREATE INDEX sends_by_time ON sends (at);

CREATE TABLE telegram_health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL,            -- health.State
    next_probe_at REAL NOT NULL,
    decided_at REAL NOT NULL,
    prober TEXT NOT NULL,
    probe_until REAL NOT NULL
);

CREATE TABLE sent_messages (
    chat TEXT NOT NULL,             -- the chat's id as Telegram answered it
    message_id INTEGER NOT NULL,
    html TEXT NOT NULL,             -- as sent, for the edits that add to it
    notes TEXT NOT NULL DEFAULT '', -- lines added since (a recovery), one per line
    sent_at REAL NOT NULL, replies_comment_only INTEGER NOT NULL DEFAULT 0, take_for REAL, thread INTEGER, captioned INTEGER NOT NULL DEFAULT 0, copies TEXT,
    PRIMARY KEY (chat, message_id)
);

CREATE INDEX sent_messages_by_time ON sent_messages (sent_at);

CREATE TABLE issue_buttons (
    key TEXT PRIMARY KEY,           -- what the button's callback data names: nothing else
    chat TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    issue_id TEXT NOT NULL,
    origin TEXT NOT NULL,           -- of the alert's issue link
    label TEXT NOT NULL,
    status TEXT,                    -- as the last press set it in GlitchTip
    acted_by TEXT,
    acted_at REAL
, title TEXT, org TEXT, level TEXT);

CREATE INDEX issue_buttons_by_message ON issue_buttons (chat, message_id, position);

CREATE TABLE outages (
    lane TEXT NOT NULL,
    link TEXT NOT NULL,             -- the monitor's
    chat TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    down_at REAL NOT NULL,  -- when GlitchTip said it went down
    PRIMARY KEY (lane, link)
);

CREATE TABLE handled_updates (
    key TEXT PRIMARY KEY,           -- 'update:<update_id>' or 'press:<callback query id>'
    at REAL NOT NULL        -- when it was handled
);

CREATE INDEX handled_updates_by_time ON handled_updates (at);

CREATE TABLE pending_count (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    alerts INTEGER NOT NULL
);

CREATE TABLE glitchtip_api (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    paused_until REAL,      -- no look-up of issues' details before this
    paused_at REAL,         -- when that was decided, for the clock guard
    warned_at REAL          -- no longer written: the warnings table has it
);

CREATE TABLE silences (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    chat TEXT NOT NULL,             -- as routing.chat_key spells it
    issue TEXT,                     -- matchers (silences/matching.py): all that are set must match
    project TEXT,
    environment TEXT,
    title TEXT,
    label TEXT,                     -- the muted issue's short id, for a mute button's silence
    created_by TEXT NOT NULL,
    comment TEXT NOT NULL,
    starts_at REAL NOT NULL,
    ends_at REAL NOT NULL,
    ended_at REAL,          -- when it ended (ran out, or was expired early)
    ended_by TEXT,
    held INTEGER NOT NULL DEFAULT 0 -- the alerts it held back from the chat
, issue_title TEXT);

CREATE INDEX silences_by_chat ON silences (chat, ended_at, ends_at);

CREATE TABLE held_alerts (
    silence_id INTEGER NOT NULL,
    chat TEXT NOT NULL,             -- where the alert would have gone: the summary goes there
    thread INTEGER,
    received_at REAL NOT NULL,
    lines TEXT NOT NULL             -- its lines (message/lines.py), for the summary
);

CREATE INDEX held_alerts_by_silence ON held_alerts (silence_id);

CREATE TABLE warnings (key TEXT PRIMARY KEY, warned_at REAL NOT NULL);

CREATE TABLE webhooks_seen (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    alert_id INTEGER,           -- its row in alerts (which says what became of it), or:
    outcome TEXT,                   -- what became of one without a row: silenced, failed
    text TEXT NOT NULL              -- the start of its message's text
);

CREATE TABLE moved (origin TEXT PRIMARY KEY, at REAL NOT NULL);

CREATE TABLE spool_name (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL);

CREATE TABLE escalations (
    chat TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    step INTEGER NOT NULL,
    thread INTEGER,
    due_at REAL NOT NULL,
    after_seconds REAL NOT NULL,
    people TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'waiting', direct INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (chat, message_id, step)
);

CREATE INDEX escalations_due ON escalations (state, due_at);

CREATE TABLE watched (
    issue_id TEXT PRIMARY KEY,
    org TEXT NOT NULL,
    alert TEXT NOT NULL,
    chat TEXT NOT NULL,
    thread INTEGER,
    alerted_at REAL NOT NULL,
    escalated_at REAL
, status TEXT, events INTEGER, hourly TEXT, first_alerted_at REAL, read_at REAL);

CREATE INDEX watched_by_time ON watched (alerted_at);

CREATE TABLE watch_round (id INTEGER PRIMARY KEY CHECK (id = 1), next_at REAL);

CREATE TABLE summaries (
    place TEXT PRIMARY KEY,
    next_at REAL NOT NULL,
    last_at REAL NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    digested INTEGER NOT NULL DEFAULT 0,
    silenced INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE snoozes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    issue_id TEXT NOT NULL,
    org TEXT NOT NULL,
    label TEXT NOT NULL,
    until_at REAL,
    events INTEGER,
    baseline INTEGER,
    by_user TEXT NOT NULL,
    chat TEXT NOT NULL,
    thread INTEGER,
    message_id INTEGER NOT NULL,
    snoozed_at REAL NOT NULL,
    ended_at REAL,
    ended TEXT
);

CREATE INDEX snoozes_open ON snoozes (ended_at, issue_id);

CREATE INDEX jobs_in_lane_by_precedence ON jobs (lane, state, precedence, id);

CREATE INDEX jobs_by_chat_and_precedence ON jobs (chat, state, precedence);

CREATE TRIGGER pending_added AFTER INSERT ON jobs WHEN NEW.state = 'pending' AND NEW.precedence = 0 BEGIN UPDATE pending_count SET alerts = alerts + 1; END;

CREATE TRIGGER pending_removed AFTER DELETE ON jobs WHEN OLD.state = 'pending' AND OLD.precedence = 0 BEGIN UPDATE pending_count SET alerts = alerts - 1; END;

CREATE TRIGGER pending_changed AFTER UPDATE OF state, precedence ON jobs WHEN OLD.state != NEW.state OR OLD.precedence != NEW.precedence BEGIN UPDATE pending_count SET alerts = alerts + (NEW.state = 'pending' AND NEW.precedence = 0) - (OLD.state = 'pending' AND OLD.precedence = 0); END;

CREATE TABLE organizations (org TEXT PRIMARY KEY, alerted_at REAL NOT NULL);

CREATE TABLE leader (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT,                    -- holders.Holder of the leading process
    token TEXT,                     -- drawn by it when it took the lease: its term's own
    until REAL,             -- when the lease lapses unless renewed
    since REAL              -- when this term began
);

CREATE TABLE setup (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    unreached TEXT,                 -- why Telegram could not be reached, until it answered
    refused TEXT,                   -- JSON list of what it refuses; NULL: not answered yet
    asked_at REAL
);

CREATE TABLE updates_offset (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    next_update INTEGER NOT NULL DEFAULT 0  -- getUpdates' offset: the first unconfirmed
);

CREATE INDEX issue_buttons_by_issue ON issue_buttons (chat, issue_id);

CREATE TABLE covers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    rotation TEXT NOT NULL,
    person TEXT NOT NULL,
    starts_at REAL NOT NULL,
    ends_at REAL NOT NULL,
    made_by TEXT NOT NULL,
    made_at REAL NOT NULL
);

CREATE INDEX covers_by_end ON covers (ends_at);

CREATE TABLE people (
    user_id INTEGER PRIMARY KEY,
    username TEXT,
    name TEXT NOT NULL,
    started_at REAL,
    seen_at REAL NOT NULL
);

CREATE INDEX people_by_username ON people (username);

CREATE TABLE direct_calls (
    user_id INTEGER NOT NULL,
    chat TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    called_at REAL NOT NULL,
    PRIMARY KEY (user_id, chat, message_id)
);

CREATE TABLE recalls (
    chat TEXT NOT NULL,
    issue_id TEXT NOT NULL,
    taken_at REAL NOT NULL,
    message_id INTEGER NOT NULL,
    thread INTEGER,
    taker TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 1,
    due_at REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'waiting', taker_id INTEGER,
    PRIMARY KEY (chat, issue_id, taken_at)
);

CREATE INDEX recalls_due ON recalls (state, due_at);

CREATE TABLE takes (
    chat TEXT NOT NULL,
    issue_id TEXT NOT NULL,
    taken_by TEXT NOT NULL,
    taken_at REAL NOT NULL, taker_id INTEGER,
    PRIMARY KEY (chat, issue_id, taken_at)
);

CREATE INDEX takes_by_time ON takes (taken_at);

CREATE TABLE sentry_deliveries (
    request_id TEXT PRIMARY KEY,
    received_at REAL NOT NULL
);

CREATE INDEX sentry_deliveries_by_time ON sentry_deliveries (received_at);

CREATE TABLE rooms (
    chat TEXT NOT NULL,
    issue_id TEXT NOT NULL,
    thread INTEGER,
    state TEXT NOT NULL,
    label TEXT NOT NULL,
    title TEXT NOT NULL,
    level TEXT NOT NULL,
    home INTEGER,
    card INTEGER,
    why TEXT,
    maker TEXT,
    changed_at REAL NOT NULL,
    PRIMARY KEY (chat, issue_id)
);

CREATE INDEX rooms_by_thread ON rooms (chat, thread);

CREATE TABLE room_refusals (
    chat TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    at REAL NOT NULL
);

CREATE TABLE boards (
    chat TEXT NOT NULL,
    thread INTEGER NOT NULL,
    message_id INTEGER,
    shown TEXT NOT NULL DEFAULT '',
    edited_at REAL,
    clear_since REAL,
    pinned INTEGER NOT NULL DEFAULT 0,
    held_until REAL,
    PRIMARY KEY (chat, thread)
);

CREATE TABLE board_issues (
    chat TEXT NOT NULL,
    thread INTEGER NOT NULL,
    issue_id TEXT NOT NULL,
    label TEXT NOT NULL,
    title TEXT NOT NULL,
    link TEXT NOT NULL,
    level TEXT NOT NULL,
    first_at REAL NOT NULL,
    last_at REAL NOT NULL,
    PRIMARY KEY (chat, thread, issue_id)
);

CREATE TABLE sentry_assignments (
    issue_id TEXT PRIMARY KEY,      -- 'sentry:<id>'
    assigned_to TEXT NOT NULL,      -- as Sentry names the assignee: a user, or a team
    assigned_at REAL NOT NULL
);

CREATE TABLE issue_takes (
    key TEXT PRIMARY KEY,  -- the card's row of the issue (issue_buttons.key)
    taken_by TEXT NOT NULL,  -- as the card shows the taker: '@ada', or a name
    taker_id INTEGER,  -- who: Telegram's user id (NULL: kept before ids were)
    taken_at REAL  -- NULL only for a take kept before its time was
);

CREATE TABLE issue_ignores (
    key TEXT PRIMARY KEY,  -- the card's row of the issue (issue_buttons.key)
    choosing INTEGER NOT NULL DEFAULT 0,  -- Ignore's choices shown in place of the row
    snooze TEXT  -- JSON: the condition an ignore lasts until, as the card shows it
);

INSERT INTO bot (id) VALUES (1);

INSERT INTO telegram_health (id, state, next_probe_at, decided_at, prober, probe_until) VALUES (1, 'up', 0.0, 0.0, '', 0.0);

INSERT INTO pending_count (id, alerts) VALUES (1, 0);

INSERT INTO glitchtip_api (id, paused_until, paused_at, warned_at) VALUES (1, NULL, NULL, NULL);

INSERT INTO spool_name (id, name) VALUES (1, lower(hex(randomblob(8))));

INSERT INTO watch_round (id, next_at) VALUES (1, 0.0);

INSERT INTO leader (id, holder, token, until, since) VALUES (1, NULL, NULL, NULL, NULL);

INSERT INTO setup (id, unreached, refused, asked_at) VALUES (1, NULL, NULL, NULL);

INSERT INTO updates_offset (id, next_update) VALUES (1, 0);
