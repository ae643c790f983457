"""Routes under the real `gunicorn wsgi:app`: one webhook's issues to the chats and topics their
routes name, the on-call chat's with its mentions, health checks dropped and counted; a broken
file stops the relay at start, and is refused on a reload while the last good one keeps
routing; a changed good file is taken on the next reload."""

from __future__ import annotations

import os
import shutil
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import requests

from relay_app.spool.database import Database
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import ANSWER_BOUND, post, run_relay_app, wait_until
from tests.e2e.relay_process import CHAT_ID, ROOT, RelayProcess, gunicorn_that_stops, relay_env
from tests.fake_telegram import FakeTelegram
from tests.payloads import issue, issue_alert
from tests.prometheus import parse, value

ON_CALL = "-1002000000001"
EXAMPLE = ROOT / "examples" / "routes.toml"


def in_env(number: int, project: str, environment: str, **more: Any) -> dict[str, Any]:
    fields = [
        {"title": "Project", "value": project, "short": True},
        {"title": "Environment", "value": environment, "short": True},
    ]
    return issue(number, fields=fields, **more)


def with_the_example(
    fake: FakeTelegram, tmp_path: Path, spool_path: str, time_scale: str
) -> tuple[Path, dict[str, str]]:
    """The example routes file, copied to where a test may change it, and a relay's
    environment that reads it; both chats it names known to the fake Telegram."""
    fake.add_chat(CHAT_ID)
    fake.add_chat(ON_CALL)
    routes = tmp_path / "routes.toml"
    shutil.copy(EXAMPLE, routes)
    env = relay_env(
        fake,
        RELAY_SPOOL_PATH=spool_path,
        RELAY_ROUTES=str(routes),
        RELAY_TIME_SCALE=time_scale,
    )
    return routes, env


def test_a_webhooks_issues_go_where_their_routes_say_and_a_reload_takes_only_a_good_file(
    fake_telegram: FakeTelegram, tmp_path: Path, spool_path: str
) -> None:
    routes, env = with_the_example(fake_telegram, tmp_path, spool_path, "0.25")
    relay = RelayProcess(env, tmp_path / "relay.log").wait_ready()
    try:
        assert "; 4 routes from " in relay.logs()  # the start-up summary says it
        payload = issue_alert(
            in_env(1, "payments", "prod", title="CardDeclined: gateway said no"),
            in_env(2, "shop", "staging", title="KeyError: 'basket'"),
            issue(3, title="HealthCheck failed on purpose"),
        )
        reply, _ = post(relay.webhook_url, payload)
        assert reply.status_code in (200, 202), reply.text
        assert len(reply.json()["parts"]) == 2
        assert wait_until(lambda: len(fake_telegram.posted_to(ON_CALL)) == 1, timeout=10)
        assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 1, timeout=10)
        [on_call] = fake_telegram.posted_to(ON_CALL)
        assert "CardDeclined: gateway said no" in on_call.visible()
        assert "KeyError" not in on_call.visible()
        assert on_call.visible().endswith("🔔 For @oncall_ivan, user 123456789")
        [sent] = fake_telegram.messages_to(ON_CALL)
        assert 'href="tg://user?id=123456789"' in sent.body["text"]
        [staging] = fake_telegram.posted_to(CHAT_ID)
        assert (staging.thread, "KeyError: 'basket'" in staging.visible()) == (7, True)
        assert "🔔" not in staging.visible()
        assert not any("HealthCheck" in text for text in fake_telegram.texts())
        samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
        assert value(samples, "relay_alerts_routed_total", route="payments on call") == 1
        assert value(samples, "relay_alerts_routed_total", route="staging") == 1
        assert value(samples, "relay_alerts_dropped_total", route="health checks") == 1
        assert "route 'health checks' dropped 1 of a webhook's issues" in relay.logs()

        # A typo, then a reload: refused, and the last good file keeps routing.
        routes.write_text(
            EXAMPLE.read_text().replace('environment = "staging"', 'envirnment = "s"')
        )
        reloaded = reload(relay)
        assert wait_until(lambda: "RELAY_ROUTES REFUSED on reload" in relay.logs(), 10)
        assert f"{routes}:33: route 4, envirnment: unknown key" in relay.logs()
        assert wait_until(reloaded, 30), relay.logs()
        post(relay.webhook_url, issue_alert(in_env(4, "shop", "staging", title="Still staging")))
        assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=10)
        assert fake_telegram.posted_to(CHAT_ID)[-1].thread == 7

        # A good change, then a reload: taken.
        routes.write_text(EXAMPLE.read_text().replace("thread = 7", f'chat = "{ON_CALL}"'))
        reloaded = reload(relay)
        assert wait_until(reloaded, 30), relay.logs()
        post(relay.webhook_url, issue_alert(in_env(5, "shop", "staging", title="Now on call")))
        assert wait_until(lambda: len(fake_telegram.posted_to(ON_CALL)) == 2, timeout=10)
        assert "Now on call" in fake_telegram.posted_to(ON_CALL)[-1].visible()
    finally:
        relay.stop()
    assert "Traceback" not in relay.logs()


