-- The spool's schema at version 30, as PostgreSQL says it: what a fresh spool is
-- made of (relay_app/spool/current.py). Written by `python -m tests.schema_files` from a
-- spool that took every step of relay_app/spool/history.py; tests/test_schema_files.py
-- checks that the two agree. Do not edit by hand.

CREATE FUNCTION relay_count_pending() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE pending_count SET alerts = alerts
        + (CASE WHEN TG_OP <> 'DELETE' AND NEW.state = 'pending' AND NEW.precedence = 0
           THEN 1 ELSE 0 END)
        - (CASE WHEN TG_OP <> 'INSERT' AND OLD.state = 'pending' AND OLD.precedence = 0
           THEN 1 ELSE 0 END);
    RETURN NULL;
END $$;

CREATE TABLE jobs (
    id bigint NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    chat text NOT NULL,
    thread bigint,
    lane text NOT NULL,
    received_at double precision NOT NULL,
    retry_from double precision NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    unsure_attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at double precision NOT NULL,
    scheduled_at double precision NOT NULL,
    after_failure boolean DEFAULT false NOT NULL,
    second_chance boolean DEFAULT false NOT NULL,
    last_error text,
    dead_at double precision,
    dead_kind text,
    to_default boolean DEFAULT false NOT NULL,
    kind text DEFAULT 'alert'::text NOT NULL,
    data text,
    label text,
    precedence integer DEFAULT 0 NOT NULL,
    CONSTRAINT alerts_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'dead'::text])))
);

CREATE SEQUENCE alerts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE alerts_id_seq OWNED BY jobs.id;

CREATE TABLE board_issues (
    chat text NOT NULL,
    thread bigint NOT NULL,
    issue_id text NOT NULL,
    label text NOT NULL,
    title text NOT NULL,
    link text NOT NULL,
    level text NOT NULL,
    first_at double precision NOT NULL,
    last_at double precision NOT NULL
);

CREATE TABLE boards (
    chat text NOT NULL,
    thread bigint NOT NULL,
    message_id bigint,
    shown text DEFAULT ''::text NOT NULL,
    edited_at double precision,
    clear_since double precision,
    pinned boolean DEFAULT false NOT NULL,
    held_until double precision
);

CREATE TABLE bot (
    id integer NOT NULL,
    CONSTRAINT bot_id_check CHECK ((id = 1))
);

CREATE TABLE chats (
    chat text NOT NULL,
    paused_until double precision,
    paused_at double precision
);

CREATE TABLE covers (
    id bigint NOT NULL,
    rotation text NOT NULL,
    person text NOT NULL,
    starts_at double precision NOT NULL,
    ends_at double precision NOT NULL,
    made_by text NOT NULL,
    made_at double precision NOT NULL
);

CREATE SEQUENCE covers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE covers_id_seq OWNED BY covers.id;

CREATE TABLE direct_calls (
    user_id bigint NOT NULL,
    chat text NOT NULL,
    message_id bigint NOT NULL,
    called_at double precision NOT NULL
);

CREATE TABLE escalations (
    chat text NOT NULL,
    message_id bigint NOT NULL,
    step integer NOT NULL,
    thread bigint,
    due_at double precision NOT NULL,
    after_seconds double precision NOT NULL,
    people text NOT NULL,
    state text DEFAULT 'waiting'::text NOT NULL,
    direct boolean DEFAULT false NOT NULL
);

CREATE TABLE glitchtip_api (
    id integer NOT NULL,
    paused_until double precision,
    paused_at double precision,
    warned_at double precision,
    CONSTRAINT glitchtip_api_id_check CHECK ((id = 1))
);

CREATE TABLE handled_updates (
    key text NOT NULL,
    at double precision NOT NULL
);

CREATE TABLE held_alerts (
    silence_id bigint NOT NULL,
    chat text NOT NULL,
    thread bigint,
    received_at double precision NOT NULL,
    lines text NOT NULL
);

CREATE TABLE issue_buttons (
    key text NOT NULL,
    chat text NOT NULL,
    message_id bigint NOT NULL,
    "position" integer NOT NULL,
    issue_id text NOT NULL,
    origin text NOT NULL,
    label text NOT NULL,
    status text,
    acted_by text,
    acted_at double precision,
    title text,
    org text,
    level text
);

CREATE TABLE issue_ignores (
    key text NOT NULL,
    choosing boolean DEFAULT false NOT NULL,
    snooze text
);

CREATE TABLE issue_takes (
    key text NOT NULL,
    taken_by text NOT NULL,
    taker_id bigint,
    taken_at double precision
);

CREATE TABLE lanes (
    lane text NOT NULL,
    chat text NOT NULL,
    thread bigint,
    holder text,
    token text,
    until double precision
);

