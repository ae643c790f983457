"""Telegram through a SOCKS5 proxy (HTTPS_PROXY=socks5h://..., as an SSH tunnel or a local
proxy client offers): messages go through it, under the same hard deadline as without one,
and `relay-app check` says which proxy it used."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest

from relay_app.cli import main
from relay_app.core.errors import RetryableDeliveryError
from relay_app.telegram.client import TelegramClient
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram
from tests.socks_proxy import SocksProxy, running_socks_proxy


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[SocksProxy]:
    with running_socks_proxy() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
            monkeypatch.delenv(name.lower(), raising=False)
        monkeypatch.setenv("ALL_PROXY", proxy.url)  # the fake is http://, the real one https://
        yield proxy


def check_environ(fake: FakeTelegram, **more: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": "s" * 32,
        "TELEGRAM_API_URL": fake.url,
        "RELAY_SPOOL_PATH": "off",
        **more,
    }


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with running_fake_telegram() as fake:
        yield fake


def test_messages_go_through_a_socks_proxy(proxy: SocksProxy, fake: FakeTelegram) -> None:
    client = TelegramClient(fake.url, TOKEN)
    sent = client.send_message(
        -100, "through the tunnel", html=False, thread_id=None, deadline=time.monotonic() + 5
    )
    assert sent["message_id"] >= 1
    assert [text for text in fake.texts()] == ["through the tunnel"]
    assert proxy.carried == [("127.0.0.1", int(fake.url.rsplit(":", 1)[1]))]


def test_a_stalled_proxy_is_cut_off_at_the_deadline(proxy: SocksProxy, fake: FakeTelegram) -> None:
    proxy.stall = True
    client = TelegramClient(fake.url, TOKEN)
    started = time.monotonic()
    with pytest.raises(RetryableDeliveryError):
        client.send_message(
            -100, "stuck", html=False, thread_id=None, deadline=time.monotonic() + 1.0
        )
    assert time.monotonic() - started < 1.0 + 0.5  # the watchdog's tick, not a timeout per step
    assert fake.texts() == []


def test_check_names_the_proxy_it_went_through(
    proxy: SocksProxy, fake: FakeTelegram, tmp_path: object
) -> None:
    out, err = io.StringIO(), io.StringIO()
    fake.add_chat("-1001234567890")
    main(["check"], environ=check_environ(fake), out=out, err=err)
    [token] = [line for line in out.getvalue().splitlines() if "token:" in line]
    assert token.startswith("ok")
    assert f"through the proxy {proxy.url}" in token


def test_when_the_proxy_is_down_check_names_it_rather_than_asking_for_one(
    proxy: SocksProxy, fake: FakeTelegram
) -> None:
    proxy.close()
    out, err = io.StringIO(), io.StringIO()
    environ = check_environ(fake, RELAY_SEND_TIMEOUT="2")
    assert main(["check"], environ=environ, out=out, err=err) == 1
    said = out.getvalue()
    assert f"through the proxy {proxy.url} (HTTPS_PROXY or ALL_PROXY)" in said
    assert "Missing dependencies for SOCKS support" not in said
