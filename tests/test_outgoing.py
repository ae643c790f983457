"""What goes with a message besides its text (outgoing.py): buttons for the issues of every alert
in it, a recovery's reply to its outage, and the records a delivery leaves; a recovery's line
on its outage's card, shown by a queued edit; and the rule that a recovery goes alone (the
renderer's `how_many`)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relay_app import Relay
from relay_app.cards.edits import card_edits
from relay_app.cards.outgoing import Outgoing, Plan
from relay_app.cards.sent import SentStore
from relay_app.core.errors import SpoolError
from relay_app.core.outcomes import Delivered
from relay_app.core.routing import Destination
from relay_app.delivery.outbox import Outbox
from relay_app.delivery.render import Added, Edit, Renderer
from relay_app.glitchtip.source import GLITCHTIP as GLITCHTIP_SOURCE
from relay_app.message.formatting import Message
from relay_app.message.subjects import Home, IssueHomes
from relay_app.spool import Claim, Claimant, Job, Lane, Taking, on_store, this_process
from relay_app.spool.database import Database
from relay_app.telegram.courier import Sent
from relay_app.words import ENGLISH
from tests.conftest import DESTINATION, SOURCES, FakeTime
from tests.in_process import GLITCHTIP, Chat, webhook
from tests.payloads import issue, issue_alert, uptime_alert

NOW = 1_800_000_000.0
TOPIC = Destination(-1001234567890, 77)
RENDERER = Renderer(ENGLISH, late_after=60.0, sources=SOURCES)


_ids = itertools.count(1)


def delivered(
    outgoing: Outgoing,
    plan: Plan,
    sent: Sent,
    alerts: Sequence[Message],
    jobs: Sequence[Job],
    destination: Destination,
) -> None:
    """What the jobs do after a delivery whose jobs waited elsewhere: its records, written in
    a unit of work of their own."""
    outgoing.record_apart(outgoing.records(plan, sent, alerts, jobs, destination), sent)


def job(payload: dict[str, Any], *, received_at: float = NOW) -> Job:
    """A webhook's alert as a claim hands it out, an id of its own each."""
    return Job(
        "alert",
        {"webhook": payload},
        TOPIC,
        received_at=received_at,
        retry_from=received_at,
        id=next(_ids),
        lane=TOPIC.lane,
    )


def rendered(*jobs: Job) -> list[Message]:
    return [RENDERER.alert(each) for each in jobs]


@dataclass
class Spool:
    """The sent records, and the jobs queued beside them, in one spool file."""

    sent: SentStore
    database: Database

    def outgoing(self, *, buttons: bool, links: str | None = None) -> Outgoing:
        outbox = Outbox(on_store(self.database).queue, clock=lambda: NOW)
        return Outgoing(
            self.sent, outbox, buttons=buttons, clock=lambda: NOW, words=ENGLISH, sources=SOURCES
        )

    def edits_queued(self) -> list[Edit]:
        """The card edits waiting, each as it would be sent now."""
        queue = on_store(self.database).queue
        renderer = Renderer(
            ENGLISH,
            late_after=60.0,
            added=Added(edits=card_edits(self.sent.message)),
            sources=SOURCES,
        )
        edits = []
        for lane in queue.lanes(now=NOW, holder=this_process(), in_flight=()):
            claim = queue.claim(
                Lane(lane.key, lane.destination, NOW, free=True),
                Claimant(this_process(), lane.key, 10.0, ()),
                Taking(fit=renderer.how_many, retire=lambda job, now: None, send=True),
                now=NOW,
            )
            assert isinstance(claim, Claim)
            write = renderer.write(claim.jobs, now=NOW)
            assert isinstance(write, Edit)
            edits.append(write)
        return edits


@pytest.fixture
def spool(tmp_path: Path) -> Iterator[Spool]:
    database = Database(str(tmp_path / "spool.sqlite3"))
    yield Spool(SentStore(database), database)
    database.close()


def test_every_issue_of_every_alert_in_a_message_gets_its_buttons(spool: Spool) -> None:
    outgoing = spool.outgoing(buttons=True)
    jobs = [job(issue_alert(issue(1), issue(2))), job(issue_alert(issue(3)))]
    alerts = rendered(*jobs)
    plan = outgoing.plan(alerts, TOPIC)
    assert [b.issue_id for b in plan.buttons] == ["1", "2", "3"]
    assert len({b.key for b in plan.buttons}) == 3  # a fresh key each
    assert plan.extras.keyboard is not None
    assert plan.extras.reply_to is None
    delivered(outgoing, plan, Sent("-1001234567890", 5, "<b>digest</b>"), alerts, jobs, TOPIC)
    found = spool.sent.pressed(plan.buttons[2].key)
    assert found is not None
    assert (found[0].message_id, found[1].issue_id) == (5, "3")


def test_issues_whose_links_are_not_glitchtips_get_no_buttons() -> None:
    links = IssueHomes(((GLITCHTIP_SOURCE, Home("https://gt.example.org")),))
    payload = issue_alert(
        issue(1, link="https://gt.example.org/acme/issues/1"),
        issue(2, link="http://169.254.169.254/latest/issues/2"),  # a webhook may name anything
        issue(3, link="https://attacker.example/acme/issues/3"),
    )
    as_sent = Renderer(ENGLISH, late_after=60.0, buttons_at=links, sources=SOURCES).alert(
        job(payload)
    )
    assert [issue.id for issue in as_sent.subjects.issues] == ["1"]
    assert as_sent.html == RENDERER.alert(job(payload)).html  # the alert itself is as it was


