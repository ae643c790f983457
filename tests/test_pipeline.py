"""The stages a webhook (relay_app/intake/) and a press (relay_app/cards/presses/) walk down:
receive, route, hold, queue, attempt, record, each stage entered in that order and never again
once left (each part the routes make walks hold, queue and attempt of its own). Read from the
frames of one real webhook through the Flask app, and of real presses through the relay: a
stage's module is entered when one of its functions is called."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType

import pytest
import responses
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from relay_app import Relay, create_app, relay_of
from relay_app.cards.card import Button, Verb, callback_data
from relay_app.operating.config import Settings
from relay_app.routes.table import read_routes
from relay_app.sentry.settings import SentryConfig
from relay_app.silences.buttons import MUTE
from relay_app.silences.matching import Matchers
from relay_app.silences.store import NewSilence, SilenceStore
from relay_app.takes.buttons import TAKE
from tests.conftest import OK, ROUTE_SOURCES, SEND_URL, WEBHOOK, FakeTime, sentry_on
from tests.in_process import Chat
from tests.payloads import issue, issue_alert
from tests.test_presses import ISSUE_URL, SENT, press
from tests.test_sentry import CLIENT_SECRET, SENTRY, sample_bytes, signed_post

PACKAGE = Path(__file__).resolve().parents[1] / "relay_app"
PIPELINE = PACKAGE / "intake"
PRESSES = PACKAGE / "cards" / "presses"
EXAMPLE_ROUTES = PACKAGE.parent / "examples" / "routes.toml"
# Each module of the pipeline by the stage it is; the rest are the walk's driver (alerts.py:
# one part down hold, queue and attempt), values, or another door in (pages.py).
STAGE_OF = {
    "receive.py": "receive",
    "route.py": "route",
    "hold.py": "hold",
    "queue.py": "queue",
    "details.py": "queue",
    "attempt.py": "attempt",
    "record.py": "record",
}
NOT_STAGES = {"__init__.py", "alerts.py", "taken.py", "pages.py"}
# A press's: its stages by the same names; the rest drive the walk (presses.py), answer it
# once (told.py), or are Ignore's choices the stages ask (ignoring.py).
PRESS_STAGE_OF = {
    name: name.removesuffix(".py")
    for name in ("receive.py", "route.py", "hold.py", "queue.py", "attempt.py", "record.py")
}
NOT_PRESS_STAGES = {"__init__.py", "presses.py", "told.py", "ignoring.py"}


def test_every_module_of_the_pipeline_is_a_stage_or_said_not_to_be() -> None:
    found = {path.name for path in PIPELINE.glob("*.py")}
    assert found == set(STAGE_OF) | NOT_STAGES
    found = {path.name for path in PRESSES.glob("*.py")}
    assert found == set(PRESS_STAGE_OF) | NOT_PRESS_STAGES


@contextmanager
def stages_entered(
    package: Path = PIPELINE, stage_of: Mapping[str, str] = STAGE_OF
) -> Iterator[list[str]]:
    """The stages of `package` this thread enters, in order, once each time it enters one."""
    entered: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        stage = stage_of.get(path.name) if path.parent == package else None
        if stage is not None and (not entered or entered[-1] != stage):
            entered.append(stage)

    sys.setprofile(profile)
    try:
        yield entered
    finally:
        sys.setprofile(None)


def walked(
    settings: Settings,
    fake_time: FakeTime,
    post: Callable[[FlaskClient], TestResponse],
    status: int = 200,
) -> list[str]:
    app = create_app(settings, clock=fake_time)
    relay = relay_of(app)
    assert relay is not None
    try:
        client = app.test_client()
        with stages_entered() as entered:
            reply = post(client)
        assert reply.status_code == status, reply.json
        return entered
    finally:
        relay.dispatcher.shutdown()


def posted(payload: dict[str, object]) -> Callable[[FlaskClient], TestResponse]:
    return lambda client: client.post(WEBHOOK, json=payload)


def test_a_webhook_goes_down_the_stages_in_order_never_back_into_one_it_left(
    settings: Settings, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    telegram.post(SEND_URL, json=OK)
    entered = walked(settings, fake_time, posted(issue_alert(issue(1))))
    assert entered == ["receive", "route", "hold", "queue", "attempt", "record"]


def test_an_alert_a_silence_holds_leaves_the_walk_at_the_hold_for_the_record(
    settings: Settings, fake_time: FakeTime
) -> None:
    """Held back by a silence of its chat: neither queued nor attempted, its arrival noted."""
    app = create_app(settings, clock=fake_time)
    relay = relay_of(app)
    assert relay is not None
    try:
        assert relay.spool is not None
        chat = str(settings.telegram_chat_id)
        relay.spool.of(SilenceStore).add(
            NewSilence(chat, Matchers(issue="1"), by="@ada", comment="", seconds=3600),
            now=fake_time(),
        )
        with stages_entered() as entered:
            reply = app.test_client().post(WEBHOOK, json=issue_alert(issue(1)))
        assert reply.status_code == 200, reply.json
        assert reply.json is not None
        assert reply.json["status"] == "silenced"
    finally:
        relay.dispatcher.shutdown()
    assert entered == ["receive", "route", "hold", "record"]


def where(project: str, environment: str) -> list[dict[str, object]]:
    return [
        {"title": "Project", "value": project, "short": True},
        {"title": "Environment", "value": environment, "short": True},
    ]


def test_each_part_the_routes_make_walks_the_stages_after_them_on_its_own(
    settings: Settings, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    telegram.post(SEND_URL, json=OK)
    routed = replace(settings, routes=read_routes(str(EXAMPLE_ROUTES), ROUTE_SOURCES))
    two_parts = issue_alert(
        issue(1, fields=where("payments", "prod")), issue(2, fields=where("shop", "staging"))
    )
    entered = walked(routed, fake_time, posted(two_parts))
    each_part = ["hold", "queue", "attempt"]
    assert entered == ["receive", "route", *each_part, *each_part, "record"]


def test_a_capabilitys_page_sends_its_alert_down_the_same_stages(
    settings: Settings, fake_time: FakeTime
) -> None:
    """Sentry's signed webhook: its answer waits for no attempt, which is left to the
    dispatcher (the attempt stage leaves it), then the arrival is recorded."""
    with_sentry = replace(settings, theirs=sentry_on(SentryConfig(CLIENT_SECRET, None, SENTRY)))
    body = sample_bytes("issue_alert.json")
    entered = walked(
        with_sentry,
        fake_time,
        lambda client: signed_post(client, body, "event_alert"),
        status=202,
    )
    assert entered == ["receive", "route", "hold", "queue", "attempt", "record"]


# A press's walk: on the card kept for an alert (tests/test_presses.py's), by a person allowed.


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = SENT.sent_at + 240
    return Chat.of(built, fake_time, SENT)


def pressed(chat: Chat, verb: Verb | Button) -> list[str]:
    with stages_entered(PRESSES, PRESS_STAGE_OF) as entered:
        chat.update(press(callback_data(verb, "the-key")))
    return entered


def test_a_press_goes_down_the_same_stages_in_order(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    assert pressed(chat, "resolve") == ["receive", "route", "hold", "queue", "attempt", "record"]
    assert chat.answered() == [("Resolved BACKEND-4A in GlitchTip", False)]


def test_a_press_the_tracker_refuses_ends_in_the_record_too(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    """The claim is taken back by the record of the refusal, not by going back to the queue."""
    glitchtip.put(ISSUE_URL, status=403, json={"detail": "no"})
    assert pressed(chat, "resolve") == ["receive", "route", "hold", "queue", "attempt", "record"]
    [(_, alert)] = chat.answered()
    assert alert


def test_on_it_and_a_capabilitys_press_go_to_their_owner_after_the_hold(chat: Chat) -> None:
    """On it is the takes' (takes/taking.py edits the cards itself); Mute is silences', and
    the card's edit it asks for is the record's."""
    assert pressed(chat, TAKE) == ["receive", "route", "hold"]
    [(said, alert)] = chat.answered()
    assert "BACKEND-4A" in said
    assert not alert
    assert pressed(chat, MUTE) == ["receive", "route", "hold", "record"]
