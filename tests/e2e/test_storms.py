"""An alert storm within Telegram's limits, and routing: the real `gunicorn wsgi:app` (two
workers, each its own process) against a fake Telegram that enforces one message a second per
chat and twenty a minute per group, answering 429 with retry_after to anything faster. Storms
into two chats, a long 429 and backlogs too long for a message, which need only the wiring, run
in-process on fake time: tests/test_storms.py."""

from __future__ import annotations

import collections
import time

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    delivered_titles,
    post,
    post_paced,
    titled,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, SEND_TIMEOUT
from tests.fake_telegram import FakeTelegram

OTHER_CHAT = "-1009876543210"


def assert_each_once(fake: FakeTelegram, titles: list[str]) -> None:
    counts = collections.Counter(delivered_titles(fake))
    assert sorted(counts) == sorted(titles), "lost or unexpected alerts"
    assert max(counts.values()) == 1, [t for t, n in counts.items() if n > 1]


# Time in these storms runs four times faster, Telegram's limits (the fake's) and the relay's
# pace alike (RELAY_TIME_SCALE): a minute of a group's pace in fifteen seconds, with a margin
# between the two paces still wider than a loaded machine's jitter.
SCALE = 0.25


def test_a_storm_of_200_alerts_reaches_a_group_within_a_minute_in_20_messages(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.limits, fake_telegram.time_scale = True, SCALE
    relay = start_relay(WEB_CONCURRENCY="2", RELAY_TIME_SCALE=str(SCALE))
    titles = [f"Storm {n}" for n in range(200)]
    started = time.monotonic()
    answers = post_paced(relay.webhook_url, [titled(t) for t in titles], seconds=10 * SCALE)
    assert max(took for _, took in answers) < SEND_TIMEOUT
    assert {(r.status_code, r.json()["status"]) for r, _ in answers} <= {
        (200, "sent"),
        (202, "queued"),
    }
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 200, timeout=60 * SCALE)
    all_visible_after = time.monotonic() - started
    # A duplicate would arrive in this time.
    assert not wait_until(lambda: len(delivered_titles(fake_telegram)) > 200, timeout=15 * SCALE)
    assert_each_once(fake_telegram, titles)
    assert all_visible_after < 60 * SCALE
    assert len(fake_telegram.messages) <= 20
    assert fake_telegram.too_many_requests() == []  # paced, not pushed back


def test_routing_by_query_string_with_an_allowlist(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(TELEGRAM_ALLOWED_CHAT_IDS=f"{OTHER_CHAT},@ops_room")
    url = relay.webhook_url
    for query, title in (
        ("thread_id=12", "To topic 12"),
        (f"chat_id={OTHER_CHAT}&thread_id=3", "Elsewhere"),
        ("chat_id=@ops_room", "By name"),
    ):
        reply, _ = post(f"{url}?{query}", titled(title))
        assert reply.status_code == 200, reply.text  # the reason is the relay's log line
    sent = [(m["chat_id"], m.get("message_thread_id")) for m in fake_telegram.messages]
    assert sent == [(int(CHAT_ID), 12), (int(OTHER_CHAT), 3), ("@ops_room", None)]

    for query, says in (
        ("chat_id=-100111", "not in TELEGRAM_ALLOWED_CHAT_IDS"),
        ("chat_id=ops", "neither an integer chat id"),
        ("thread_id=twelve", "not a positive integer"),
        ("thread_id=12&thread_id=13", "more than once"),
    ):
        reply, _ = post(f"{url}?{query}", titled(f"Refused {query}"))
        assert reply.status_code == 400
        assert says in reply.json()["error"]
    # Nothing sent for a refused URL, nor later.
    assert not wait_until(lambda: len(fake_telegram.received) > 3, timeout=0.5)
    assert len(fake_telegram.received) == 3
    logs = relay.logs()
    assert logs.count("ALERT NOT DELIVERED: the webhook URL was refused") == 4
    assert "Refused chat_id=-100111" in logs  # the alert's text, for the record
