"""Operating the relay, end to end: /metrics added up over two gunicorn workers, JSON logs that
follow an alert, and the `relay-app` command against the fake Telegram."""

from __future__ import annotations

import collections
import functools
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from relay_app.core.pacing import TELEGRAMS
from relay_app.core.routing import Destination
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    delivered_titles,
    post,
    spool_settled,
    titled,
    turn_has_come,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, SECRET, RelayProcess, relay_env, run_here
from tests.fake_telegram import TOKEN, FakeTelegram
from tests.payloads import issue, issue_alert
from tests.prometheus import Samples, counted, parse, value

RELAY_APP = Path(sys.executable).with_name("relay-app")
# Longer than the relay's per-chat interval (1.2 s): the next webhook finds the chat's turn free.
# Telegram's pace compressed (RELAY_TIME_SCALE: the fake keeps no limits here), so that a
# chat's next turn, which the tests wait for to see a webhook's own attempt, comes sooner.
SCALE = 0.25
PACE = TELEGRAMS.scaled(SCALE)
# Where relay_env's alerts go: the default chat's topic.
HERE = Destination(int(CHAT_ID), 77)


def scrape(relay: RelayProcess) -> Samples:
    reply = requests.get(f"{relay.url}/metrics", timeout=5)
    assert reply.status_code == 200
    return parse(reply.text)


def json_records(relay: RelayProcess) -> list[dict[str, Any]]:
    """Every line of the log, gunicorn's own and its access log included, as JSON."""
    return [json.loads(line) for line in relay.logs().splitlines() if line.strip()]


def all_delivered(fake: FakeTelegram, titles: list[str]) -> bool:
    return sorted(delivered_titles(fake)) == sorted(titles)


