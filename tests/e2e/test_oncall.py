"""On call run from the chat, under the real `gunicorn wsgi:app` with the fake Telegram and the
fake GlitchTip: a person sends /start in a private chat with the bot; /cover puts her on call;
an alert calls her in the group and privately, with the alert's buttons; On it pressed in the
private chat takes the issue on the group's card; a taker quiet past `take_for` is called again,
in the group and privately; Let go hands the issue back and the calls go on; /oncall says who
covers whom; `relay-app report` says who took what."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    CHAT_SCALE,
    alert_for,
    labels,
    once_edited,
    post,
    run_relay_app,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, relay_env
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted

ANNA = 5001  # @anna_ops: not in the rotation; she covers it
ROUTES = """
[[rotation]]
name = "payments"
people = ["@boris_ops"]
every = "1d"
start = "2026-01-01T09:00"

[[route]]
mention = ["oncall:payments"]
direct = true
take_for = "8s"
escalate = [{ after = "10m", mention = ["oncall:payments"] }]
"""


def test_a_cover_a_private_call_a_quiet_taker_and_let_go(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
    spool_path: str,
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    variables = {
        "GLITCHTIP_API_TOKEN": TOKEN,
        "GLITCHTIP_URL": fake_glitchtip.url,
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": spool_path,
        "RELAY_TIME_SCALE": CHAT_SCALE,  # the chat's pace, not the route's times
    }
    relay = start_relay(**variables)

    def private() -> list[Posted]:
        return fake_telegram.posted_to(ANNA)

    def in_group(prefix: str) -> list[Posted]:
        return [p for p in fake_telegram.posted_to(CHAT_ID) if p.visible().startswith(prefix)]

    # Anna starts a private chat with the bot; then covers the rotation from the group.
    fake_telegram.say(ANNA, "/start", user_id=ANNA, username="anna_ops")
    assert wait_until(lambda: private(), timeout=10), relay.logs()
    assert private()[0].visible().startswith("👋 From now on")
    fake_telegram.say(CHAT_ID, "/cover payments for 2h", user_id=ANNA, username="anna_ops")
    assert wait_until(lambda: in_group("🔁"), timeout=10), relay.logs()
    assert in_group("🔁")[0].visible().startswith("🔁 @anna_ops covers payments from ")
    assert in_group("🔁")[0].visible().endswith("instead of @boris_ops.")

    # An alert: the group's message calls her, and she is called privately with its buttons.
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 1))
    assert reply.status_code in (200, 202), reply.text  # 202: it waits for the chat's turn
    assert wait_until(lambda: in_group("🔴"), timeout=10), relay.logs()
    [alert] = in_group("🔴")
    assert alert.visible().endswith("🔔 For @anna_ops")
    assert wait_until(lambda: len(private()) == 2, timeout=10), relay.logs()
    call = private()[1]
    assert call.visible().startswith("📟 An alert calls you:")
    assert "ZeroDivisionError" in call.visible()
    assert labels(call)[0] == "👀 On it"

    # On it, pressed in the private chat, takes the issue on the group's card.
    fake_telegram.press(call, "👀 On it", user_id=ANNA, username="anna_ops")
    taken = once_edited(fake_telegram, alert, r"👀 @anna_ops is on it since \d\d:\d\d UTC$")
    assert labels(taken)[0] == "↩️ Let go"

    # Quiet for take_for: she is called again, in the group and privately.
    assert wait_until(lambda: in_group("⏰ BACKEND-1A is still open"), timeout=20), relay.logs()
    [recall] = in_group("⏰ BACKEND-1A is still open")
    assert recall.reply_to == alert.message_id
    assert recall.visible().startswith("⏰ BACKEND-1A is still open, @anna_ops's for 8 s")

    # She lets it go (before the take lapses, 8 s on): On it is back on the card, and the
    # alert's call goes on at once.
    fake_telegram.press(taken, "↩️ Let go", user_id=ANNA, username="anna_ops")
    assert wait_until(lambda: len(private()) >= 3, timeout=10), relay.logs()  # the recall's
    assert wait_until(
        lambda: labels(fake_telegram.message(alert.chat, alert.message_id))[0] == "👀 On it",
        timeout=10,
    ), relay.logs()
    assert wait_until(lambda: in_group("⏰ Nobody has taken"), timeout=10), relay.logs()
    assert in_group("⏰ Nobody has taken")[0].visible() == (
        "⏰ Nobody has taken this alert in 10 min: @anna_ops"
    )
    assert not in_group("⏰ No word from")  # let go before the take lapsed

    # /oncall says who covers whom; the report, who took what.
    fake_telegram.say(CHAT_ID, "/oncall", user_id=4343, username="bo_ops")
    assert wait_until(lambda: in_group("👥"), timeout=10), relay.logs()
    assert "payments: @anna_ops (covering @boris_ops) until " in in_group("👥")[0].visible()
    report = run_relay_app(relay_env(fake_telegram, **variables), "report", "--days", "1")
    assert report.returncode == 0, report.stderr
    assert "Who took what: @anna_ops 1" in report.stdout.split("\n")
    # The private call at delivery, the taker called again, and the step after Let go.
    assert "Calls made: 3" in report.stdout.split("\n")
