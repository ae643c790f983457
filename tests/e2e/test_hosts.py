"""Two relays on two hosts, one spool: each real `gunicorn wsgi:app` under a hostname of its own
(`unshare --uts`, as root), on one PostgreSQL database and on one shared SQLite file (two
containers on one volume are two hosts too). A relay on another host cannot be asked whether
it still works on a lane; only its lease says so, and that lease must outlast any attempt it can
be making, the webhook's own included, or a slow Telegram gets the same alert twice."""

from __future__ import annotations

import collections
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import required_tool
from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import delivered_titles, post, titled, wait_until
from tests.e2e.relay_process import RelayProcess
from tests.fake_telegram import FakeTelegram

# Telegram's answer to each sendMessage takes this long: well inside RELAY_SEND_TIMEOUT.
SLOW_TELEGRAM = 3.0
# The answer to the alert in flight when its relay dies: long enough that the test sees it in
# Telegram's hands and kills the relay before the webhook could be answered, even on a busy
# machine; inside RELAY_SEND_TIMEOUT and the webhook's own deadline (9.25 s).
DYING_TELEGRAM = 5.0
# Telegram's answer to the surviving host's sends, after the other died.
SURVIVOR_TELEGRAM = 1.0
SEND_TIMEOUT = "6"


def on_host(name: str) -> list[str]:
    """A command prefix that runs the relay with `name` for its hostname."""
    if os.geteuid() != 0:
        if os.environ.get("RELAY_CI") == "1":
            pytest.fail("a hostname of its own for each relay needs root (unshare --uts)")
        pytest.skip("a hostname of its own for each relay needs root (unshare --uts); CI runs this")
    unshare = required_tool("unshare", "util-linux")
    return [unshare, "--uts", "sh", "-c", f'hostname {name} && exec "$@"', "sh"]


@pytest.fixture(params=["sqlite", "postgres"])
def two_hosts(
    request: pytest.FixtureRequest, start_relay: StartRelay, tmp_path: Path
) -> tuple[RelayProcess, RelayProcess]:
    spool: dict[str, str] = {}  # start_relay's: one file for both

    def local(name: str) -> dict[str, str]:
        """With PostgreSQL, each host's own file for a stall of the database."""
        return {"RELAY_LOCAL_SPOOL_PATH": str(tmp_path / f"{name}.sqlite3")} if spool else {}

    if request.param == "postgres":
        spool = {"RELAY_SPOOL_URL": request.getfixturevalue("pg_url"), "RELAY_SPOOL_PATH": ""}
    first, second = (
        start_relay(on_host(name), RELAY_SEND_TIMEOUT=SEND_TIMEOUT, **spool, **local(name))
        for name in ("relay-a", "relay-b")
    )
    return first, second


def counted(fake: FakeTelegram) -> collections.Counter[str]:
    return collections.Counter(delivered_titles(fake))


def test_relays_on_two_hosts_send_each_alert_once_however_slow_telegram_is(
    two_hosts: tuple[RelayProcess, RelayProcess], fake_telegram: FakeTelegram
) -> None:
    relays = two_hosts
    fake_telegram.set("ok", delay=SLOW_TELEGRAM, methods={"sendMessage"})
    titles = [f"Slow {n}" for n in range(8)]

    def send(number: int) -> int:
        time.sleep(0.5 * number)  # one every half second, to either relay in turn
        reply, _ = post(relays[number % 2].webhook_url, titled(titles[number]))
        return reply.status_code

    with ThreadPoolExecutor(len(titles)) as pool:
        answers = list(pool.map(send, range(len(titles))))
    assert set(answers) <= {200, 202}
    assert wait_until(lambda: set(counted(fake_telegram)) == set(titles), timeout=60), counted(
        fake_telegram
    )
    time.sleep(SLOW_TELEGRAM + 1)  # a second copy still in Telegram's hands would land now
    assert counted(fake_telegram) == dict.fromkeys(titles, 1)


def test_the_other_host_delivers_everything_when_one_relay_dies_mid_attempt(
    two_hosts: tuple[RelayProcess, RelayProcess], fake_telegram: FakeTelegram
) -> None:
    dying, surviving = two_hosts
    fake_telegram.set("ok", delay=DYING_TELEGRAM, methods={"sendMessage"})
    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(post, dying.webhook_url, titled("In flight"))
        assert wait_until(lambda: len(fake_telegram.sends()) == 1, timeout=5)  # in Telegram
        dying.crash()  # SIGKILL to its whole process group, mid-attempt
        assert in_flight.exception(timeout=10) is not None  # no answer came
    # The survivor's own sends still take a while in Telegram's hands.
    fake_telegram.set("ok", delay=SURVIVOR_TELEGRAM, methods={"sendMessage"})
    after = [f"After {n}" for n in range(5)]
    for title in after:
        reply, _ = post(surviving.webhook_url, titled(title))
        assert reply.status_code in (200, 202), reply.text
    assert wait_until(lambda: set(counted(fake_telegram)) >= {"In flight", *after}, timeout=60), (
        counted(fake_telegram)
    )
    # The dead relay's copy landed before its lease let the other host retry (the lease
    # outlasts its attempt); a copy the survivor still has in Telegram's hands would land now.
    time.sleep(SURVIVOR_TELEGRAM + 1)
    copies = counted(fake_telegram)
    assert copies["In flight"] in (1, 2), copies  # it may have arrived: sent once more, at most
    assert [copies[title] for title in after] == [1] * len(after), copies