def records_for(records: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    return [record for record in records if label in record.get("alerts", [])]


def test_metrics_add_up_over_two_workers_through_success_outage_and_give_up(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay(WEB_CONCURRENCY="2", RELAY_LOG_FORMAT="json", RELAY_TIME_SCALE=str(SCALE))
    fake = fake_telegram

    # Success: alerts in bursts, until both workers have answered some (gunicorn decides who
    # takes a connection; bursts make both busy). Each burst is sent at once or as a digest.
    titles: list[str] = []
    for burst in range(6):
        batch = [f"Burst {burst}.{n}" for n in range(8)]
        titles += batch
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda title: post(relay.webhook_url, titled(title)), batch))
        assert {reply.status_code for reply, _ in replies} <= {200, 202}
        assert wait_until(functools.partial(all_delivered, fake, list(titles)), timeout=20)
        webhooks = [r for r in json_records(relay) if r.get("event") == "webhook"]
        if len({record["pid"] for record in webhooks}) == 2:
            break
        assert wait_until(lambda: turn_has_come(spool_path, HERE, PACE), timeout=10)
    assert len({record["pid"] for record in webhooks}) == 2, "one worker answered every burst"
    bursts = len(titles)

    # Outage: the webhook's attempt is refused, and so is getMe; nothing more is sent until
    # Telegram answers again, and then the alert goes in the background. Nothing else may be
    # left to send first (a digest's card): its failure would tell the relay that Telegram is
    # down before the webhook comes, and the webhook would rightly make no attempt (202).
    assert wait_until(lambda: spool_settled(spool_path), timeout=20)
    assert wait_until(lambda: turn_has_come(spool_path, HERE, PACE), timeout=10)
    fake.stop()
    reply, _ = post(relay.webhook_url, titled("During the outage"))
    assert (reply.status_code, reply.json()["status"]) == (502, "queued")
    outage_alert = reply.json()["alert"]
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    fake.start()
    assert wait_until(lambda: "During the outage" in delivered_titles(fake), timeout=20)

    # Give-up: Telegram refuses for good.
    assert wait_until(lambda: spool_settled(spool_path), timeout=20)
    assert wait_until(lambda: turn_has_come(spool_path, HERE, PACE), timeout=10)
    fake.set("error", status=403, description="Forbidden: bot was kicked from the supergroup chat")
    reply, _ = post(relay.webhook_url, titled("Refused"))
    assert (reply.status_code, reply.json()["status"]) == (502, "failed")

    # Any worker may answer a scrape: every one must give the same totals, once the relay has
    # settled what it does after the refusal (a loaded host may still be at it at first).
    assert TOKEN not in requests.get(f"{relay.url}/metrics", timeout=5).text
    agreed: list[Samples] = []

    def six_scrapes_agree() -> bool:
        scrapes = [scrape(relay) for _ in range(6)]
        agreed[:] = scrapes[:1] if all(each == scrapes[0] for each in scrapes) else []
        return bool(agreed)

    assert wait_until(six_scrapes_agree, timeout=20)
    samples = agreed[0]
    records = json_records(relay)
    answered = collections.Counter(
        (r["outcome"], r["reason"]) for r in records if r.get("event") == "webhook"
    )
    assert sum(answered.values()) == bursts + 2
    assert answered[("queued", "attempt_failed")] == 1
    assert answered[("failed", "refused")] == 1
    for (outcome, reason), count in answered.items():
        assert value(samples, "relay_webhooks_total", outcome=outcome, reason=reason) == count

    attempts = "relay_delivery_attempts_total"
    # A webhook answered "sent" made the attempt itself, or waited for the dispatcher's when
    # its alert was not the lane's oldest: each attempt is counted by who made it.
    every_attempt = [r for r in records if r.get("event") == "attempt"]
    sync_delivered = sum(r["kind"] == "sync" and r["outcome"] == "delivered" for r in every_attempt)
    assert sync_delivered <= answered[("sent", "delivered")]
    assert counted(
        samples, attempts, sync_delivered, kind="sync", result="delivered", error_code=""
    )
    # Two attempts failed: the outage's webhook's and the refused one's, each made by the
    # webhook, or by the dispatcher's thread when it took the alert first (the webhook waited
    # for it all the same). While Telegram was down, only questions went out.
    failed = [r for r in every_attempt if r["outcome"] != "delivered"]
    assert sorted((r["outcome"], r["error_code"]) for r in failed) == [
        ("permanent_error", 403),
        ("retryable_error", None),
    ]
    refused_during_outage = next(r for r in failed if r["outcome"] == "retryable_error")
    assert refused_during_outage["alerts"] == [outage_alert]
    for attempt in failed:
        code = str(attempt["error_code"] or "")
        kind, result = attempt["kind"], attempt["outcome"]
        assert value(samples, attempts, kind=kind, result=result, error_code=code) == 1
    # Refused ones never reach the fake: the relay's count is the only record of them.
    assert value(samples, "relay_telegram_probes_total", result="failed") >= 1
    assert value(samples, "relay_telegram_probes_total", result="answered") == 1
    assert value(samples, "relay_telegram_up") == 1
    background_attempts = [
        r for r in records if r.get("event") == "attempt" and r["kind"] == "background"
    ]
    assert value(samples, attempts, kind="background", result="delivered", error_code="") == sum(
        r["outcome"] == "delivered" for r in background_attempts
    )

    delivered = bursts + 1
    assert value(samples, "relay_delivery_seconds_count") == delivered
    # A webhook's own attempt takes its lane's waiting alerts along: a digest may be sync too.
    digests = [r for r in every_attempt if r["outcome"] == "delivered" and r["alerts"][1:]]
    assert value(samples, "relay_digest_alerts_count") == len(digests)
    assert value(samples, "relay_digest_alerts_sum") == sum(len(r["alerts"]) for r in digests)
    assert value(samples, "relay_spool_alerts", state="pending") == 0
    assert value(samples, "relay_spool_alerts", state="dead") == 1
    assert value(samples, "relay_spool_oldest_pending_age_seconds") == 0
    assert value(samples, "relay_alerts_undelivered_total") == 1
    assert value(samples, "relay_telegram_rate_limited_total") == 0


