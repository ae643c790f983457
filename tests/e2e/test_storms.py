"""Alert storms within Telegram's limits, and routing: the real `gunicorn wsgi:app` (two workers)
against a fake Telegram that enforces one message a second per chat and twenty a minute per
group, answering 429 with retry_after to anything faster."""

from __future__ import annotations

import collections
import re
import time
from concurrent.futures import ThreadPoolExecutor

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    QUEUED,
    delivered_titles,
    post,
    post_paced,
    titled,
    titles_in,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, SEND_TIMEOUT
from tests.fake_telegram import FakeTelegram
from tests.telegram_rules import visible_text

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


def test_a_storm_into_two_chats_paces_each_on_its_own(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.limits, fake_telegram.time_scale = True, SCALE
    relay = start_relay(
        WEB_CONCURRENCY="2", TELEGRAM_ALLOWED_CHAT_IDS=OTHER_CHAT, RELAY_TIME_SCALE=str(SCALE)
    )
    to_other = f"{relay.webhook_url}?chat_id={OTHER_CHAT}"
    titles = {
        url: [f"Chat {i} alert {n}" for n in range(40)]
        for i, url in enumerate((relay.webhook_url, to_other))
    }
    with ThreadPoolExecutor(2) as pool:
        answers = pool.map(
            lambda url: post_paced(url, [titled(t) for t in titles[url]], seconds=4 * SCALE),
            titles,
        )
        assert all(r.status_code in {200} | QUEUED for batch in answers for r, _ in batch)
    everything = [t for chat_titles in titles.values() for t in chat_titles]
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 80, timeout=30 * SCALE)
    # A duplicate would arrive in this time.
    assert not wait_until(lambda: len(delivered_titles(fake_telegram)) > 80, timeout=6 * SCALE)
    assert_each_once(fake_telegram, everything)
    assert fake_telegram.too_many_requests() == []
    for chat, chat_titles in ((CHAT_ID, titles[relay.webhook_url]), (OTHER_CHAT, titles[to_other])):
        received = fake_telegram.messages_to(chat)
        in_chat = [
            title
            for r in received
            for title in titles_in(visible_text(r.body["text"], parse_mode="HTML"))
        ]
        assert sorted(in_chat) == sorted(chat_titles)
        assert len(received) <= 8
    # Side by side, not one chat after the other: both began within the first seconds.
    firsts = [fake_telegram.messages_to(chat)[0].at for chat in (CHAT_ID, OTHER_CHAT)]
    assert abs(firsts[0] - firsts[1]) < 8 * SCALE


def test_a_long_429_pause_holds_every_worker(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.limits = True
    relay = start_relay(WEB_CONCURRENCY="2", RELAY_RETRY_ATTEMPTS="1")
    fake_telegram.flood(CHAT_ID, 6)  # Telegram: no message to this chat for 6 s
    titles = [f"Flooded {n}" for n in range(30)]
    answers = post_paced(relay.webhook_url, [titled(t) for t in titles], seconds=3)
    assert {r.json()["status"] for r, _ in answers} == {"queued"}
    assert wait_until(lambda: len(delivered_titles(fake_telegram)) >= 30, timeout=20)
    # A duplicate would arrive in this time.
    assert not wait_until(lambda: len(delivered_titles(fake_telegram)) > 30, timeout=1.5)
    assert_each_once(fake_telegram, titles)
    # The first attempt met the pause; no worker tried the chat again until it was over...
    [pushed_back] = fake_telegram.too_many_requests()
    first_delivery = fake_telegram.messages_to(CHAT_ID)[0].at
    assert first_delivery - pushed_back.at >= 6 - 0.1
    # ...and the pause cost no alert its single retry (RELAY_RETRY_ATTEMPTS=1).
    assert "ALERT NOT DELIVERED" not in relay.logs()
    assert "Telegram asked for a pause of 6 s" in relay.logs()


def test_a_digest_longer_than_telegram_allows_is_split_into_valid_messages(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.limits = True
    relay = start_relay()
    # 150 alerts of about 480 characters: a line each in a backlog, titles cut, never cut out.
    alerts = [titled(f"Long {n} " + "y" * 300) for n in range(150)]
    post_paced(relay.webhook_url, alerts, seconds=2)

    def numbers_seen() -> list[int]:
        return [int(n) for text in fake_telegram.texts() for n in re.findall(r"Long (\d+) y", text)]

    assert wait_until(lambda: len(numbers_seen()) >= 150, timeout=30)
    assert not wait_until(lambda: len(numbers_seen()) > 150, timeout=1.5)  # none again
    assert sorted(numbers_seen()) == list(range(150))  # each once
    digests = [text for text in fake_telegram.texts() if text.startswith("🗂 ")]
    assert len(digests) >= 2  # 149 waiting alerts do not fit in one, even as lines
    assert all(text.endswith("whole issue in GlitchTip.") for text in digests)  # cut, and said
    assert all(len(text) <= 4096 for text in fake_telegram.texts())
    # Every request was accepted: none too long, none with broken HTML.
    assert all(r.outcome == "accepted" for r in fake_telegram.received)


def test_routing_by_query_string_with_an_allowlist(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(TELEGRAM_ALLOWED_CHAT_IDS=f"{OTHER_CHAT},@ops_room")
    url = relay.webhook_url
    assert post(f"{url}?thread_id=12", titled("To topic 12"))[0].status_code == 200
    assert (
        post(f"{url}?chat_id={OTHER_CHAT}&thread_id=3", titled("Elsewhere"))[0].status_code == 200
    )
    assert post(f"{url}?chat_id=@ops_room", titled("By name"))[0].status_code == 200
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


def test_a_missing_topic_is_logged_and_the_alert_sent_to_the_chat_itself(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    fake_telegram.missing_threads = {404}
    reply, _ = post(f"{relay.webhook_url}?thread_id=404", titled("Topic deleted"))
    assert (reply.status_code, reply.json()["status"]) == (502, "queued")
    assert wait_until(lambda: fake_telegram.messages, timeout=10)
    assert not wait_until(lambda: len(fake_telegram.sends()) > 2, timeout=1.5)  # none more
    [(first, outcome), (second, accepted)] = [(r.body, r.outcome) for r in fake_telegram.sends()]
    assert (first["message_thread_id"], outcome) == (404, "Bad Request: message thread not found")
    assert "message_thread_id" not in second
    assert accepted == "accepted"
    assert delivered_titles(fake_telegram) == ["Topic deleted"]
    logs = relay.logs()
    assert "[ERROR] relay_app.delivery.job: TOPIC NOT FOUND: alert #1" in logs
    assert "Topic deleted" in logs
