"""An issue's details from GlitchTip's API: read from its real answers (glitchtip_samples/),
shown under the issue's title, never holding the alert back, and never a frame's variables."""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
import responses

from relay_app.core.errors import (
    IssueGone,
    TokenRefused,
    TrackerUnreachable,
)
from relay_app.core.issue_details import (
    Frame,
    IssueDetails,
    details_as_json,
    details_from_json,
    filled,
)
from relay_app.core.lookups import (
    FRESH_FOR,
    PAUSE_AFTER_FAILURE,
    WARN_EVERY,
    EachSource,
    IssueLookups,
)
from relay_app.glitchtip.api import GLITCHTIP_SETUP, GlitchTipApi
from relay_app.glitchtip.health import SpoolGlitchTipHealth
from relay_app.glitchtip.webhook import read_kept
from relay_app.intake.details import with_short_ids
from relay_app.issue_api.details import details_from
from relay_app.message.details import frame_where
from relay_app.message.formatting import format_alert
from relay_app.sentry.api import SentryApi
from relay_app.spool.database import Database
from relay_app.spool.postgres.database import PgDatabase
from relay_app.spool.store import Store
from relay_app.words import ENGLISH, RUSSIAN
from tests.conftest import SOURCES
from tests.e2e.helpers import wait_until
from tests.fake_glitchtip import SAMPLE_EVENT, SAMPLE_ISSUE
from tests.payloads import issue, issue_alert, message_for
from tests.telegram_rules import visible_text

FIRST_SEEN = 1796144964.024  # 2026-12-01T17:09:24.024Z, the sample issue's firstSeen
SECRET = "hunter2-s3cr3t-TOKEN"
GLITCHTIP = "https://glitchtip.example.org"


def with_secrets(event: dict[str, Any]) -> dict[str, Any]:
    """The sample event with a secret wherever an app's data can put one: a local variable of
    the frame that raised, the request, the user and a tag."""
    event = copy.deepcopy(event)
    frames = event["entries"][0]["data"]["values"][0]["stacktrace"]["frames"]
    frames[-1]["vars"]["password"] = SECRET
    frames[-1]["vars"][SECRET] = "a name can be a secret too"
    event["entries"].append({"type": "request", "data": {"headers": [["Authorization", SECRET]]}})
    event["user"] = {"id": "7", "email": f"{SECRET}@example.com"}
    event["tags"].append({"key": "api_key", "value": SECRET})
    return event


def sample_details(**event_changes: Any) -> IssueDetails:
    return details_from(copy.deepcopy(SAMPLE_ISSUE), {**SAMPLE_EVENT, **event_changes})


# --- what the answers say ------------------------------------------------------------------


def test_the_real_answers_say_where_how_often_and_since_when() -> None:
    details = sample_details()
    assert details.frame is not None
    # The innermost frame of the app's own code, not the outermost (run_event.py).
    assert frame_where(details.frame, ENGLISH) == "shop/cart.py:4 in total"
    assert frame_where(details.frame, RUSSIAN) == "shop/cart.py:4, в функции total"
    assert details.frame.source == "return subtotal / discount"
    assert details.count == 3  # GlitchTip answers "3", a string
    assert details.first_seen == pytest.approx(FIRST_SEEN)
    assert details.level == "error"
    assert (details.exception_type, details.exception_value) == (
        "ZeroDivisionError",
        "division by zero",
    )


def test_without_in_app_frames_the_innermost_frame_says_where() -> None:
    event = copy.deepcopy(SAMPLE_EVENT)
    frames = event["entries"][0]["data"]["values"][0]["stacktrace"]["frames"]
    for frame in frames:
        frame["inApp"] = False
    frames[-1]["filename"] = None  # no file name: the module names it
    details = details_from(SAMPLE_ISSUE, event)
    assert details.frame is not None
    assert frame_where(details.frame, ENGLISH) == "shop.cart:4 in total"