CREATE TABLE leader (
    id integer NOT NULL,
    holder text,
    token text,
    until double precision,
    since double precision,
    CONSTRAINT leader_id_check CHECK ((id = 1))
);

CREATE TABLE moved (
    origin text NOT NULL,
    at double precision NOT NULL
);

CREATE TABLE organizations (
    org text NOT NULL,
    alerted_at double precision NOT NULL
);

CREATE TABLE outages (
    lane text NOT NULL,
    link text NOT NULL,
    chat text NOT NULL,
    message_id bigint NOT NULL,
    name text NOT NULL,
    down_at double precision NOT NULL
);

CREATE TABLE pending_count (
    id integer NOT NULL,
    alerts bigint NOT NULL,
    CONSTRAINT pending_count_id_check CHECK ((id = 1))
);

CREATE TABLE people (
    user_id bigint NOT NULL,
    username text,
    name text NOT NULL,
    started_at double precision,
    seen_at double precision NOT NULL
);

CREATE TABLE recalls (
    chat text NOT NULL,
    issue_id text NOT NULL,
    taken_at double precision NOT NULL,
    message_id bigint NOT NULL,
    thread bigint,
    taker text NOT NULL,
    round integer DEFAULT 1 NOT NULL,
    due_at double precision NOT NULL,
    state text DEFAULT 'waiting'::text NOT NULL,
    taker_id bigint
);

CREATE TABLE room_refusals (
    chat text NOT NULL,
    reason text NOT NULL,
    at double precision NOT NULL
);

CREATE TABLE rooms (
    chat text NOT NULL,
    issue_id text NOT NULL,
    thread bigint,
    state text NOT NULL,
    label text NOT NULL,
    title text NOT NULL,
    level text NOT NULL,
    home bigint,
    card bigint,
    why text,
    maker text,
    changed_at double precision NOT NULL
);

CREATE TABLE sends (
    chat text NOT NULL,
    at double precision NOT NULL
);

CREATE TABLE sent_messages (
    chat text NOT NULL,
    message_id bigint NOT NULL,
    html text NOT NULL,
    notes text DEFAULT ''::text NOT NULL,
    sent_at double precision NOT NULL,
    replies_comment_only boolean DEFAULT false NOT NULL,
    take_for double precision,
    thread bigint,
    captioned boolean DEFAULT false NOT NULL,
    copies text
);

CREATE TABLE sentry_assignments (
    issue_id text NOT NULL,
    assigned_to text NOT NULL,
    assigned_at double precision NOT NULL
);

CREATE TABLE sentry_deliveries (
    request_id text NOT NULL,
    received_at double precision NOT NULL
);

CREATE TABLE setup (
    id integer NOT NULL,
    unreached text,
    refused text,
    asked_at double precision,
    CONSTRAINT setup_id_check CHECK ((id = 1))
);

CREATE TABLE silences (
    id bigint NOT NULL,
    chat text NOT NULL,
    issue text,
    project text,
    environment text,
    title text,
    label text,
    created_by text NOT NULL,
    comment text NOT NULL,
    starts_at double precision NOT NULL,
    ends_at double precision NOT NULL,
    ended_at double precision,
    ended_by text,
    held integer DEFAULT 0 NOT NULL,
    issue_title text
);

CREATE SEQUENCE silences_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE silences_id_seq OWNED BY silences.id;

CREATE TABLE snoozes (
    id bigint NOT NULL,
    issue_id text NOT NULL,
    org text NOT NULL,
    label text NOT NULL,
    until_at double precision,
    events bigint,
    baseline bigint,
    by_user text NOT NULL,
    chat text NOT NULL,
    thread bigint,
    message_id bigint NOT NULL,
    snoozed_at double precision NOT NULL,
    ended_at double precision,
    ended text
);

CREATE SEQUENCE snoozes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE snoozes_id_seq OWNED BY snoozes.id;

CREATE TABLE spool_name (
    id integer NOT NULL,
    name text NOT NULL,
    CONSTRAINT spool_name_id_check CHECK ((id = 1))
);

CREATE TABLE summaries (
    place text NOT NULL,
    next_at double precision NOT NULL,
    last_at double precision NOT NULL,
    delivered bigint DEFAULT 0 NOT NULL,
    digested bigint DEFAULT 0 NOT NULL,
    silenced bigint DEFAULT 0 NOT NULL
);

CREATE TABLE takes (
    chat text NOT NULL,
    issue_id text NOT NULL,
    taken_by text NOT NULL,
    taken_at double precision NOT NULL,
    taker_id bigint
);

CREATE TABLE telegram_health (
    id integer NOT NULL,
    state text NOT NULL,
    next_probe_at double precision NOT NULL,
    decided_at double precision NOT NULL,
    prober text NOT NULL,
    probe_until double precision NOT NULL,
    CONSTRAINT telegram_health_id_check CHECK ((id = 1))
);