def test_without_a_token_there_are_no_buttons_and_nothing_to_keep(spool: Spool) -> None:
    outgoing = spool.outgoing(buttons=False)
    jobs = [job(issue_alert(issue(1)))]
    alerts = rendered(*jobs)
    plan = outgoing.plan(alerts, TOPIC)
    assert (plan.buttons, plan.extras.keyboard, plan.extras.reply_to) == ((), None, None)
    delivered(outgoing, plan, Sent("-1001234567890", 5, "x"), alerts, jobs, TOPIC)
    assert spool.sent.prune(before=NOW * 2) == 0  # nothing was kept


def test_a_recovery_replies_to_its_outage_and_its_card_is_edited_to_say_it_is_over(
    spool: Spool,
) -> None:
    outgoing = spool.outgoing(buttons=False)
    down = [job(uptime_alert(down=True), received_at=NOW)]
    went_down = rendered(*down)
    sent = Sent("-1001234567890", 8, "<b>DOWN</b>")
    delivered(outgoing, outgoing.plan(went_down, TOPIC), sent, went_down, down, TOPIC)

    up = [job(uptime_alert(down=False), received_at=NOW + 252)]
    back_up = rendered(*up)
    plan = outgoing.plan(back_up, TOPIC)
    assert plan.extras.reply_to == 8
    elsewhere = outgoing.plan(back_up, Destination(-1001234567890, 78))  # another topic's
    assert elsewhere.extras.reply_to is None
    assert spool.edits_queued() == []
    delivered(outgoing, plan, Sent("-1001234567890", 9, "<b>UP</b>"), back_up, up, TOPIC)
    # Queued, as every write to the chat: a job of the outage's card, made when it goes.
    [edit] = spool.edits_queued()
    assert (edit.chat, edit.message_id, edit.html, edit.keyboard) == (
        "-1001234567890",
        8,
        "<b>DOWN</b>\n\n✅ My API back up after 4 min 12 s",
        None,
    )
    assert outgoing.plan(back_up, TOPIC).extras.reply_to is None  # that outage is over


def test_a_record_that_cannot_be_kept_costs_the_alert_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = Database(str(tmp_path / "spool.sqlite3"))
    spool = on_store(database)
    database.write(lambda tx: tx.execute("DROP TABLE sent_messages"), now=NOW)
    outgoing = Outgoing(
        spool.of(SentStore), Outbox(spool.queue), buttons=True, words=ENGLISH, sources=SOURCES
    )
    jobs = [job(issue_alert(issue(1)))]
    alerts = rendered(*jobs)
    with caplog.at_level(logging.WARNING):
        delivered(outgoing, outgoing.plan(alerts, TOPIC), Sent("-1", 5, "x"), alerts, jobs, TOPIC)
    assert "presses on it will be refused" in caplog.text
    database.close()


def test_a_recovery_goes_alone_and_ends_a_digest_before_it() -> None:
    issues = [job(issue_alert(issue(n))) for n in range(3)]
    recovery = job(uptime_alert(down=False))
    assert RENDERER.how_many([*issues, recovery, *issues]) == 3
    assert RENDERER.how_many([recovery, *issues]) == 1
    outage = job(uptime_alert(down=True))
    assert RENDERER.how_many([outage, *issues]) == 4  # an outage may share


def test_a_delivery_leaves_its_buttons_kept_and_one_whose_records_fail_stays_delivered(
    built: Callable[..., Relay], fake_time: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    """The jobs waited in the spool: what follows each delivery is written in the unit of work
    that records it. A follow-up the spool refuses is logged; the alert is not sent again."""
    chat = Chat.of(built, fake_time)
    spool = chat.relay.spool
    assert spool is not None
    first = issue_alert(issue(4, link=f"{GLITCHTIP}/acme/issues/4"))
    assert isinstance(webhook(chat.relay, first), Delivered)
    kept = chat.store.message(str(DESTINATION.chat), 1)
    assert kept is not None
    assert [button.issue_id for button in kept.buttons] == ["4"]

    spool.queue.record(lambda tx: tx.execute("DROP TABLE issue_buttons"), now=fake_time.now)
    fake_time.now += 60
    second = issue_alert(issue(5, link=f"{GLITCHTIP}/acme/issues/5"))
    with caplog.at_level(logging.WARNING):
        assert isinstance(webhook(chat.relay, second), Delivered)
    assert "message 2 in chat" in caplog.text
    assert "presses on it will be refused" in caplog.text
    assert spool.queue.pending() == 0
    assert len(chat.telegram.delivered) == 2


class RefusingQueue:
    """A queue the spool fails for one message's edit: the others are added."""

    def __init__(self, refused: int) -> None:
        self.refused = refused
        self.added: list[int] = []

    def add(self, job: Any, *, now: float, once: bool = False) -> None:
        message_id = int(job.data["message_id"])
        if message_id == self.refused:
            raise SpoolError("the disk is full")
        self.added.append(message_id)


def test_the_cards_of_an_issue_are_each_edited_and_one_the_spool_refuses_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = RefusingQueue(refused=42)
    outbox = Outbox(queue)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="relay_app.delivery.outbox"):
        outbox.cards("-100123", [41, 42, 43], "@ada (user id 7) is on BACKEND-4A")
    assert queue.added == [41, 43]  # the others are still edited
    [record] = caplog.records
    assert record.getMessage() == (
        "@ada (user id 7) is on BACKEND-4A, but message 42 in chat -100123 could not be"
        " updated: the disk is full"
    )
