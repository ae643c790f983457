"""What an alert is about (subjects.py): the issues GlitchTip's API can change, read from the
alert's links, and the monitors whose recoveries are threaded; read back from the JSON an
alert's row kept them in before jobs held data."""

from __future__ import annotations

import pytest

from relay_app.glitchtip.source import GLITCHTIP
from relay_app.glitchtip.webhook import SOURCE_KEY
from relay_app.message.subjects import (
    NO_HOMES,
    Home,
    IssueHomes,
    IssueRef,
    MonitorRef,
    Subjects,
    origin_of,
    split_by_origin,
)
from relay_app.sentry.source import SENTRY
from relay_app.words import ENGLISH
from tests.conftest import SOURCES
from tests.payloads import issue, issue_alert, message_for, uptime_alert


def homes_of(
    *, glitchtip: str | None = None, sentry: str | None = None, orgs: frozenset[str] | None = None
) -> IssueHomes:
    """Where each source's issues get buttons, as the wiring makes it (parts.py)."""
    found = [] if glitchtip is None else [(GLITCHTIP, Home(glitchtip, orgs))]
    found += [] if sentry is None else [(SENTRY, Home(sentry))]
    return IssueHomes(tuple(found))


def test_each_issue_is_named_by_its_links_id_and_origin() -> None:
    payload = issue_alert(
        issue(1, link="https://gt.example.org/acme/issues/1234"),
        issue(2, link="http://10.0.0.5:8000/other-org/issues/77/"),
    )
    subjects = message_for(payload, ENGLISH, sources=SOURCES).subjects
    assert subjects.issues == (
        IssueRef(
            "1234",
            "https://gt.example.org",
            "BACKEND-1A",
            title="ZeroDivisionError: division by zero #1",
            org="acme",
        ),
        IssueRef(
            "77",
            "http://10.0.0.5:8000",
            "BACKEND-2A",
            title="ZeroDivisionError: division by zero #2",
            org="other-org",
        ),
    )
    assert [ref.label for ref in subjects.issues] == ["BACKEND-1A", "BACKEND-2A"]
    # As an older relay's rows kept them, with and without a title.
    older = '{"issues": [["1234", "https://gt.example.org", "BACKEND-1A", false]], "monitors": []}'
    assert Subjects.from_json(older).issues == (
        IssueRef("1234", "https://gt.example.org", "BACKEND-1A"),
    )
    titled = '{"issues": [["77", "http://10.0.0.5:8000", "BACKEND-2A", true, "T"]]}'
    assert Subjects.from_json(titled).issues == (
        IssueRef("77", "http://10.0.0.5:8000", "BACKEND-2A", title="T"),
    )


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://GT.Example.org/acme/issues/4", "https://gt.example.org"),
        ("https://gt.example.org:443/x", "https://gt.example.org"),
        ("http://gt.example.org:8000", "http://gt.example.org:8000"),
        # A user and password in a link: no tracker writes one, and it names no origin.
        ("http://ada:hunter2@gt.example.org/acme/issues/4", None),
        ("http://[::1]:8000/", "http://[::1]:8000"),
        ("ftp://gt.example.org/", None),
        ("http://gt.example.org:99999/", None),
        ("https:///acme/issues/4", None),
    ],
)
def test_an_origin_is_scheme_host_and_port_as_a_browser_compares_them(
    url: str, origin: str | None
) -> None:
    assert origin_of(url) == origin


def test_only_issues_at_glitchtips_own_origin_are_kept_for_buttons() -> None:
    payload = issue_alert(
        issue(1, link="https://gt.example.org/acme/issues/1"),
        issue(2, link="https://attacker.example/acme/issues/2"),
        issue(3, link="https://ada:pw@gt.example.org:443/acme/issues/3"),
        issue(4, link="http://gt.example.org/acme/issues/4"),  # another scheme: another origin
    )
    subjects = message_for(payload, ENGLISH, sources=SOURCES).subjects
    homes = homes_of(glitchtip="https://gt.example.org")
    kept, left_out = split_by_origin(subjects, homes)
    # A link with a user and password names no origin (core/origins.py): no buttons, whatever host.
    assert [issue.id for issue in kept.issues] == ["1"]
    assert [issue.id for issue in left_out] == ["2", "4"]
    assert split_by_origin(subjects, NO_HOMES)[0].issues == ()
    everything = split_by_origin(kept, homes)
    assert everything == (kept, ())