CREATE TABLE updates_offset (
    id integer NOT NULL,
    next_update bigint DEFAULT 0 NOT NULL,
    CONSTRAINT updates_offset_id_check CHECK ((id = 1))
);

CREATE TABLE warnings (
    key text NOT NULL,
    warned_at double precision NOT NULL
);

CREATE TABLE watch_round (
    id integer NOT NULL,
    next_at double precision,
    CONSTRAINT watch_round_id_check CHECK ((id = 1))
);

CREATE TABLE watched (
    issue_id text NOT NULL,
    org text NOT NULL,
    alert text NOT NULL,
    chat text NOT NULL,
    thread bigint,
    alerted_at double precision NOT NULL,
    escalated_at double precision,
    status text,
    events bigint,
    hourly text,
    first_alerted_at double precision,
    read_at double precision
);

CREATE TABLE webhooks_seen (
    id bigint NOT NULL,
    at double precision NOT NULL,
    alert_id bigint,
    outcome text,
    text text NOT NULL
);

CREATE SEQUENCE webhooks_seen_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhooks_seen_id_seq OWNED BY webhooks_seen.id;

ALTER TABLE ONLY covers ALTER COLUMN id SET DEFAULT nextval('covers_id_seq'::regclass);

ALTER TABLE ONLY jobs ALTER COLUMN id SET DEFAULT nextval('alerts_id_seq'::regclass);

ALTER TABLE ONLY silences ALTER COLUMN id SET DEFAULT nextval('silences_id_seq'::regclass);

ALTER TABLE ONLY snoozes ALTER COLUMN id SET DEFAULT nextval('snoozes_id_seq'::regclass);

ALTER TABLE ONLY webhooks_seen ALTER COLUMN id SET DEFAULT nextval('webhooks_seen_id_seq'::regclass);

ALTER TABLE ONLY jobs
    ADD CONSTRAINT alerts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY board_issues
    ADD CONSTRAINT board_issues_pkey PRIMARY KEY (chat, thread, issue_id);

ALTER TABLE ONLY boards
    ADD CONSTRAINT boards_pkey PRIMARY KEY (chat, thread);

ALTER TABLE ONLY bot
    ADD CONSTRAINT bot_pkey PRIMARY KEY (id);

ALTER TABLE ONLY chats
    ADD CONSTRAINT chats_pkey PRIMARY KEY (chat);

ALTER TABLE ONLY covers
    ADD CONSTRAINT covers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY direct_calls
    ADD CONSTRAINT direct_calls_pkey PRIMARY KEY (user_id, chat, message_id);

ALTER TABLE ONLY escalations
    ADD CONSTRAINT escalations_pkey PRIMARY KEY (chat, message_id, step);

ALTER TABLE ONLY glitchtip_api
    ADD CONSTRAINT glitchtip_api_pkey PRIMARY KEY (id);

ALTER TABLE ONLY handled_updates
    ADD CONSTRAINT handled_updates_pkey PRIMARY KEY (key);

ALTER TABLE ONLY issue_buttons
    ADD CONSTRAINT issue_buttons_pkey PRIMARY KEY (key);

ALTER TABLE ONLY issue_ignores
    ADD CONSTRAINT issue_ignores_pkey PRIMARY KEY (key);

ALTER TABLE ONLY issue_takes
    ADD CONSTRAINT issue_takes_pkey PRIMARY KEY (key);

ALTER TABLE ONLY lanes
    ADD CONSTRAINT lanes_pkey PRIMARY KEY (lane);

ALTER TABLE ONLY leader
    ADD CONSTRAINT leader_pkey PRIMARY KEY (id);

ALTER TABLE ONLY moved
    ADD CONSTRAINT moved_pkey PRIMARY KEY (origin);

ALTER TABLE ONLY organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (org);

ALTER TABLE ONLY outages
    ADD CONSTRAINT outages_pkey PRIMARY KEY (lane, link);

ALTER TABLE ONLY pending_count
    ADD CONSTRAINT pending_count_pkey PRIMARY KEY (id);

ALTER TABLE ONLY people
    ADD CONSTRAINT people_pkey PRIMARY KEY (user_id);

ALTER TABLE ONLY recalls
    ADD CONSTRAINT recalls_pkey PRIMARY KEY (chat, issue_id, taken_at);

ALTER TABLE ONLY room_refusals
    ADD CONSTRAINT room_refusals_pkey PRIMARY KEY (chat);

ALTER TABLE ONLY rooms
    ADD CONSTRAINT rooms_pkey PRIMARY KEY (chat, issue_id);

ALTER TABLE ONLY sent_messages
    ADD CONSTRAINT sent_messages_pkey PRIMARY KEY (chat, message_id);

