"""The start-up summary line (operating/summary.py): what runs, where, and never a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay_app.capabilities import REGISTRY
from relay_app.operating.config import Settings
from relay_app.operating.summary import summary_line, version
from tests.conftest import THEIRS

TOKEN = "123456:" + "A" * 35
SECRET = "s" * 32


def settings(**extra: str) -> Settings:
    return Settings.from_env(
        {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_CHAT_ID": "-1001234567890",
            "RELAY_WEBHOOK_SECRET": SECRET,
            **extra,
        },
        THEIRS,
    )


def test_the_summary_names_what_an_operator_asks_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5h://relay:hunter2@proxy.example:1080")
    line = summary_line(
        settings(
            TELEGRAM_THREAD_ID="77",
            RELAY_SPOOL_PATH="/var/lib/relay-app/relay-spool.sqlite3",
            RELAY_LANGUAGE="ru",
            GLITCHTIP_API_TOKEN="ab" * 32,
            GLITCHTIP_URL="https://glitchtip.example.org",
            TELEGRAM_UPDATES="poll",
        ),
        ["127.0.0.1:8780", "127.0.0.1:9187"],
        REGISTRY.says,
    )
    assert line == (
        f"relay_app {version()}: listening on 127.0.0.1:8780, 127.0.0.1:9187; chat "
        "-1001234567890 topic 77; spool /var/lib/relay-app/relay-spool.sqlite3; language ru; "
        "GlitchTip: alerts, buttons, details and the watcher (https://glitchtip.example.org); "
        "Sentry off (no SENTRY_CLIENT_SECRET); presses: TELEGRAM_UPDATES=poll; Telegram at "
        "https://api.telegram.org through the proxy socks5h://proxy.example:1080"
    )
    assert version() != "unknown"  # installed: the package's own version


def test_the_summary_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    line = summary_line(
        settings(
            RELAY_SPOOL_URL="postgresql://relay:pg-password@db.example/relay",
            TELEGRAM_API_URL="https://bot:api-password@bots.example.org",
        ),
        ["0.0.0.0:8780"],
        REGISTRY.says,
    )
    for secret in (TOKEN, SECRET, "pg-password", "api-password"):
        assert secret not in line
    assert "spool postgresql://relay:***@db.example/relay" in line
    assert "GlitchTip: alerts only (no GLITCHTIP_API_TOKEN: no buttons)" in line
    assert "Telegram at https://bot:***@bots.example.org directly" in line


def test_the_summary_counts_the_routes_in_force() -> None:
    example = str(Path(__file__).resolve().parents[1] / "examples" / "routes.toml")
    line = summary_line(settings(RELAY_ROUTES=example), ["127.0.0.1:8780"])
    assert line.endswith(f"; 4 routes from {example}")
    assert "routes" not in summary_line(settings(), ["127.0.0.1:8780"])


def test_the_summary_names_each_source_and_what_it_enables() -> None:
    # Sentry, a capability, says its own state; the line asks every one, on or off.
    sentry_alone = summary_line(
        settings(SENTRY_CLIENT_SECRET="c" * 64, SENTRY_API_TOKEN="t" * 64),
        ["127.0.0.1:8780"],
        REGISTRY.says,
    )
    assert (
        "GlitchTip: alerts only (no GLITCHTIP_API_TOKEN: no buttons); Sentry: signed alerts, "
        "buttons and details (https://sentry.io); presses: TELEGRAM_UPDATES=poll"
    ) in sentry_alone
    assert "c" * 64 not in sentry_alone
    assert "t" * 64 not in sentry_alone
    signed_only = summary_line(
        settings(SENTRY_CLIENT_SECRET="c" * 64), ["127.0.0.1:8780"], REGISTRY.says
    )
    assert (
        "Sentry: signed alerts only (https://sentry.io; no SENTRY_API_TOKEN: no buttons); "
        "no presses (no source's token)"
    ) in signed_only
    off = summary_line(settings(), ["127.0.0.1:8780"], REGISTRY.says)
    assert "; Sentry off (no SENTRY_CLIENT_SECRET); " in off
    assert "Sentry" not in summary_line(settings(), ["127.0.0.1:8780"])  # the core names none
