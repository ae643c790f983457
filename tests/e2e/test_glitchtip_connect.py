"""`relay-app glitchtip connect` against the fake GlitchTip and the real `gunicorn wsgi:app`: the
alert rule made once and never twice, and with --test the whole path proved (a test event
through the project's DSN, GlitchTip's webhook, the chat), or the failing hop named with its fix."""

from __future__ import annotations

import time

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import run_relay_app
from tests.e2e.relay_process import CHAT_ID, SECRET, free_port, relay_env
from tests.fake_glitchtip import ADMIN_TOKEN, PROJECT, READ_ONLY_TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram


def connect(
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
    *args: str,
    **environ: str,
) -> tuple[int, str, str]:
    env = relay_env(
        fake_telegram,
        **{
            "RELAY_SPOOL_PATH": spool_path,
            "GLITCHTIP_URL": fake_glitchtip.url,
            "GLITCHTIP_SETUP_TOKEN": ADMIN_TOKEN,
            **environ,
        },
    )
    done = run_relay_app(env, "glitchtip", "connect", "--project", PROJECT, *args)
    return done.returncode, done.stdout, done.stderr


def test_connect_makes_one_rule_and_test_proves_the_path_into_the_chat(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay()
    code, out, err = connect(
        fake_telegram,
        fake_glitchtip,
        spool_path,
        "--relay-url",
        relay.url,
        "--test",
        "--wait",
        "20",
    )
    assert code == 0, out + err
    lines = out.splitlines()
    assert (
        lines[0]
        == (
            f"created: alert rule 1 “relay_app: Telegram” in {PROJECT}: issue alerts (each new "
            f"issue's first event) to {relay.url}/webhook/[secret "
        )
        + lines[0].rsplit("[secret ", 1)[1]
    )
    assert lines[1].startswith("hop 1: GlitchTip took the test event “relay_app connect test ")
    assert lines[2] == "hop 2: GlitchTip's webhook reached the relay"
    assert lines[3].startswith("hop 3: the relay delivered the test alert (#")
    # Every --test would leave one more open issue in the project: it is resolved.
    assert lines[4] == "the test issue BACKEND-100 is resolved in GlitchTip"
    assert fake_glitchtip.issues["100"]["status"] == "resolved"
    assert SECRET not in out + err
    [posted] = fake_telegram.posted_to(CHAT_ID)
    assert "relay_app connect test " in posted.visible()
    [rule] = fake_glitchtip.rules.values()
    assert rule["alertRecipients"] == [
        {"id": 1, "recipientType": "webhook", "url": f"{relay.url}/webhook/{SECRET}"}
    ]

    # Again: nothing changes, and no second rule sends each alert twice.
    code, out, _ = connect(fake_telegram, fake_glitchtip, spool_path, "--relay-url", relay.url)
    assert code == 0
    assert out.startswith("unchanged: alert rule 1 “relay_app: Telegram” (already sends to this")
    # A new secret: the same rule, rewritten; and uptime alerts, a rule of their own.
    code, out, _ = connect(
        fake_telegram,
        fake_glitchtip,
        spool_path,
        *("--relay-url", relay.url, "--uptime"),
        RELAY_WEBHOOK_SECRET="a-newer-secret-0123456789abcdefghij",
    )
    assert code == 0
    assert out.splitlines()[0].startswith("updated: alert rule 1 “relay_app: Telegram”")
    assert f"(it sent to {relay.url}/webhook/[secret " in out.splitlines()[0]
    assert out.splitlines()[1].startswith("created: alert rule 2 “relay_app: Telegram” in ")
    assert "uptime alerts" in out.splitlines()[1]
    assert len(fake_glitchtip.rules) == 2
    assert [r["url"] for r in fake_glitchtip.rules[1]["alertRecipients"]] == [
        f"{relay.url}/webhook/a-newer-secret-0123456789abcdefghij"
    ]


def test_a_relay_glitchtip_cannot_reach_is_named_as_the_failing_hop_with_the_docker_fix(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    # This host reaches the relay; GlitchTip, posting to the same address, does not (as from
    # its own container): the test event's webhook is waited for, and the hop named.
    relay = start_relay()
    fake_glitchtip.post_to = f"http://127.0.0.1:{free_port()}"
    code, out, err = connect(
        fake_telegram,
        fake_glitchtip,
        spool_path,
        *("--relay-url", relay.url, "--test", "--wait", "3"),
    )
    assert code == 1
    assert "hop 1: GlitchTip took the test event" in out
    assert "hop 2" not in out
    assert (
        "hop 2 failed: GlitchTip's webhook did not reach the relay within 3 s (it posts to "
        f"{relay.url}/webhook/…; GlitchTip's worker log says why). 127.0.0.1 is GlitchTip's own "
        "host: where GlitchTip runs in a container, that is the container itself, not the relay"
    ) in err
    assert "http://host.docker.internal:8780" in err
    assert out.splitlines()[-1] == "the test issue BACKEND-100 is resolved in GlitchTip"


def test_a_relay_url_nothing_answers_is_said_at_once_and_in_the_last_line(
    fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip, spool_path: str
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    code, out, err = connect(
        fake_telegram,
        fake_glitchtip,
        spool_path,
        *("--relay-url", nowhere, "--test", "--wait", "180"),
    )
    assert code == 1
    assert time.monotonic() - started < 30  # not the 180 s --test would wait
    lines = out.splitlines()
    assert lines[0] == f"hop 0: the relay at {nowhere} did not answer from here: ConnectionError"
    assert lines[1].startswith("created: alert rule 1 ")
    assert "hop 1" not in out  # no test event: its webhook would be waited for in vain
    assert fake_glitchtip.webhooks_sent == []
    last = err.strip().splitlines()[-1]
    assert f"the alert rule points at {nowhere}, which did not answer from here" in last
    assert "http://host.docker.internal:8780" in last


def test_a_rule_of_this_name_at_another_relay_is_not_taken_without_force(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay()
    other = "http://other-relay.example:8780/webhook/their-secret-0123456789abcdef"
    fake_glitchtip.rules[1] = {
        "id": 1,
        "name": "relay_app: Telegram",
        "timespanMinutes": 1,
        "quantity": 1,
        "uptime": False,
        "alertRecipients": [{"id": 1, "recipientType": "webhook", "url": other}],
    }
    code, out, err = connect(fake_telegram, fake_glitchtip, spool_path, "--relay-url", relay.url)
    assert code == 1
    assert out.startswith("refused: alert rule 1 “relay_app: Telegram” in ")
    assert "sends to http://other-relay.example:8780/webhook/[secret" in out
    assert "pass --force" in err
    assert fake_glitchtip.rules[1]["alertRecipients"][0]["url"] == other
    code, out, _ = connect(
        fake_telegram, fake_glitchtip, spool_path, "--relay-url", relay.url, "--force"
    )
    assert code == 0
    assert "(it sent to http://other-relay.example:8780/webhook/[secret" in out
    assert [r["url"] for r in fake_glitchtip.rules[1]["alertRecipients"]] == [
        f"{relay.url}/webhook/{SECRET}"
    ]


def test_a_token_that_may_not_change_alert_rules_says_which_scope(
    fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip, spool_path: str
) -> None:
    code, _, err = connect(
        fake_telegram,
        fake_glitchtip,
        spool_path,
        *("--relay-url", "http://relay:8780"),
        GLITCHTIP_SETUP_TOKEN=READ_ONLY_TOKEN,
    )
    assert code == 1
    assert "GlitchTip answered 403: Permission denied" in err
    assert "alert rules need a token with the project:write scope" in err
    assert READ_ONLY_TOKEN not in err
    assert fake_glitchtip.rules == {}