def test_of_a_chain_of_exceptions_the_one_raised_last_is_shown() -> None:
    event = copy.deepcopy(SAMPLE_EVENT)
    raised = event["entries"][0]["data"]["values"][0]
    cause = copy.deepcopy(raised)
    cause["value"] = "the cause"
    cause["stacktrace"]["frames"][-1]["lineNo"] = 99
    raised["value"] = "division by zero, while handling the cause"
    event["entries"][0]["data"]["values"] = [cause, raised]
    details = details_from(SAMPLE_ISSUE, event)
    assert details.exception_value == "division by zero, while handling the cause"
    assert details.frame is not None
    assert details.frame.line == 4


@pytest.mark.parametrize(
    "issue_answer",
    [
        {},
        {"count": "many", "firstSeen": "yesterday", "level": 3, "metadata": "x"},
        {"count": True, "firstSeen": "2026-12-01T17:09:24"},  # no time zone: not guessed
    ],
)
def test_answers_in_another_shape_give_no_details_rather_than_wrong_ones(
    issue_answer: dict[str, Any],
) -> None:
    odd_event = {"entries": [{"type": "exception", "data": {"values": [{"stacktrace": 5}]}}]}
    details = details_from(issue_answer, odd_event)
    assert details == IssueDetails(None, None, None, None, None, None)


# --- as a message shows them -------------------------------------------------------------


def sample_alert(**changes: Any) -> dict[str, Any]:
    return issue_alert(
        issue(3, title="ZeroDivisionError: division by zero", culprit="shop.cart in total")
        | changes
    )


def enriched(details: IssueDetails, *, now: float, payload: dict[str, Any] | None = None) -> str:
    link = f"{GLITCHTIP}/acme/issues/3"
    message = format_alert(read_kept(payload or sample_alert()), ENGLISH, {link: details}, now=now)
    assert visible_text(message.html, parse_mode="HTML") == message.text  # Telegram's rules
    return message.text


def test_an_alerts_message_shows_its_issues_details_under_the_title() -> None:
    text = enriched(sample_details(), now=FIRST_SEEN + 75)
    assert text.split("\n")[2:6] == [
        "ZeroDivisionError: division by zero",
        "📍 shop/cart.py:4 in total",
        "return subtotal / discount",
        "🆕 New issue, first seen 1 min 15 s ago · seen 3 times",
    ]
    assert "\nin shop.cart in total" not in text  # the frame says it better
    assert "Level" not in text  # an error's level goes without saying
    assert "Value:" not in text  # the title holds it whole


def test_a_fatal_issue_says_its_level_since_its_colour_is_an_errors() -> None:
    details = details_from({**SAMPLE_ISSUE, "level": "fatal"}, SAMPLE_EVENT)
    assert "\nLevel: fatal" in enriched(details, now=FIRST_SEEN + 30)


def test_an_old_issue_says_how_long_ago_it_was_first_seen() -> None:
    text = enriched(sample_details(), now=FIRST_SEEN + 3 * 86400 + 7200)
    assert "🔁 Seen 3 times · first seen 3 d 2 h ago" in text
    assert "New issue" not in text


def test_a_warning_says_its_level_and_a_value_the_title_cut_is_shown() -> None:
    issue_answer = {**SAMPLE_ISSUE, "level": "warning", "count": "1"}
    event = copy.deepcopy(SAMPLE_EVENT)
    long_value = "cannot divide " + "the basket total " * 20
    event["entries"][0]["data"]["values"][0]["value"] = long_value
    details = details_from(issue_answer, event)
    text = enriched(details, now=FIRST_SEEN + 30)
    assert "seen 1 time" in text
    assert "\nLevel: warning" in text
    assert "\nValue: cannot divide the basket total the basket" in text


def test_a_secret_in_a_frames_variables_the_request_or_the_user_never_reaches_a_message() -> None:
    details = details_from(SAMPLE_ISSUE, with_secrets(SAMPLE_EVENT))
    assert SECRET not in repr(details)
    message = format_alert(
        read_kept(sample_alert()),
        ENGLISH,
        {f"{GLITCHTIP}/acme/issues/3": details},
        now=FIRST_SEEN,
    )
    assert SECRET not in repr(message)
    assert "shop/cart.py:4 in total" in message.text


