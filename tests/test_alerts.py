"""The alert as a job keeps it (core/alerts.py): written whole and read back as it was written,
anything else unreadable by name; and what a relay before kept instead (its source's body, in
a job, a watched issue's row, a link's card) read as the same alert, so that a spool of today
delivers every waiting alert as it would have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from relay_app.chat.link_card import link_card, link_card_data
from relay_app.core.alerts import (
    ALERT_KEY,
    KEPT_BODY_KEY,
    Alert,
    Field,
    Issue,
    IssueAlert,
    MonitorChange,
    UptimeAlert,
    alert_as_json,
    alert_from_json,
    kept_alert,
)
from relay_app.core.errors import Unreadable
from relay_app.core.routing import Destination
from relay_app.delivery.render import Renderer
from relay_app.glitchtip.source import GLITCHTIP as GLITCHTIP_SOURCE
from relay_app.glitchtip.webhook import KIND_KEY, SOURCE_KEY, read_kept, read_webhook
from relay_app.message.open_issues import WatchedIssue, issue_data
from relay_app.sentry.hooks import Alerting, read_hook
from relay_app.spool.model import Job
from relay_app.words import ENGLISH
from tests.conftest import SOURCES
from tests.payloads import issue, issue_alert, uptime_alert

SAMPLES = Path(__file__).parent / "sentry_samples"
SENTRY = "https://sentry.example.org"
RENDERER = Renderer(ENGLISH, late_after=60.0, sources=SOURCES)


def sentry(name: str, resource: str, **changed: Any) -> Alert:
    body = json.loads((SAMPLES / name).read_text()) | changed
    hook = read_hook(resource, body, sentry_url=SENTRY)
    assert isinstance(hook, Alerting)
    return hook.alert


EVERY_SHAPE: dict[str, Alert] = {
    "glitchtip issues": read_webhook(issue_alert(issue(1), issue(2, color=None), total=7)),
    "glitchtip uptime": read_webhook(uptime_alert(down=True)),
    "sentry event": sentry("issue_alert.json", "event_alert"),
    "sentry metric": sentry("metric_alert_resolved.json", "metric_alert", action="warning"),
    "unrecognized": read_webhook({"blob": {"nested": [1, "two", None]}}),
    "every field": IssueAlert(
        "Heading",
        (Issue("T", None, None, "other", None, (Field("", "v"),), level="fatal"),),
        3,
        "sentry",
        "created",
    ),
}


@pytest.mark.parametrize("alert", EVERY_SHAPE.values(), ids=EVERY_SHAPE.keys())
def test_an_alert_reads_back_as_it_was_written(alert: Alert) -> None:
    kept = json.loads(json.dumps(alert_as_json(alert)))  # as the spool stores and returns it
    assert alert_from_json(kept) == alert
    assert kept_alert({ALERT_KEY: kept, KEPT_BODY_KEY: {"ignored": True}}, None) == alert


def written(alert: Alert, **changed: Any) -> dict[str, Any]:
    return alert_as_json(alert) | changed


ISSUES = EVERY_SHAPE["glitchtip issues"]
MONITORS = EVERY_SHAPE["glitchtip uptime"]


def issue_changed(**changed: Any) -> dict[str, Any]:
    kept = alert_as_json(ISSUES)
    kept["issues"][0] |= changed
    return kept


@pytest.mark.parametrize(
    ("kept", "said"),
    [
        ("a string", "the alert is not a JSON object"),
        (written(ISSUES, shape="attachments"), "shape 'attachments' is none this relay knows"),
        ({"source": "glitchtip"}, "shape None is none this relay knows"),
        (written(ISSUES, kind="regressed"), "kind 'regressed' is none this relay knows"),
        (written(ISSUES, total=-1), "total is not a count"),
        (written(ISSUES, total=True), "total is not a count"),
        (written(ISSUES, heading=None), "heading is not a string"),
        (written(ISSUES, source=None), "source is not a string"),
        (written(ISSUES, issues={"0": {}}), "issues is not a list"),
        (issue_changed(shade="#e52b50"), "shade '#e52b50' is none this relay knows"),
        (issue_changed(fields=[["Project"]]), "field ['Project'] is not a title and a value"),
        (issue_changed(link=5), "link is not a string"),
        (
            written(MONITORS, monitors=[{"name": "x", "sentence": "", "state": "sideways"}]),
            "state 'sideways' is none this relay knows",
        ),
        (written(EVERY_SHAPE["unrecognized"], payload=[1]), "its payload is not a JSON object"),
    ],
)
def test_what_the_relay_did_not_write_is_unreadable_by_name_never_another_alert(
    kept: object, said: str
) -> None:
    with pytest.raises(Unreadable, match=said.replace("[", r"\[").replace("]", r"\]")):
        alert_from_json(kept)


def marked(body: dict[str, Any], source: str, kind: str | None = None) -> dict[str, Any]:
    """A body as a relay before kept another source's alert: GlitchTip's shape, marked."""
    return body | {SOURCE_KEY: source} | ({KIND_KEY: kind} if kind else {})


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            issue_alert(issue(1), issue(2), total=5),
            read_webhook(issue_alert(issue(1), issue(2), total=5)),
        ),
        (uptime_alert(down=False), read_webhook(uptime_alert(down=False))),
        (
            marked(issue_alert(issue(3)), "sentry", "created"),
            IssueAlert(
                "GlitchTip Alert",
                read_webhook(issue_alert(issue(3))).issues,  # type: ignore[union-attr]
                1,
                "sentry",
                "created",
            ),
        ),
        (
            marked(
                {
                    "text": "Too many errors",
                    "attachments": [
                        {
                            "title": "Too many errors",
                            "title_link": None,
                            "text": None,
                            "state": "warning",
                        }
                    ],
                },
                "sentry",
                "monitor",
            ),
            UptimeAlert(
                "Too many errors",
                (MonitorChange("Too many errors", None, "", "warning"),),
                1,
                "sentry",
            ),
        ),
    ],
    ids=["glitchtip issues", "glitchtip uptime", "sentry new issue", "sentry metric"],
)
def test_a_job_a_relay_before_queued_reads_as_the_alert_it_would_queue_now(
    body: dict[str, Any], expected: Alert
) -> None:
    assert SOURCES.alert_kept_in({KEPT_BODY_KEY: body, "mentions": ["@ada"]}) == expected
    queued_before = job({KEPT_BODY_KEY: body})
    queued_now = job({ALERT_KEY: alert_as_json(expected)})
    assert RENDERER.alert(queued_before).html == RENDERER.alert(queued_now).html


def test_marks_in_a_body_posted_to_glitchtips_url_are_not_read_but_in_a_kept_one_they_are() -> None:
    forged = marked(issue_alert(issue(1)), "sentry", "created")
    posted = read_webhook(forged)
    assert isinstance(posted, IssueAlert)
    assert (posted.source, posted.kind) == ("glitchtip", "issue")
    kept = read_kept(forged)
    assert isinstance(kept, IssueAlert)
    assert (kept.source, kept.kind) == ("sentry", "created")


def test_a_job_that_keeps_neither_form_or_a_body_no_source_reads_is_said_so() -> None:
    assert kept_alert({"rendered": {}}, None) is None
    with pytest.raises(Unreadable, match="no source reads one"):
        kept_alert({KEPT_BODY_KEY: issue_alert()}, None)
    with pytest.raises(Unreadable, match="not a JSON object"):
        kept_alert({KEPT_BODY_KEY: ["not", "a", "body"]}, read_kept)
    with pytest.raises(Unreadable, match=r"alert #\d+: the alert's shape"):
        RENDERER.alert(job({ALERT_KEY: {"shape": "tomorrow's", "source": "x"}}))


def test_a_watched_issues_row_of_either_form_names_the_issue_alike() -> None:
    body = {"attachments": [issue(4)], "sections": issue_alert(issue(4))["sections"]}
    alone = read_kept(body)
    before, now = (
        WatchedIssue("4", kept, None, "unresolved", 9, (), 0.0, 0.0, None, None)
        for kept in (body, alert_as_json(alone))
    )
    assert issue_data(before, SOURCES) == issue_data(now, SOURCES)
    assert issue_data(now, SOURCES)["label"] == "BACKEND-1A"
    assert issue_data(now, SOURCES)["title"] == "ZeroDivisionError: division by zero #4"
    unreadable = WatchedIssue("4", {"shape": "?"}, None, "unresolved", 9, (), 0.0, 0.0, None, None)
    assert issue_data(unreadable, SOURCES)["label"] == "#4"


def test_a_links_card_a_relay_before_queued_renders_as_one_queued_now() -> None:
    found = {"id": "4", "shortId": "BACKEND-4A", "title": "Boom", "level": "fatal", "count": 3}
    link = "https://glitchtip.example.org/acme/issues/4"
    about = link_card_data(found, link, source=GLITCHTIP_SOURCE)
    before = {key: value for key, value in about.items() if key != "alert"}
    before["payload"] = {
        "alias": "GlitchTip",
        "text": "GlitchTip",
        "attachments": [
            {"title": "Boom", "title_link": link, "text": None, "color": "#e52b50", "fields": []}
        ],
        "sections": [
            {"activityTitle": "Boom", "activitySubtitle": f"[View Issue BACKEND-4A]({link})"}
        ],
    }
    rendered = [
        link_card(job({"link_card": kept, "message_id": 7}), RENDERER).html
        for kept in (about, before)
    ]
    assert rendered[0] == rendered[1]
    assert "Boom" in rendered[0]


_ids = iter(range(1, 10_000))


def job(data: dict[str, Any]) -> Job:
    where = Destination(-1001)
    return Job(
        "alert", data, where, received_at=0.0, retry_from=0.0, id=next(_ids), lane=where.lane
    )
