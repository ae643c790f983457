"""When Telegram comes back: the real `gunicorn wsgi:app`, with 2 and with 4 workers, against a
fake Telegram that hangs, loses packets, or is gone while the relay is killed: what only real
connections and processes show. Every alert arrives once (or twice only where Telegram posted it
and its reply was lost), oldest first, within seconds of Telegram answering again. Recovery's
order, 429s, digests and second chances, which need only the wiring, run in-process on fake
time: tests/test_dispatcher.py and tests/test_storms.py."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from relay_app.core.routing import Destination
from relay_app.words import ENGLISH
from tests.conftest import hold_the_lock
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    ANSWER_BOUND,
    QUEUED,
    copies,
    first_seen,
    post,
    posted_in_order,
    spool_settled,
    titled,
    turn_has_come,
    unexplained_repeats,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID
from tests.fake_telegram import FakeTelegram
from tests.prometheus import parse, value

WORKERS = pytest.mark.parametrize("workers", ["2", "4"])
# From Telegram answering again to the last alert in the chat: the target.
RECOVERY_BOUND = 3.0


@WORKERS
def test_a_hanging_telegram_released_gets_the_backlog_within_seconds(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str, workers: str
) -> None:
    relay = start_relay(WEB_CONCURRENCY=workers)
    fake_telegram.set("hang")
    titles = [f"Hung {n}" for n in range(5)]
    with ThreadPoolExecutor(5) as pool:
        answers = list(pool.map(lambda title: post(relay.webhook_url, titled(title)), titles))
    assert all(took < ANSWER_BOUND for _, took in answers), [took for _, took in answers]
    assert {reply.json()["status"] for reply, _ in answers} == {"queued"}
    # Posted at once: they arrived in the order of their spool ids.
    ids = [int(reply.json()["alert"].lstrip("#")) for reply, _ in answers]
    arrived = [title for _, title in sorted(zip(ids, titles, strict=True))]
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    fake_telegram.set("ok")  # let go
    released = time.monotonic()
    assert wait_until(lambda: len(first_seen(fake_telegram)) == len(titles), timeout=10)
    assert max(first_seen(fake_telegram).values()) - released <= RECOVERY_BOUND
    assert posted_in_order(fake_telegram) == arrived
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    # A hung request is never posted by the fake: each once here, but for an answer the relay
    # did not wait for, on a busy machine, which it then says it sent again.
    assert sorted(copies(fake_telegram)) == sorted(titles)
    assert unexplained_repeats(fake_telegram, [relay.logs()]) is None


@WORKERS
def test_a_lossy_network_delivers_all_oldest_first_repeating_only_where_a_reply_was_lost(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str, workers: str
) -> None:
    relay = start_relay(WEB_CONCURRENCY=workers, RELAY_RETRY_ATTEMPTS="10")
    # 25% of requests lost: half before Telegram saw them, half on the way back.
    fake_telegram.set("ok", drop_rate=0.125, lost_reply_rate=0.125)
    titles = [f"Lossy {n:02}" for n in range(40)]
    started = time.monotonic()
    for title in titles:
        reply, _ = post(relay.webhook_url, titled(title))
        assert reply.status_code in {200} | QUEUED
    assert wait_until(lambda: len(first_seen(fake_telegram)) == len(titles), timeout=35)
    assert time.monotonic() - started < 35
    assert posted_in_order(fake_telegram) == titles
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    repeated = sum(count - 1 for count in copies(fake_telegram).values())
    lost_replies = sum(1 for r in fake_telegram.sends() if r.reply_lost)
    lost = [r for r in fake_telegram.received if r.outcome == "dropped" or r.reply_lost]
    assert lost  # it really was lossy
    assert repeated <= lost_replies


@WORKERS
def test_after_sigkill_the_alerts_go_within_seconds_of_the_restart_and_none_twice(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str, workers: str
) -> None:
    relay = start_relay(WEB_CONCURRENCY=workers)
    fake_telegram.stop()  # connections refused
    titles = [f"Killed {n:02}" for n in range(20)]
    for title in titles:
        assert post(relay.webhook_url, titled(title))[0].status_code in QUEUED
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    relay.crash()  # SIGKILL, every process at once
    fake_telegram.start()
    restarted = start_relay(WEB_CONCURRENCY=workers)
    ready = time.monotonic()
    assert wait_until(lambda: len(first_seen(fake_telegram)) == len(titles), timeout=10)
    assert max(first_seen(fake_telegram).values()) - ready <= RECOVERY_BOUND
    assert posted_in_order(fake_telegram) == titles
    # Nothing left to send: no copy can come after this.
    assert wait_until(lambda: spool_settled(spool_path), timeout=15)
    assert unexplained_repeats(fake_telegram, [relay.logs(), restarted.logs()]) is None


def test_a_spool_locked_by_another_process_for_3_s_is_waited_for(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay()
    assert post(relay.webhook_url, titled("Before"))[0].status_code == 200  # the file exists
    here = Destination(int(CHAT_ID), 77)
    assert wait_until(lambda: turn_has_come(spool_path, here), timeout=10)  # the chat's turn
    holder = hold_the_lock(spool_path, 3.0)  # a backup, or sqlite3 by hand
    reply, took = post(relay.webhook_url, titled("While locked"))
    holder.join()
    assert reply.status_code in {200, 202}
    assert 2.9 <= took < 9.5  # waited for the lock, well inside GlitchTip's 10 s
    assert wait_until(lambda: "While locked" in first_seen(fake_telegram), timeout=10)
    logs = relay.logs()
    assert "DURABILITY LOST" not in logs
    assert "kept in memory only" not in logs
    samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
    assert value(samples, "relay_spool_lock_wait_seconds_count") >= 1
    assert value(samples, "relay_spool_lock_wait_seconds_sum") >= 2.5  # about the 3 s held


def test_a_body_nested_5000_deep_is_refused_with_a_reason(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(RELAY_LOG_FORMAT="json")
    deep = b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}"
    reply = requests.post(
        relay.webhook_url, data=deep, headers={"Content-Type": "application/json"}, timeout=5
    )
    assert reply.status_code == 400
    assert "nests deeper than 64 levels" in reply.json()["error"]
    samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
    assert value(samples, "relay_webhooks_total", outcome="rejected", reason="bad_body") == 1
    records = [json.loads(line) for line in relay.logs().splitlines() if line.startswith("{")]
    [record] = [r for r in records if r.get("event") == "webhook"]
    assert (record["status"], record["reason"]) == (400, "bad_body")
    assert "Traceback" not in relay.logs()


def test_a_message_whose_reply_was_lost_is_sent_again_saying_so(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay()
    # Telegram posts the message, and the connection breaks before its answer: the relay
    # cannot know it arrived, so it sends it again.
    fake_telegram.set("lose_reply", methods={"sendMessage"})
    assert post(relay.webhook_url, titled("Posted, reply lost"))[0].status_code == 502
    fake_telegram.set("ok")
    assert wait_until(
        lambda: len([t for t in fake_telegram.texts() if "Posted, reply lost" in t]) == 2,
        timeout=10,
    )
    first, again = [t for t in fake_telegram.texts() if "Posted, reply lost" in t]
    assert not first.startswith(ENGLISH.repeat_note)
    assert again == f"{ENGLISH.repeat_note}\n\n{first}"  # the same text, under a line that says so