ALTER TABLE ONLY sentry_assignments
    ADD CONSTRAINT sentry_assignments_pkey PRIMARY KEY (issue_id);

ALTER TABLE ONLY sentry_deliveries
    ADD CONSTRAINT sentry_deliveries_pkey PRIMARY KEY (request_id);

ALTER TABLE ONLY setup
    ADD CONSTRAINT setup_pkey PRIMARY KEY (id);

ALTER TABLE ONLY silences
    ADD CONSTRAINT silences_pkey PRIMARY KEY (id);

ALTER TABLE ONLY snoozes
    ADD CONSTRAINT snoozes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY spool_name
    ADD CONSTRAINT spool_name_pkey PRIMARY KEY (id);

ALTER TABLE ONLY summaries
    ADD CONSTRAINT summaries_pkey PRIMARY KEY (place);

ALTER TABLE ONLY takes
    ADD CONSTRAINT takes_pkey PRIMARY KEY (chat, issue_id, taken_at);

ALTER TABLE ONLY telegram_health
    ADD CONSTRAINT telegram_health_pkey PRIMARY KEY (id);

ALTER TABLE ONLY updates_offset
    ADD CONSTRAINT updates_offset_pkey PRIMARY KEY (id);

ALTER TABLE ONLY warnings
    ADD CONSTRAINT warnings_pkey PRIMARY KEY (key);

ALTER TABLE ONLY watch_round
    ADD CONSTRAINT watch_round_pkey PRIMARY KEY (id);

ALTER TABLE ONLY watched
    ADD CONSTRAINT watched_pkey PRIMARY KEY (issue_id);

ALTER TABLE ONLY webhooks_seen
    ADD CONSTRAINT webhooks_seen_pkey PRIMARY KEY (id);

CREATE INDEX alerts_by_chat ON jobs USING btree (chat, state, after_failure);

CREATE INDEX alerts_by_state ON jobs USING btree (state, id);

CREATE INDEX alerts_in_lane ON jobs USING btree (lane, state, id);

CREATE INDEX covers_by_end ON covers USING btree (ends_at);

CREATE INDEX escalations_due ON escalations USING btree (state, due_at);

CREATE INDEX handled_updates_by_time ON handled_updates USING btree (at);

CREATE INDEX held_alerts_by_silence ON held_alerts USING btree (silence_id);

CREATE INDEX issue_buttons_by_issue ON issue_buttons USING btree (chat, issue_id);

CREATE INDEX issue_buttons_by_message ON issue_buttons USING btree (chat, message_id, "position");

CREATE INDEX jobs_by_chat_and_precedence ON jobs USING btree (chat, state, precedence);

CREATE INDEX jobs_in_lane_by_precedence ON jobs USING btree (lane, state, precedence, id);

CREATE INDEX people_by_username ON people USING btree (username);

CREATE INDEX recalls_due ON recalls USING btree (state, due_at);

CREATE INDEX rooms_by_thread ON rooms USING btree (chat, thread);

CREATE INDEX sends_by_chat ON sends USING btree (chat, at);

CREATE INDEX sends_by_time ON sends USING btree (at);

CREATE INDEX sent_messages_by_time ON sent_messages USING btree (sent_at);

CREATE INDEX sentry_deliveries_by_time ON sentry_deliveries USING btree (received_at);

CREATE INDEX silences_by_chat ON silences USING btree (chat, ended_at, ends_at);

CREATE INDEX snoozes_open ON snoozes USING btree (ended_at, issue_id);

CREATE INDEX takes_by_time ON takes USING btree (taken_at);

CREATE INDEX watched_by_time ON watched USING btree (alerted_at);

CREATE TRIGGER pending_counted AFTER INSERT OR DELETE OR UPDATE OF state, precedence ON jobs FOR EACH ROW EXECUTE FUNCTION relay_count_pending();

INSERT INTO bot (id) VALUES (1);

INSERT INTO glitchtip_api (id, paused_until, paused_at, warned_at) VALUES (1, NULL, NULL, NULL);

INSERT INTO leader (id, holder, token, until, since) VALUES (1, NULL, NULL, NULL, NULL);

INSERT INTO pending_count (id, alerts) VALUES (1, 0);

INSERT INTO setup (id, unreached, refused, asked_at) VALUES (1, NULL, NULL, NULL);

INSERT INTO spool_name (id, name) VALUES (1, substr(md5(random()::text), 1, 16));

INSERT INTO telegram_health (id, state, next_probe_at, decided_at, prober, probe_until) VALUES (1, 'up', 0.0, 0.0, '', 0.0);

INSERT INTO updates_offset (id, next_update) VALUES (1, 0);

INSERT INTO watch_round (id, next_at) VALUES (1, 0.0);