def reload(relay: RelayProcess) -> Any:
    """SIGHUP to the master; a condition that holds once every worker is a new one."""
    before = set(relay.workers())
    os.kill(relay.process.pid, signal.SIGHUP)
    return lambda: len(now := set(relay.workers())) >= 2 and not now & before


def test_a_broken_routes_file_stops_the_relay_at_start_naming_its_line_and_key(
    fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text('[[route]]\nproject = "payments"\nchat = "the on-call chat"\n')
    env = relay_env(
        fake_telegram,
        RELAY_SPOOL_PATH=str(tmp_path / "spool.sqlite3"),
        RELAY_ROUTES=str(routes),
        RELAY_BIND="127.0.0.1:0",
    )
    started = gunicorn_that_stops(env)
    assert started.returncode == 2
    assert (
        f"relay_app cannot start: RELAY_ROUTES: {routes}:3: route 1, chat: 'the on-call chat' "
        "is not a chat id"
    ) in started.stderr
    assert "Booting worker" not in started.stderr


def test_a_restart_with_a_broken_file_starts_on_the_last_good_routes_and_says_so_everywhere(
    fake_telegram: FakeTelegram, tmp_path: Path, spool_path: str
) -> None:
    """GlitchTip never resends: a relay that refused to start over a typo in its routes would
    lose every alert until someone noticed. It starts on the last good routes, kept beside the
    spool, and says so at ERROR, in /readyz, in the metrics and in `relay-app check`."""
    # A time scale of 0.05: the minute between ERRORs is 3 s.
    routes, env = with_the_example(fake_telegram, tmp_path, spool_path, "0.05")
    first = RelayProcess(env, tmp_path / "first.log").wait_ready()
    first.stop()
    assert Path(f"{spool_path}.last-good-routes.toml").read_text() == EXAMPLE.read_text()

    routes.write_text(EXAMPLE.read_text().replace('environment = "staging"', 'envirnment = "s"'))
    relay = RelayProcess(env, tmp_path / "relay.log").wait_ready()
    try:
        typo = f"{routes}:33: route 4, envirnment: unknown key"
        assert "RELAY_ROUTES REFUSED at start, the relay keeps routing by the last good" in (
            relay.logs()
        )
        ready = requests.get(f"{relay.url}/readyz", timeout=5)
        assert ready.status_code == 200
        assert ready.json()["status"] == "ready"
        assert ready.json()["routes"].startswith(f"refused: {typo}")
        assert "; routing by the last good file, accepted at " in ready.json()["routes"]
        samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
        assert value(samples, "relay_routes_reload_ok") == 0
        kept_at = Path(f"{spool_path}.last-good-routes.toml").stat().st_mtime
        assert value(samples, "relay_routes_last_good_timestamp_seconds") == kept_at
        # Said again by the fleet's leader, one process, each (scaled) minute.
        assert wait_until(lambda: relay.logs().count("RELAY_ROUTES REFUSED: ") >= 2, 15)
        # The last good routes route: staging to its topic.
        post(relay.webhook_url, issue_alert(in_env(1, "shop", "staging", title="Staging")))
        assert wait_until(lambda: fake_telegram.posted_to(CHAT_ID), timeout=10)
        assert fake_telegram.posted_to(CHAT_ID)[0].thread == 7
        checked = run_relay_app(env, "check")
        assert checked.returncode != 0
        assert typo in checked.stdout
        assert "the relay routes by the last good routes, accepted at" in checked.stdout

        # Fixed, then reloaded: in force, and nothing more is said.
        shutil.copy(EXAMPLE, routes)
        reloaded = reload(relay)
        assert wait_until(reloaded, 30), relay.logs()
        assert "routes" not in requests.get(f"{relay.url}/readyz", timeout=5).json()
        samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
        assert value(samples, "relay_routes_reload_ok") == 1
    finally:
        relay.stop()
    assert "Traceback" not in relay.logs()


def test_a_webhook_split_three_ways_is_answered_within_one_budget_while_telegram_hangs(
    start_relay: StartRelay, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    """Each part is attempted within the budget the webhook's answer has from its arrival: the
    first waits out its attempt, the others, with no time left, wait in the spool. GlitchTip's
    10 s are never at stake, and nothing is lost."""
    routes = tmp_path / "routes.toml"
    routes.write_text(
        "".join(
            f'[[route]]\nenvironment = "{name}"\nchat = "{chat}"\n\n'
            for name, chat in (("a", "-1002000000001"), ("b", "-1002000000002"))
        )
    )
    relay = start_relay(RELAY_ROUTES=str(routes))
    fake_telegram.set("hang")
    payload = issue_alert(in_env(1, "shop", "a"), in_env(2, "shop", "b"), in_env(3, "shop", "c"))
    reply, took = post(relay.webhook_url, payload)
    assert took < ANSWER_BOUND
    assert reply.status_code == 502
    statuses = [part["status"] for part in reply.json()["parts"]]
    assert statuses == ["queued", "queued", "queued"]
    fake_telegram.set("ok")
    for chat in ("-1002000000001", "-1002000000002", CHAT_ID):
        assert wait_until(lambda chat=chat: fake_telegram.posted_to(chat), timeout=15), chat


def test_a_silent_route_sends_without_sound_and_quiet_hours_keep_only_loud_levels_ringing(
    start_relay: StartRelay, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    # Quiet hours around now, in Tokyo's time.
    tokyo = datetime.now(ZoneInfo("Asia/Tokyo"))
    window = f"{tokyo - timedelta(hours=1):%H:%M}-{tokyo + timedelta(hours=2):%H:%M}"
    routes = tmp_path / "routes.toml"
    routes.write_text(
        "[[route]]\nname = 'staging'\nenvironment = 'staging'\nsilent = true\n"
        f"[[route]]\nname = 'nights'\nproject = 'night-shop'\nquiet_hours = '{window}'\n"
        "timezone = 'Asia/Tokyo'\nloud_levels = ['fatal']\n"
    )
    relay = start_relay(RELAY_ROUTES=str(routes), RELAY_TIME_SCALE="0.25")
    sent = [
        in_env(1, "shop", "staging"),
        in_env(2, "shop", "production"),
        in_env(3, "night-shop", "production"),  # GlitchTip's error colour: maybe fatal
        in_env(4, "night-shop", "production", color="#4b60b4"),  # info
    ]
    for number, alert in enumerate(sent, 1):
        reply, _ = post(relay.webhook_url, issue_alert(alert))
        assert reply.status_code in (200, 202), reply.text
        assert wait_until(lambda n=number: len(fake_telegram.posted_to(CHAT_ID)) == n, 10)
    accepted = [r.body for r in fake_telegram.sends() if r.outcome == "accepted"]
    quiet = [body.get("disable_notification") is True for body in accepted]
    assert quiet == [True, False, False, True]


def test_oncall_calls_whoever_the_rotation_has_on_duty_and_each_handoff_is_said(
    start_relay: StartRelay, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    # The relay's clock 10 s before a handoff (tests/e2e/skewed_wsgi.py): a daily rotation that
    # started four days before it has its fourth person on call until then, its first after.
    zone = ZoneInfo("Asia/Tokyo")
    handoff = (int(time.time()) // 60 + 2) * 60  # a whole minute, as a rotation's start is
    offset = handoff - 10 - time.time()
    start = datetime.fromtimestamp(handoff, zone).replace(tzinfo=None) - timedelta(days=4)
    routes = tmp_path / "routes.toml"
    routes.write_text(
        "[[rotation]]\nname = 'shop'\n"
        "people = ['@anna_ops', '@boris_ops', '@vera_lead', '@gleb_ops']\nevery = '1d'\n"
        f"start = '{start:%Y-%m-%dT%H:%M}'\ntimezone = 'Asia/Tokyo'\nannounce = true\n"
        "[[route]]\nproject = 'shop'\nmention = ['oncall:shop']\n"
    )
    relay = start_relay(
        app="tests.e2e.skewed_wsgi:app",
        RELAY_ROUTES=str(routes),
        RELAY_TEST_CLOCK_OFFSET=str(offset),
    )
    reply, _ = post(relay.webhook_url, issue_alert(in_env(1, "shop", "production")))
    assert reply.status_code == 200, reply.text
    [posted] = fake_telegram.posted_to(CHAT_ID)
    assert posted.visible().endswith("For @gleb_ops")
    # Said once, when the relay's clock reaches it, where the route's alerts go.
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=30)
    said = fake_telegram.posted_to(CHAT_ID)[-1]
    until = datetime.fromtimestamp(handoff + 86400, zone)
    assert said.visible() == (
        f"🔁 On-call handoff, shop: @anna_ops is on call until {until:%d.%m %H:%M} "
        "(Asia/Tokyo), then @boris_ops.\n\n"
        "Nothing is still open."  # the alert had no buttons (no GlitchTip token): none kept
    )
    assert said.thread == 77
    metrics = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
    assert value(metrics, "relay_handoffs_total") == 1


def test_relay_app_summary_send_puts_the_places_summary_in_its_topic(
    start_relay: StartRelay, fake_telegram: FakeTelegram, tmp_path: Path, spool_path: str
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text("[[route]]\nname = 'ops'\nsummary = '09:00'\ntimezone = 'Europe/Moscow'\n")
    relay = start_relay(RELAY_ROUTES=str(routes), RELAY_LANGUAGE="ru")
    # The relay's upkeep finds the place (it counts from then) within a second of its start.
    assert wait_until(lambda: places_known(spool_path) == 1, timeout=10)
    for number in (1, 2):
        reply, _ = post(relay.webhook_url, issue_alert(in_env(number, "shop", "production")))
        assert reply.status_code in (200, 202)
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=15)
    env = relay_env(
        fake_telegram, RELAY_SPOOL_PATH=spool_path, RELAY_ROUTES=str(routes), RELAY_LANGUAGE="ru"
    )
    done = run_relay_app(env, "summary", "--send")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("📋 Сводка за день, ")
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 3, timeout=15)
    summary = fake_telegram.posted_to(CHAT_ID)[-1]
    assert summary.thread == 77  # where the route's alerts go: TELEGRAM_THREAD_ID's topic
    lines = summary.visible().split("\n")
    assert lines[0].startswith("📋 Сводка за день, ")
    assert lines[0].endswith("(Europe/Moscow)")
    # Counted since the relay first looked at the place (its start): both alerts.
    assert lines[-1].startswith("Алерты: доставлено 2")


def places_known(spool_path: str) -> int:
    """How many places the relays on this spool keep a daily summary for."""
    store = Database(spool_path, for_service=False)
    try:
        return int(store.read(lambda tx: tx.one("SELECT count(*) AS n FROM summaries"))["n"])
    finally:
        store.close()
