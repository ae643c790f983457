"""What goes with a message besides its text (outgoing.py): buttons for the issues of every alert
in it, a recovery's reply to its outage, and the records a delivery leaves; and the rule that
a recovery goes alone (job.py's `fit`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relay_app.acting.outgoing import Outgoing
from relay_app.core.errors import SpoolError
from relay_app.core.metrics import Metrics
from relay_app.core.routing import Destination
from relay_app.delivery.health import Health, MemoryHealthStore
from relay_app.delivery.job import Jobs
from relay_app.delivery.policy import RetryPolicy
from relay_app.message.formatting import message_for
from relay_app.spool import SpooledAlert
from relay_app.spool.database import Database
from relay_app.spool.sent import SpoolSentStore
from relay_app.telegram.courier import Sent
from relay_app.words import ENGLISH
from tests.payloads import issue, issue_alert, uptime_alert

NOW = 1_800_000_000.0
TOPIC = Destination(-1001234567890, 77)


def alert(payload: dict[str, Any], *, received_at: float = NOW) -> SpooledAlert:
    return SpooledAlert(
        message_for(payload, ENGLISH), TOPIC, received_at=received_at, retry_from=received_at, id=1
    )


class Edits:
    def __init__(self) -> None:
        self.made: list[tuple[str, int, str, object]] = []

    def __call__(self, chat: str, message_id: int, html_text: str, keyboard: object) -> None:
        self.made.append((chat, message_id, html_text, keyboard))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SpoolSentStore]:
    database = Database(str(tmp_path / "spool.sqlite3"))
    yield SpoolSentStore(database)
    database.close()


def test_every_issue_of_every_alert_in_a_message_gets_its_buttons(store: SpoolSentStore) -> None:
    outgoing = Outgoing(store, edit=Edits(), buttons=True, clock=lambda: NOW, words=ENGLISH)
    alerts = [alert(issue_alert(issue(1), issue(2))), alert(issue_alert(issue(3)))]
    plan = outgoing.plan(alerts, TOPIC)
    assert [b.issue_id for b in plan.buttons] == ["1", "2", "3"]
    assert len({b.key for b in plan.buttons}) == 3  # a fresh key each
    assert plan.extras.keyboard is not None
    assert plan.extras.reply_to is None
    assert (
        outgoing.delivered(plan, Sent("-1001234567890", 5, "<b>digest</b>"), alerts, TOPIC) is None
    )
    found = store.pressed(plan.buttons[2].key)
    assert found is not None
    assert (found[0].message_id, found[1].issue_id) == (5, "3")


def test_issues_whose_links_are_not_glitchtips_get_no_buttons_and_one_warning(
    store: SpoolSentStore, caplog: pytest.LogCaptureFixture
) -> None:
    outgoing = Outgoing(
        store, edit=Edits(), buttons=True, glitchtip_links="https://gt.example.org", words=ENGLISH
    )
    payload = issue_alert(
        issue(1, link="https://gt.example.org/acme/issues/1"),
        issue(2, link="http://169.254.169.254/latest/issues/2"),  # a webhook may name anything
        issue(3, link="https://attacker.example/acme/issues/3"),
    )
    with caplog.at_level(logging.WARNING):
        message = outgoing.vetted(message_for(payload, ENGLISH))
    assert [issue.id for issue in message.subjects.issues] == ["1"]
    assert message.html == message_for(payload, ENGLISH).html  # the alert itself is as it was
    [warning] = caplog.records
    assert "2 issue(s) whose link is not at GlitchTip's address" in warning.getMessage()
    assert "http://169.254.169.254, https://attacker.example" in warning.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert outgoing.vetted(message) is message  # GlitchTip's own: nothing to say
    assert caplog.records == []


def test_without_a_token_there_are_no_buttons_and_nothing_to_keep(store: SpoolSentStore) -> None:
    outgoing = Outgoing(store, edit=Edits(), buttons=False, words=ENGLISH)
    alerts = [alert(issue_alert(issue(1)))]
    plan = outgoing.plan(alerts, TOPIC)
    assert (plan.buttons, plan.extras.keyboard, plan.extras.reply_to) == ((), None, None)
    outgoing.delivered(plan, Sent("-1001234567890", 5, "x"), alerts, TOPIC)
    assert store.prune(before=NOW * 2) == 0  # nothing was kept


def test_a_recovery_replies_to_its_outage_and_then_marks_it_over(store: SpoolSentStore) -> None:
    edits = Edits()
    outgoing = Outgoing(store, edit=edits, buttons=False, clock=lambda: NOW, words=ENGLISH)
    down = [alert(uptime_alert(down=True), received_at=NOW)]
    outgoing.delivered(
        outgoing.plan(down, TOPIC), Sent("-1001234567890", 8, "<b>DOWN</b>"), down, TOPIC
    )

    up = [alert(uptime_alert(down=False), received_at=NOW + 252)]
    plan = outgoing.plan(up, TOPIC)
    assert plan.extras.reply_to == 8
    elsewhere = outgoing.plan(up, Destination(-1001234567890, 78))  # another topic's outage
    assert elsewhere.extras.reply_to is None
    follow_up = outgoing.delivered(plan, Sent("-1001234567890", 9, "<b>UP</b>"), up, TOPIC)
    assert follow_up is not None
    assert edits.made == []  # not on the delivering thread
    follow_up()
    assert edits.made == [
        ("-1001234567890", 8, "<b>DOWN</b>\n\n✅ My API back up after 4 min 12 s", None)
    ]
    assert outgoing.plan(up, TOPIC).extras.reply_to is None  # that outage is over


class BrokenStore(SpoolSentStore):
    def keep(self, *args: object) -> None:
        raise SpoolError("disk I/O error")


def test_a_record_that_cannot_be_kept_costs_the_alert_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = Database(str(tmp_path / "spool.sqlite3"))
    outgoing = Outgoing(BrokenStore(database), edit=Edits(), buttons=True, words=ENGLISH)
    alerts = [alert(issue_alert(issue(1)))]
    with caplog.at_level(logging.WARNING):
        outgoing.delivered(outgoing.plan(alerts, TOPIC), Sent("-1", 5, "x"), alerts, TOPIC)
    assert "presses on it will be refused" in caplog.text
    database.close()


def test_a_recovery_goes_alone_and_ends_a_digest_before_it() -> None:
    jobs = Jobs(
        lambda message, destination, extras: None,
        policy=RetryPolicy(attempts=3, wait=30, max_age=3600),
        health=Health(MemoryHealthStore()),
        metrics=Metrics(),
        outgoing=Outgoing(None, edit=Edits(), buttons=False, words=ENGLISH),
        words=ENGLISH,
    )
    issues = [alert(issue_alert(issue(n))) for n in range(3)]
    recovery = alert(uptime_alert(down=False))
    assert jobs.fit([*issues, recovery, *issues]) == 3
    assert jobs.fit([recovery, *issues]) == 1
    assert jobs.fit([alert(uptime_alert(down=True)), *issues]) == 4  # an outage may share