def test_json_logs_tell_each_alerts_story_by_its_label(
    start_relay: StartRelay, fake_telegram: FakeTelegram, spool_path: str
) -> None:
    relay = start_relay(RELAY_LOG_FORMAT="json", RELAY_TIME_SCALE=str(SCALE))
    fake_telegram.stop()
    reply, _ = post(relay.webhook_url, titled("Retried"))
    assert reply.status_code == 502
    label = reply.json()["alert"]
    assert wait_until(lambda: "Telegram is not answering" in relay.logs(), timeout=10)
    fake_telegram.start()

    def delivered() -> bool:
        return any(r.get("outcome") == "delivered" for r in records_for(json_records(relay), label))

    assert wait_until(delivered, timeout=20)
    story = records_for(json_records(relay), label)
    # The first attempt is logged as it ends, before the webhook's own record: the webhook's
    # (sync); no pass takes an alert held for its webhook.
    sync, webhook, *attempts = [r for r in story if r.get("event") in ("webhook", "attempt")]
    assert (sync["event"], sync["attempt"], sync["outcome"]) == ("attempt", 1, "retryable_error")
    assert sync["kind"] == "sync"
    assert "connection to Telegram failed" in sync["error"]
    assert (webhook["event"], webhook["status"], webhook["outcome"]) == ("webhook", 502, "queued")
    assert webhook["destination"] == f"chat {CHAT_ID} topic 77"
    assert [a["kind"] for a in attempts] == ["background"] * len(attempts)
    assert [a["attempt"] for a in attempts] == list(range(2, len(attempts) + 2))
    assert [a["outcome"] for a in attempts] == ["retryable_error"] * (len(attempts) - 1) + [
        "delivered"
    ]
    assert all(isinstance(a["latency_ms"], float) for a in [sync, *attempts])

    fake_telegram.set("error", status=403, description="Forbidden: bot was kicked")
    assert wait_until(lambda: turn_has_come(spool_path, HERE, PACE), timeout=10)
    reply, _ = post(relay.webhook_url, titled("Dead"))
    dead = [r for r in json_records(relay) if r.get("event") == "undelivered"]
    assert [r["alerts"] for r in dead] == [[f"#{int(label[1:]) + 1}"]]
    assert dead[0]["level"] == "ERROR"
    assert "Dead" in dead[0]["text"]
    assert dead[0]["error_code"] == 403


def test_relay_app_check_with_the_services_environment(fake_telegram: FakeTelegram) -> None:
    fake_telegram.add_chat(CHAT_ID)
    env = {"PATH": "/usr/bin:/bin", **relay_env(fake_telegram, RELAY_SPOOL_PATH="off")}
    passed = run_here([str(RELAY_APP), "check", "--send"], env, inherit=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert [line.split(":")[0] for line in passed.stdout.splitlines()] == [
        "ok    configuration",
        "ok    sources",
        "ok    spool",
        "ok    token",
        f"ok    chat {CHAT_ID}",
        f"ok    topic 77 of chat {CHAT_ID}",
        "ok    test message",
    ]
    fake_telegram.stop()
    failed = run_here([str(RELAY_APP), "check"], env, inherit=False)
    assert failed.returncode == 1
    assert "FAIL  token: connection to Telegram failed" in failed.stdout
    for output in (passed.stdout, passed.stderr, failed.stdout, failed.stderr):
        assert TOKEN not in output
        assert SECRET not in output


def test_preview_shows_exactly_what_telegram_receives(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    payload = issue_alert(
        issue(1, title="KeyError: 'user' <in> checkout & payments"), issue(2), total=7
    )
    preview = run_here(  # needs no configuration at all
        [str(RELAY_APP), "preview"],
        {"PATH": "/usr/bin:/bin"},
        inherit=False,
        input=json.dumps(payload),
    )
    assert preview.returncode == 0, preview.stderr
    relay = start_relay()
    reply, _ = post(relay.webhook_url, payload)
    assert reply.status_code == 200
    [message] = fake_telegram.messages
    assert preview.stdout == message["text"] + "\n"
    assert preview.stderr.startswith("visible length: ")


def test_gunicorn_makes_the_metrics_directory_and_removes_it_at_exit(
    start_relay: StartRelay, tmp_path: Path
) -> None:
    # A temporary directory of the test's own: other tests' relays may run meanwhile.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    relay = start_relay(TMPDIR=str(temporary))
    [made] = temporary.glob("relay-metrics-*")
    assert requests.get(f"{relay.url}/metrics", timeout=5).status_code == 200
    assert list(made.glob("*.db"))  # the workers' files
    relay.stop()
    assert not made.exists()


def test_relay_metrics_0_serves_no_metrics_and_makes_no_directory(
    start_relay: StartRelay, tmp_path: Path
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    relay = start_relay(RELAY_METRICS="0", TMPDIR=str(temporary))
    assert requests.get(f"{relay.url}/metrics", timeout=5).status_code == 404
    assert list(temporary.glob("relay-metrics-*")) == []
