"""The watcher of GlitchTip (watch/watcher.py): the issues the relay alerted on, asked about in
batches against the fake GlitchTip (states, then hourly counts), the escalating ones posted again
once a day through the routes, with the word and a sparkline; one round per interval for the
whole fleet; GlitchTip failing said once, and costing no alert. On the test's clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from relay_app import Relay
from relay_app.glitchtip.settings import GlitchTipConfig
from relay_app.intake.receive import receive
from relay_app.message.trend import sparkline, trend
from relay_app.routes import parse_routes
from relay_app.watch.store import Watched, WatchStore
from tests.conftest import ROUTE_SOURCES, FakeTime, glitchtip_on, run_background
from tests.fake_glitchtip import TOKEN, FakeGlitchTip, iso_time, running_fake_glitchtip
from tests.in_process import ScriptedTelegram, watcher_of
from tests.payloads import issue, issue_alert, read
from tests.prometheus import parse, value

NOW = 1_800_003_000.0  # 50 minutes into an hour
HOUR = int(NOW // 3600) * 3600


def quiet_day(last_hour: int, previous: int = 0, each_before: int = 2) -> list[list[int]]:
    """GlitchTip's issues-stats for a day: `each_before` events an hour, then `previous` in the
    hour before this one, and `last_hour` in this one so far."""
    hours = [[HOUR - 3600 * back, each_before] for back in range(23, 1, -1)]
    return [*hours, [HOUR - 3600, previous], [HOUR, last_hour]]


def test_the_last_hour_counts_this_hour_and_the_part_of_the_last_still_inside_it() -> None:
    found = trend(quiet_day(last_hour=90, previous=60), NOW)
    # 50 minutes into the hour: the previous hour's last 10 minutes are a sixth of it.
    assert found.last_hour == 100
    assert found.average_before == 2.0
    assert found.escalating(100)
    assert not found.escalating(101)
    # Ten times its average, not only the minimum: 100 an hour before is not a spike.
    busy = trend(quiet_day(last_hour=150, each_before=100), NOW)
    assert not busy.escalating(100)
    assert trend([], NOW).last_hour == 0  # hours without events are absent from the answer


def test_a_sparkline_draws_each_hour_against_the_busiest() -> None:
    assert sparkline([0, 1, 2, 4, 8, 16, 32, 64]) == "▁▁▁▁▂▃▅█"
    assert sparkline([0, 0, 0]) == "▁▁▁"
    assert len(trend(quiet_day(5), NOW).sparkline) == 24


@pytest.fixture
def fake() -> Iterator[FakeGlitchTip]:
    with running_fake_glitchtip() as started:
        yield started


def relay_for(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime, **more: Any
) -> tuple[Relay, ScriptedTelegram]:
    telegram = ScriptedTelegram()
    fake_time.now = NOW
    relay = built(
        telegram,
        theirs=glitchtip_on(GlitchTipConfig(TOKEN, fake.url)),
        **{"details_budget": None, **more},
    )
    return relay, telegram


def alerted(relay: Relay, fake: FakeGlitchTip, fake_time: FakeTime, *numbers: int) -> None:
    """Alerts on these issues, delivered: the watcher knows them from then."""
    links = [fake.add_issue(n, f"BACKEND-{n}A", title=f"Boom {n}") for n in numbers]
    payload = issue_alert(
        *(issue(n, title=f"Boom {n}", link=link) for n, link in zip(numbers, links, strict=True))
    )
    watcher_of(relay).alerted([{"webhook": payload}], "-1001234567890", None)


def test_an_escalating_issue_is_posted_again_once_a_day_with_its_count_and_sparkline(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime
) -> None:
    relay, telegram = relay_for(built, fake, fake_time)
    alerted(relay, fake, fake_time, 1, 2, 3)
    fake.hourly["1"] = quiet_day(last_hour=3000)
    fake.hourly["2"] = quiet_day(last_hour=5)  # quiet
    fake.hourly["3"] = quiet_day(last_hour=4000)
    fake.issues["3"]["status"] = "resolved"  # not watched for spikes once resolved
    done = watcher_of(relay).round()
    assert (done.asked, done.escalating) == (2, 1)  # the states, then the counts
    run_background(relay.dispatcher, fake_time)
    [sent] = telegram.delivered
    first = sent.text.split("\n")[0]
    assert first.startswith("📈 Escalating: 3000 events in the last hour · 24 h: ")
    assert first.endswith("▁" * 23 + "█")
    assert "Boom 1" in sent.text
    # Once a day: the next round finds it escalating still, and posts nothing.
    assert watcher_of(relay).round().escalating == 0
    fake_time.now += 86400
    fake.hourly["1"] = [[pair[0] + 86400, pair[1]] for pair in quiet_day(last_hour=3000)]
    assert watcher_of(relay).round().escalating == 1
    samples = parse(relay.metrics.exposition().decode())
    assert value(samples, "relay_escalating_posts_total") == 2
    assert value(samples, "relay_watcher_requests_total", outcome="answered") == 6  # 3 rounds


def test_a_round_for_a_thousand_issues_takes_a_few_requests(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime
) -> None:
    relay, _ = relay_for(built, fake, fake_time)
    assert relay.spool is not None
    for number in range(1, 1001):
        fake.add_issue(number, f"BACKEND-{number}")
    relay.spool.of(WatchStore).watch(
        [
            Watched(str(n), "acme", {"attachments": [issue(n)]}, "-1001234567890", None)
            for n in range(1, 1001)
        ],
        now=NOW,
    )
    for spiking in range(991, 1001):
        fake.hourly[str(spiking)] = quiet_day(last_hour=5000)
    before = len(fake.requests)
    # The states of all, 100 a request (cards in step); their counts, 200 a request.
    done = watcher_of(relay).round()
    assert (done.asked, done.escalating) == (15, 10)
    assert len(fake.requests) - before == 15


def test_one_round_per_interval_for_the_whole_fleet(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime
) -> None:
    relays = [relay_for(built, fake, fake_time)[0] for _ in range(3)]
    stores = [relay.spool.of(WatchStore) for relay in relays if relay.spool is not None]
    # None: this one asks; else the seconds until the round is due, when its leader looks.
    taken = [store.take_round(now=NOW, every=60.0) for store in stores]
    assert taken == [None, pytest.approx(60.0), pytest.approx(60.0)]
    assert [store.take_round(now=NOW + 59, every=60.0) for store in stores] == [
        pytest.approx(1.0)
    ] * 3
    assert stores[2].take_round(now=NOW + 60, every=60.0) is None


def test_glitchtip_refusing_the_token_is_said_once_and_costs_no_alert(
    built: Callable[..., Relay],
    fake: FakeGlitchTip,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    relay, _ = relay_for(built, fake, fake_time)
    alerted(relay, fake, fake_time, 1)
    fake.tokens.pop(TOKEN)
    for _ in range(3):
        assert watcher_of(relay).round().escalating == 0
    said = [r.getMessage() for r in caplog.records if "the watcher cannot ask" in r.getMessage()]
    assert len(said) == 1
    samples = parse(relay.metrics.exposition().decode())
    assert value(samples, "relay_watcher_requests_total", outcome="failed") == 3


def test_routes_and_mentions_apply_to_the_escalating_post(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime
) -> None:
    routes = parse_routes(
        "[[route]]\ntitle = 'Boom'\nchat = -1002000000001\nmention = ['@anna_ops']\n",
        "r.toml",
        ROUTE_SOURCES,
    )
    relay, telegram = relay_for(built, fake, fake_time, routes=routes)
    alerted(relay, fake, fake_time, 1)
    fake.hourly["1"] = quiet_day(last_hour=500)
    assert watcher_of(relay).round().escalating == 1
    run_background(relay.dispatcher, fake_time)
    [sent] = telegram.delivered
    assert telegram.accepted_to[0].chat == -1002000000001
    assert sent.text.endswith("For @anna_ops")


def test_an_issue_alerted_on_again_shows_its_last_day_in_its_details(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime
) -> None:
    # The hours come with the issue's details, within their budget (off the webhook's path).
    relay, telegram = relay_for(built, fake, fake_time, details_budget=2.0)
    alerted(relay, fake, fake_time, 1)
    fake.hourly["1"] = quiet_day(last_hour=40, each_before=1)
    watcher_of(relay).round()  # what it read is kept
    # GlitchTip alerts on the issue again (resolved, then a new event): its hours go with it.
    link = f"{fake.url}/acme/issues/1"
    again = issue_alert(issue(1, title="Boom 1", link=link))
    relay.webhooks.route(receive(read(again), relay.settings.default_destination, time.monotonic()))
    run_background(relay.dispatcher, fake_time)
    [sent] = telegram.delivered
    [line] = [line for line in sent.text.split("\n") if "24 h: " in line]
    assert line.startswith("🔁 Seen 3 times · first seen ")
    assert line.endswith(" · 24 h: " + "▁" * 23 + "█")


def test_an_answer_that_cannot_be_glitchtips_spoils_its_issue_alone_said_once(
    built: Callable[..., Relay],
    fake: FakeGlitchTip,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    relay, telegram = relay_for(built, fake, fake_time)
    alerted(relay, fake, fake_time, 1, 2, 3, 4, 5)
    fake.hourly["1"] = [[HOUR, float("nan")]]  # type: ignore[list-item]  # JSON's NaN
    fake.issues["2"]["count"] = str(10**30)
    fake.hourly["3"] = [[HOUR, 10**30]]
    fake.issues["4"]["status"] = "on fire"
    fake.hourly["5"] = quiet_day(last_hour=3000)  # escalating, and readable
    done = watcher_of(relay).round()
    assert (done.escalating, done.unreadable) == (1, 4)
    run_background(relay.dispatcher, fake_time)
    [sent] = telegram.delivered
    assert "Boom 5" in sent.text
    said = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert sorted(line.split()[4] for line in said) == ["1", "2", "3", "4"]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    # Said once while it lasts: the next round leaves them out without a word.
    caplog.clear()
    assert watcher_of(relay).round().unreadable == 4
    assert not [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert relay.spool is not None
    seen = {
        issue.issue_id: issue.events
        for issue in relay.spool.of(WatchStore).overview("-1001234567890", now=fake_time())
    }
    assert seen["5"] == 3  # what it read of the others is kept


def test_an_escalating_post_of_a_new_issue_says_why_never_new_and_starts_no_second_chain(
    built: Callable[..., Relay], fake: FakeGlitchTip, fake_time: FakeTime
) -> None:
    routes = parse_routes(
        "[[route]]\ntitle = 'Boom'\nescalate = [{ after = '10m', mention = ['@lead'] }]\n",
        "r.toml",
        ROUTE_SOURCES,
    )
    relay, telegram = relay_for(built, fake, fake_time, routes=routes, details_budget=2.0)
    alerted(relay, fake, fake_time, 1)
    fake.issues["1"]["firstSeen"] = iso_time(NOW - 300)  # five minutes old, and spiking
    fake.hourly["1"] = quiet_day(last_hour=500)
    assert watcher_of(relay).round().escalating == 1
    run_background(relay.dispatcher, fake_time)
    [sent] = telegram.delivered
    assert sent.text.startswith("📈 Escalating: 500 events in the last hour")
    assert "🆕 New issue" not in sent.text
    assert "first seen 5 min ago" in sent.text
    assert relay.spool is not None
    steps = relay.spool.of(
        lambda store: store.read(lambda tx: tx.all("SELECT step FROM escalations"))
    )
    assert steps == []  # its calls are its first message's: the lead is not paged twice