def test_a_backlog_line_says_where_from_the_details() -> None:
    message = format_alert(
        read_kept(sample_alert()),
        ENGLISH,
        {f"{GLITCHTIP}/acme/issues/3": sample_details()},
        now=0,
    )
    [line] = message.lines
    assert line.where == "cart.py:4 in total"


def test_message_for_shows_the_details_it_is_given_by_issue_id() -> None:
    payload = issue_alert(
        issue(3, title="ZeroDivisionError: division by zero", link=f"{GLITCHTIP}/acme/issues/3"),
        issue(4, link=f"{GLITCHTIP}/acme/issues/4"),
    )
    message = message_for(
        payload, ENGLISH, details={"3": sample_details()}, now=FIRST_SEEN + 60, sources=SOURCES
    )
    assert message.text.count("📍 shop/cart.py:4 in total") == 1
    assert [ref.id for ref in message.subjects.issues] == ["3", "4"]
    assert message_for(payload, ENGLISH, sources=SOURCES).text.count("📍") == 0


def test_details_read_back_as_a_job_keeps_them() -> None:
    details = sample_details()
    assert details_from_json(details_as_json(details)) == details
    assert details_from_json({}) is None
    assert details_from_json("a person's edit") is None


# --- GlitchTip's API ---------------------------------------------------------------------


@pytest.fixture
def api_answers() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock() as mock:
        yield mock


def test_the_api_reads_the_issue_and_its_latest_event_with_the_token(
    api_answers: responses.RequestsMock,
) -> None:
    token = "ab" * 32
    api_answers.get(f"{GLITCHTIP}/api/0/issues/3/", json=SAMPLE_ISSUE)
    api_answers.get(f"{GLITCHTIP}/api/0/issues/3/events/latest/", json=SAMPLE_EVENT)
    details = GlitchTipApi(token, GLITCHTIP, timeout=2).details("3")
    assert details == sample_details()
    assert [call.request.headers["Authorization"] for call in api_answers.calls] == [
        f"Bearer {token}"
    ] * 2


def test_an_issue_without_events_has_its_count_and_a_missing_one_is_gone(
    api_answers: responses.RequestsMock,
) -> None:
    api = GlitchTipApi("ab" * 32, GLITCHTIP, timeout=2)
    api_answers.get(f"{GLITCHTIP}/api/0/issues/3/", json=SAMPLE_ISSUE)
    api_answers.get(
        f"{GLITCHTIP}/api/0/issues/3/events/latest/", status=404, json={"detail": "Not Found"}
    )
    details = api.details("3")
    assert (details.count, details.frame) == (3, None)
    api_answers.get(f"{GLITCHTIP}/api/0/issues/9/", status=404, json={"detail": "Not Found"})
    with pytest.raises(IssueGone):
        api.details("9")
    api_answers.get(f"{GLITCHTIP}/api/0/issues/5/", status=401, json={"detail": "Unauthorized"})
    with pytest.raises(TokenRefused):
        api.details("5")
    with pytest.raises(ValueError, match="not an issue's id"):
        api.details("3/../../users/me")


# --- look-ups: a budget, a cache, and quiet while GlitchTip fails ----------------------------


