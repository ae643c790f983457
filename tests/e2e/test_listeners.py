"""The relay's listeners under the real `gunicorn wsgi:app`: the webhook's, the admin one that
RELAY_ADMIN_BIND adds, what the access log shows of a webhook path, and a start that names
every configuration problem at once."""

from __future__ import annotations

import os

import requests

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import delivered_titles, post, titled, wait_until
from tests.e2e.relay_process import SECRET, free_port, gunicorn_command, run_here
from tests.fake_telegram import FakeTelegram
from tests.prometheus import parse, value


def test_the_admin_listener_serves_metrics_and_readiness_and_the_webhook_listener_does_not(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    relay = start_relay(RELAY_ADMIN_BIND=f"127.0.0.1:{free_port()}")
    assert relay.admin_url != relay.url
    reply, _ = post(relay.webhook_url, titled("Through the public door"))
    assert reply.status_code == 200
    assert wait_until(
        lambda: delivered_titles(fake_telegram) == ["Through the public door"], timeout=10
    )

    for path in ("/metrics", "/readyz", "/healthz"):
        assert requests.get(f"{relay.admin_url}{path}", timeout=5).status_code == 200
        assert requests.get(f"{relay.url}{path}", timeout=5).status_code == 404
    samples = parse(requests.get(f"{relay.admin_url}/metrics", timeout=5).text)
    sent = value(samples, "relay_webhooks_total", outcome="sent", reason="delivered")
    assert sent == 1
    # A Host header is the client's to write; the port a connection came in on is not.
    forged = requests.get(
        f"{relay.url}/metrics", headers={"Host": relay.admin_url.split("//")[1]}, timeout=5
    )
    assert forged.status_code == 404
    admin_webhook = relay.webhook_url.replace(relay.url, relay.admin_url)
    assert requests.post(admin_webhook, json={}, timeout=5).status_code == 404


def test_the_access_log_shows_no_webhook_path_segment_right_or_wrong(
    start_relay: StartRelay,
) -> None:
    relay = start_relay()
    old_secret = "an-old-secret-that-was-rotated-out-0123"
    wrong = relay.webhook_url.replace(SECRET, old_secret)
    assert requests.post(wrong, json={}, timeout=5).status_code == 404
    reply, _ = post(relay.webhook_url + "?thread_id=5", titled("Right secret"))
    assert reply.status_code == 200
    assert wait_until(lambda: relay.logs().count('"POST /webhook/[REDACTED]') == 2, timeout=10)
    logs = relay.logs()
    assert old_secret not in logs
    assert '"POST /webhook/[REDACTED] HTTP/1.1" 404' in logs
    assert '"POST /webhook/[REDACTED]?thread_id=5 HTTP/1.1" 200' in logs


def test_with_nothing_set_gunicorn_names_every_missing_variable_and_exits_2() -> None:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "RELAY_"))}
    finished = run_here(
        gunicorn_command(),
        {**kept, "RELAY_BIND": f"127.0.0.1:{free_port()}", "RELAY_SEND_TIMEOUT": "soon"},
        inherit=False,
    )
    assert finished.returncode == 2
    output = finished.stdout + finished.stderr
    assert "relay_app cannot start: 4 problems:" in output
    for variable in (
        "TELEGRAM_BOT_TOKEN: is not set",
        "TELEGRAM_CHAT_ID: is not set",
        "RELAY_WEBHOOK_SECRET: is not set",
        "RELAY_SEND_TIMEOUT: 'soon' is not a number of seconds",
    ):
        assert variable in output
    assert "Booting worker" not in output
