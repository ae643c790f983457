"""On call's records, written once for every database (oncall/people.py, recalls.py,
steps_store.py's resume, summaries/report.py), on a SQLite file and on PostgreSQL alike, two
relays' connections to one spool: who sent /start and their names, private calls, a take's
recall and its lapse, the calls going on after it, and the report read from all of it."""

from __future__ import annotations

import pytest

from relay_app.capabilities import REGISTRY
from relay_app.cards.card import IssueButton, SentMessage
from relay_app.cards.sent import SentStore
from relay_app.core.routing import Destination
from relay_app.oncall import people as people_module
from relay_app.oncall.calls_made import CallsMadeStore
from relay_app.oncall.people import Met, PeopleStore, called_in, reachable_in
from relay_app.oncall.recalls import RecallStore
from relay_app.oncall.steps_store import CallsDue, EscalationStore
from relay_app.routes.steps import Step
from relay_app.spool.store import Store
from relay_app.summaries.report import ReportStore
from relay_app.takes.store import TakesStore
from tests.taking import take, taker

CHAT = "-1001234567890"
NOW = 1_800_000_000.0
GLITCHTIP = "https://glitchtip.example"


def test_people_private_calls_recalls_and_the_report_on_either_database(
    two_stores: tuple[Store, Store],
) -> None:
    mine, theirs = two_stores
    people, others = PeopleStore(mine), PeopleStore(theirs)
    people.started(Met(501, "Anna_Ops", "Anna"), now=NOW)
    others.seen(Met(502, "boris_ops", "Boris <b>"), now=NOW)
    others.seen(Met(503, "anna_ops", "Not Anna"), now=NOW)  # the username moved to 503
    people.started(Met(501, None, "Anna"), now=NOW)
    assert others.names(["tg:502", "tg:501", "@x"], now=NOW) == {
        "tg:502": "Boris <b>",
        "tg:501": "Anna",
    }
    reached = mine.write(
        lambda tx: dict(reachable_in(tx, ["tg:501", "@boris_ops", "tg:502"])), now=NOW
    )
    assert reached == {"tg:501": 501}  # Boris never sent /start
    mine.write(lambda tx: called_in(tx, 501, CHAT, 41), now=NOW)
    assert others.called_directly(501, CHAT, 41, now=NOW + 60)
    assert not others.called_directly(501, CHAT, 42, now=NOW + 60)
    assert not others.called_directly(501, CHAT, 41, now=NOW + 8 * 86400)
    assert people.tidy(now=NOW + 8 * 86400) == 1

    # A card whose route says take_for 1 h, taken at once; its step stopped by the take.
    card = SentMessage(
        CHAT,
        41,
        "<b>alert</b>",
        NOW,
        buttons=(IssueButton("k1", "1", GLITCHTIP, "BACKEND-1A"),),
        take_for=3600.0,
    )
    SentStore(mine).keep(card, [])
    EscalationStore(mine).plan(CHAT, None, 41, NOW, [Step(600.0, ("@lead_one",))])
    assert take(theirs, "k1", by="@ada_ops", by_id=4242, at=NOW + 60) == [41]
    assert EscalationStore(theirs, REGISTRY.marks).stop(CHAT, 41, now=NOW + 60) == 1
    recalls = RecallStore(mine, REGISTRY.marks, TakesStore())
    their_recalls = RecallStore(theirs, REGISTRY.marks, TakesStore())
    assert recalls.plan("k1", now=NOW + 60)
    due = EscalationStore(theirs).calls_due
    assert due(now=NOW + 3659) == CallsDue(steps=False, recalls=False)  # one read says so
    assert due(now=NOW + 3660) == CallsDue(steps=False, recalls=True)
    assert their_recalls.fire_due(now=NOW + 3659).called == 0
    assert their_recalls.fire_due(now=NOW + 3660).called == 1
    assert recalls.fire_due(now=NOW + 3661).called == 0  # once for the fleet
    lapsed = recalls.fire_due(now=NOW + 7260)
    assert (lapsed.called, lapsed.lapsed) == (0, 1)
    kept = SentStore(theirs, REGISTRY.marks).message(CHAT, 41)
    assert kept is not None
    assert taker(kept.buttons[0]) is None  # nobody's again
    assert due(now=NOW + 7261) == CallsDue(steps=True, recalls=False)
    fired = EscalationStore(theirs).fire_due(now=NOW + 7261)  # the calls go on
    assert (fired.fired, fired.stopped) == (1, 0)

    report = ReportStore(theirs, TakesStore()).report(
        Destination(int(CHAT)), start=NOW - 60, now=NOW + 7300, calls=CallsMadeStore(mine)
    )
    assert (report.alerts, report.issues, report.taken, report.calls) == (1, 1, 1, 2)
    assert (report.take_median, report.takers) == (60.0, {"@ada_ops": 1})
    assert (report.open_count, [i.label for i in report.open]) == (1, ["BACKEND-1A"])
    elsewhere = ReportStore(mine, TakesStore()).report(
        Destination(int(CHAT), 7), start=NOW - 60, now=NOW
    )
    assert (elsewhere.alerts, elsewhere.taken) == (0, 0)
    count, still = ReportStore(mine, TakesStore()).still_open(
        Destination(int(CHAT)), since=NOW - 60, now=NOW
    )
    assert (count, [i.taken_by for i in still]) == (1, [None])


def test_people_are_kept_to_their_cap_whether_or_not_they_sent_start(
    two_stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap holds whoever they are (10,500 rows of people who only sent /start held it past
    10,000 before): the longest unseen go first."""
    monkeypatch.setattr(people_module, "MAX_PEOPLE", 3)
    mine, theirs = two_stores
    people = PeopleStore(mine)
    for n in range(4):
        people.started(Met(600 + n, None, f"Starter {n}"), now=NOW + n)
    people.seen(Met(700, None, "Seen once"), now=NOW + 10)
    count = theirs.read(lambda tx: tx.one("SELECT COUNT(*) AS n FROM people"))
    assert count is not None
    assert int(count["n"]) == 3
    kept = [met.user_id for met in PeopleStore(theirs).reachable(now=NOW + 11)]
    assert kept == [602, 603]  # and 700, seen last
    people.seen(Met(602, None, "Starter 2"), now=NOW + 20)  # acts: seen again
    people.started(Met(701, None, "Late"), now=NOW + 21)
    assert [met.user_id for met in PeopleStore(theirs).reachable(now=NOW + 22)] == [602, 701]