def test_the_intake_decides_the_tracker_never_the_links_form() -> None:
    """A body posted to GlitchTip's URL is GlitchTip's, whatever its links look like: a link to
    Sentry's issue (before: it got Sentry's buttons, and Resolve went to Sentry with Sentry's
    token) names no Sentry issue. Only a body Sentry signed names Sentry's issues."""
    links = (
        "https://sentry.example.org/organizations/acme/issues/7778/",
        "https://gt.example.org/acme/issues/1",
        "https://gt.example.org/organizations/acme/issues/3/",
        "https://sentry.example.org/acme/issues/4",
    )
    payload = issue_alert(*(issue(n, link=link) for n, link in enumerate(links, 1)))
    both = homes_of(glitchtip="https://gt.example.org", sentry="https://sentry.example.org")
    glitchtips = message_for(payload, ENGLISH, sources=SOURCES).subjects
    assert [issue.id for issue in glitchtips.issues] == ["7778", "1", "3", "4"]
    kept, left_out = split_by_origin(glitchtips, both)
    assert [(issue.id, issue.origin) for issue in kept.issues] == [
        ("1", "https://gt.example.org"),
        ("3", "https://gt.example.org"),
    ]
    assert [issue.id for issue in left_out] == ["7778", "4"]  # at Sentry's address: no buttons
    sentrys = message_for({**payload, SOURCE_KEY: "sentry"}, ENGLISH, sources=SOURCES).subjects
    assert [issue.id for issue in sentrys.issues] == ["sentry:7778", "sentry:3"]
    kept, left_out = split_by_origin(sentrys, both)
    assert [issue.id for issue in kept.issues] == ["sentry:7778"]
    assert [issue.id for issue in left_out] == ["sentry:3"]
    assert IssueRef("sentry:1", "https://sentry.example.org").label == "#1"


def test_a_glitchtip_issue_gets_buttons_only_in_the_organizations_the_relay_serves() -> None:
    """GlitchTip's webhook signs nothing: anyone with its URL may link another organization's
    issue. With GLITCHTIP_ORGANIZATIONS only those organizations' issues get buttons, and any
    button acts only among its link's organization's issues (glitchtip/api.py)."""
    payload = issue_alert(
        issue(1, link="https://gt.example.org/acme/issues/1"),
        issue(2, link="https://gt.example.org/secret/issues/1002"),
        issue(3, link="https://gt.example.org/issues/3"),  # no organization named
    )
    subjects = message_for(payload, ENGLISH, sources=SOURCES).subjects
    assert [(ref.id, ref.org) for ref in subjects.issues] == [
        ("1", "acme"),
        ("1002", "secret"),
        ("3", None),
    ]
    served = homes_of(glitchtip="https://gt.example.org", orgs=frozenset({"acme"}))
    kept, left_out = split_by_origin(subjects, served)
    assert [ref.id for ref in kept.issues] == ["1"]
    assert [ref.id for ref in left_out] == ["1002", "3"]
    anyone = homes_of(glitchtip="https://gt.example.org")
    assert [ref.id for ref in split_by_origin(subjects, anyone)[0].issues] == ["1", "1002"]


def test_an_issue_without_a_usable_link_has_nothing_to_act_on() -> None:
    payload = issue_alert(
        issue(1, link="https://gt.example.org/acme/releases/3"),
        issue(2, link="javascript:alert(1)/issues/4"),
        issue(3, link=""),
    )
    assert message_for(payload, ENGLISH, sources=SOURCES).subjects.issues == ()


def test_an_uptime_alert_names_its_monitor_and_whether_it_went_down_or_came_back() -> None:
    down = message_for(uptime_alert(down=True), ENGLISH, sources=SOURCES).subjects
    up = message_for(uptime_alert(down=False), ENGLISH, sources=SOURCES).subjects
    link = "https://glitchtip.example.org/acme/uptime-monitors/42"
    assert down.monitors == (MonitorRef(link, "My API", "down"),)
    assert up.monitors == (MonitorRef(link, "My API", "up"),)
    assert (down.recovery, up.recovery) == (False, True)


def test_what_an_older_spool_kept_reads_back_and_nothing_reads_as_nothing() -> None:
    kept = (
        '{"issues": [["4", "https://gt", null]], "monitors": [["https://gt/m/1", "API", "down"]]}'
    )
    assert Subjects.from_json(kept) == Subjects(
        issues=(IssueRef("4", "https://gt", None),),
        monitors=(MonitorRef("https://gt/m/1", "API", "down"),),
    )
    assert Subjects.from_json(None) == Subjects()
    assert Subjects.from_json('{"issues": 5}') == Subjects()  # a person's edit: nothing
    assert IssueRef("4", "https://gt", None).label == "#4"
