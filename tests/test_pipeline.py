"""The pipeline a webhook walks down (relay_app/pipeline/): receive, route, hold, queue,
attempt, record, each stage entered in that order and never again once left (each part the
routes make walks hold, queue and attempt of its own). Read from the frames of one real
webhook through the Flask app: a stage's module is entered when one of its functions is
called."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType

import responses
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from relay_app import create_app, relay_of
from relay_app.operating.config import Settings
from relay_app.operating.sentry_env import SentryConfig
from relay_app.routes.table import read_routes
from tests.conftest import OK, SEND_URL, WEBHOOK, FakeTime
from tests.payloads import issue, issue_alert
from tests.test_sentry import CLIENT_SECRET, SENTRY, sample_bytes, signed_post

PIPELINE = Path(__file__).resolve().parents[1] / "relay_app" / "pipeline"
EXAMPLE_ROUTES = PIPELINE.parents[1] / "examples" / "routes.toml"
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
    "hidden.py": "record",
}
NOT_STAGES = {"__init__.py", "alerts.py", "taken.py", "pages.py"}


def test_every_module_of_the_pipeline_is_a_stage_or_said_not_to_be() -> None:
    found = {path.name for path in PIPELINE.glob("*.py")}
    assert found == set(STAGE_OF) | NOT_STAGES


@contextmanager
def stages_entered() -> Iterator[list[str]]:
    """The stages this thread enters, in order, once each time it enters one."""
    entered: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        stage = STAGE_OF.get(path.name) if path.parent == PIPELINE else None
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


def where(project: str, environment: str) -> list[dict[str, object]]:
    return [
        {"title": "Project", "value": project, "short": True},
        {"title": "Environment", "value": environment, "short": True},
    ]


def test_each_part_the_routes_make_walks_the_stages_after_them_on_its_own(
    settings: Settings, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    telegram.post(SEND_URL, json=OK)
    routed = replace(settings, routes=read_routes(str(EXAMPLE_ROUTES)))
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
    with_sentry = replace(settings, sentry=SentryConfig(CLIENT_SECRET, None, SENTRY))
    body = sample_bytes("issue_alert.json")
    entered = walked(
        with_sentry,
        fake_time,
        lambda client: signed_post(client, body, "event_alert"),
        status=202,
    )
    assert entered == ["receive", "route", "hold", "queue", "attempt", "record"]