class FakeReads:
    """GlitchTip's API as a function: each read takes `delay` seconds, or raises `error`."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.error: Exception | None = None
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, issue_id: str) -> IssueDetails:
        with self.lock:
            self.calls.append(issue_id)
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return sample_details()


class Ticking:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def reads() -> FakeReads:
    return FakeReads()


@pytest.fixture
def ticking() -> Ticking:
    return Ticking()


SHORT_BUDGET = 0.2


@pytest.fixture
def lookups(reads: FakeReads, ticking: Ticking) -> Iterator[IssueLookups]:
    counted: list[str] = []
    # A budget no answer of the fake's needs, however loaded the machine: a test of what a slow
    # answer costs gives a short one of its own (0.2 s here failed a warned-once test under
    # eight test processes on two busy cores, its pool's thread not run in time).
    made = IssueLookups(
        reads, setup=GLITCHTIP_SETUP, budget=2.0, count=counted.append, monotonic=ticking
    )
    made.counted = counted  # type: ignore[attr-defined]
    yield made
    made.shutdown()


def test_details_that_come_within_the_budget_are_in_and_a_storm_reads_an_issue_once(
    lookups: IssueLookups, reads: FakeReads
) -> None:
    assert lookups.within(["3"], lookups.budget) == {"3": sample_details()}
    storm = [
        threading.Thread(target=lookups.within, args=(["3", "4"], lookups.budget))
        for _ in range(20)
    ]
    for thread in storm:
        thread.start()
    for thread in storm:
        thread.join(5)
    assert sorted(reads.calls) == ["3", "4"]


def test_slow_details_cost_the_alert_only_the_budget_and_arrive_later(
    lookups: IssueLookups, reads: FakeReads
) -> None:
    reads.delay = 1.0
    started = time.monotonic()
    assert lookups.within(["3"], SHORT_BUDGET) == {}
    assert time.monotonic() - started < SHORT_BUDGET + 0.4
    came: list[dict[str, IssueDetails]] = []
    lookups.when_known(["3"], lambda found: came.append(dict(found)))
    assert wait_until(lambda: bool(came), timeout=5)
    assert came == [{"3": sample_details()}]
    assert reads.calls == ["3"]  # the later wish joined the look-up under way


def test_a_failing_glitchtip_is_asked_no_more_for_a_while_and_warned_of_once(
    lookups: IssueLookups,
    reads: FakeReads,
    ticking: Ticking,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reads.error = TrackerUnreachable("GET ...: GlitchTip refused the connection")
    for issue_id in ("1", "2", "3"):
        assert lookups.within([issue_id], lookups.budget) == {}
    assert reads.calls == ["1"]  # after the failure, none is tried
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "GLITCHTIP_URL" in warnings[0].getMessage()
    ticking.now += PAUSE_AFTER_FAILURE + 1  # tried again, fails again: no second warning yet
    lookups.within(["4"], lookups.budget)
    assert reads.calls == ["1", "4"]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    ticking.now += WARN_EVERY
    lookups.within(["5"], lookups.budget)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2
    reads.error = None  # back: read again at once
    ticking.now += PAUSE_AFTER_FAILURE + 1
    assert lookups.within(["6"], lookups.budget) == {"6": sample_details()}
    counted = lookups.counted  # type: ignore[attr-defined]
    assert counted.count("failed") == 3
    assert counted.count("skipped") == 2
    assert counted.count("read") == 1
    found: list[object] = []
    reads.error = TrackerUnreachable("down")
    lookups.within(["7"], lookups.budget)
    lookups.when_known(["8"], found.append)  # none may be made now: told at once
    assert found == [{}]


def test_details_are_kept_a_few_minutes_and_a_missing_issue_is_not_asked_again(
    lookups: IssueLookups, reads: FakeReads, ticking: Ticking
) -> None:
    lookups.within(["3"], lookups.budget)
    lookups.within(["3"], lookups.budget)
    assert reads.calls == ["3"]
    ticking.now += FRESH_FOR + 1
    lookups.within(["3"], lookups.budget)
    assert reads.calls == ["3", "3"]
    reads.error = IssueGone("404")
    assert lookups.within(["9"], lookups.budget) == {}
    assert lookups.within(["9"], lookups.budget) == {}
    assert reads.calls == ["3", "3", "9"]


def test_the_cache_is_bounded(reads: FakeReads, ticking: Ticking) -> None:
    lookups = IssueLookups(reads, setup=GLITCHTIP_SETUP, budget=1.0, monotonic=ticking)
    try:
        for number in range(1100):
            lookups.within([str(number)], lookups.budget)
        lookups.within(["1099", "0"], lookups.budget)
        assert len(reads.calls) == 1101  # the oldest was let go, the newest kept
    finally:
        lookups.shutdown()


@pytest.fixture(params=["sqlite", "postgres"])
def shared_stores(request: pytest.FixtureRequest, spool_path: str) -> Iterator[list[Store]]:
    """Three connections to one spool, as three processes (or relays) have."""
    if request.param == "sqlite":
        stores: list[Store] = [Database(spool_path) for _ in range(3)]
    else:
        url = request.getfixturevalue("pg_url")
        stores = [PgDatabase(url) for _ in range(3)]
    yield stores
    for store in stores:
        store.close()


def test_every_process_on_the_spool_knows_glitchtip_fails_and_one_warns(
    shared_stores: list[Store],
) -> None:
    # A webhook's quarter of a second to ask is not what is tested here: on a loaded host it
    # falls back to what the process knows, which is not what another process kept.
    def health(store: Store) -> SpoolGlitchTipHealth:
        return SpoolGlitchTipHealth(store, read_budget=10.0)

    first, second, third = (health(store) for store in shared_stores)
    assert not second.paused()
    assert first.failed(60, 300) is True  # the one to warn
    assert health(shared_stores[1]).paused()  # another process pauses too
    assert third.failed(60, 300) is False  # and does not warn again
    first.answered()
    assert not health(shared_stores[2]).paused()
    assert third.failed(60, 0) is True  # past its time, a warning is due again


# --- each source's look-ups, as one ----------------------------------------------------------


def test_each_issue_is_asked_of_its_own_source_and_one_failing_costs_the_other_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    glitchtips, sentrys = FakeReads(), FakeReads()
    sentrys.error = TrackerUnreachable("Sentry is down")
    sentry = SentryApi.SETUP
    both = EachSource(
        [
            (
                lambda issue_id: not issue_id.startswith("sentry:"),
                IssueLookups(glitchtips, setup=GLITCHTIP_SETUP, budget=1.0),
            ),
            (
                lambda issue_id: issue_id.startswith("sentry:"),
                IssueLookups(sentrys, budget=0.5, setup=sentry),
            ),
        ]
    )
    try:
        assert both.budget == 1.0
        with caplog.at_level(logging.WARNING):
            found = both.within(["3", "sentry:12"], both.budget)
        assert found == {"3": sample_details()}
        assert (glitchtips.calls, sentrys.calls) == (["3"], ["sentry:12"])
        assert "could not be read from Sentry" in caplog.text
        assert "SENTRY_URL, and that SENTRY_API_TOKEN" in caplog.text
        # Sentry's pause is its own: GlitchTip's next issue is asked all the same.
        assert both.within(["4", "sentry:13"], both.budget) == {"4": sample_details()}
        assert sentrys.calls == ["sentry:12"]
        came: list[Mapping[str, IssueDetails]] = []
        both.when_known(["5", "sentry:14"], came.append)
        assert wait_until(lambda: came, timeout=5)
        assert came == [{"5": sample_details()}]
        both.when_known([], came.append)
        assert came[-1] == {}
    finally:
        both.shutdown()


def test_a_webhooks_own_details_are_filled_in_by_its_sources_answer() -> None:
    frame = Frame("<anonymous>", 3, None, None)
    own = IssueDetails(frame, None, None, "error", "ReferenceError", "heck", stack=(frame,))
    answered = replace(sample_details(), short_id="FRONT-END-C")
    both = filled(own, answered)
    assert (both.frame, both.stack, both.exception_type) == (frame, (frame,), "ReferenceError")
    assert (both.count, both.first_seen) == (answered.count, answered.first_seen)
    assert both.short_id == "FRONT-END-C"
    assert details_from_json(details_as_json(both)) == both


def test_a_short_id_is_named_where_the_webhook_did_not_and_never_over_glitchtips() -> None:
    link = "https://sentry.example.org/organizations/acme/issues/12/"
    alert = read_kept({"text": "", "attachments": [{"title": "heck", "title_link": link}]})
    named = with_short_ids(alert, {link: "FRONT-END-C"}.get)
    [alerted] = named.issues  # type: ignore[union-attr]
    assert alerted.short_id == "FRONT-END-C"
    assert with_short_ids(alert, lambda link: None) is alert
    glitchtips = read_kept(issue_alert(issue(3)))
    assert with_short_ids(glitchtips, lambda link: "OTHER-1") is glitchtips
    # Only a short id's characters: a forged one is not named.
    forged = {**SAMPLE_ISSUE, "shortId": "X](javascript:alert(1))"}
    assert details_from(forged, SAMPLE_EVENT).short_id is None
