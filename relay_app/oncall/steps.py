"""Calling people when nobody acts on an alert (docs/oncall.md): a route's `escalate` steps,
planned as timers in the spool when its alert is delivered, fired once a second by the
dispatcher's upkeep (each a reply under the alert naming the step's people, on the one path to
the chat), and stopped when someone acts on the alert: On it, Resolve, Ignore or Mute.

The replies ring, whatever the route's quiet hours or `silent` say: a step exists to wake
someone, and a route that wants no calls at night says so by having no steps (or a route of its
own for the night)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from ..core.errors import SpoolError
from ..core.metrics import Metrics
from ..delivery.job import Delivery
from ..routes.rotation import ONCALL, Roster
from ..routes.steps import steps_from_json
from ..spool.store import Tx
from .counters import ESCALATION_STEPS
from .recalls import RecallStore
from .steps_store import EscalationStore, Fired, plan_in

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class Escalation:
    def __init__(
        self,
        store: EscalationStore,
        *,
        recalls: RecallStore | None = None,
        roster: Roster | None = None,
        metrics: Metrics | None = None,
        clock: Clock = time.time,
    ) -> None:
        """`roster`: who `oncall:NAME` names when a step calls privately."""
        self._store = store
        self._recalls = recalls
        self._roster = roster or Roster()
        self._metrics = metrics
        self._clock = clock

    def follow_up(self, delivery: Delivery) -> Callable[[Tx], None] | None:
        """An alert (or a digest) was delivered: its route's steps start counting, written in
        the delivery's unit of work (None: it has none). A digest's are its first alert's that
        has any."""
        about = delivery.about
        if any(data.get("again") for data in about):
            # An issue posted again (escalating): its calls are its first message's, which go
            # on until someone takes it on either; a second chain would call everyone twice.
            return None
        steps = next((s for data in about if (s := steps_from_json(data.get("escalate")))), ())
        if not steps:
            return None
        sent, thread = delivery.sent, delivery.destination.thread
        return lambda tx: plan_in(tx, sent.chat, thread, sent.message_id, delivery.at, steps)

    def acted(self, chat: str, message_id: int) -> None:
        """Someone acted on the alert: its steps still waiting will not fire."""
        try:
            stopped = self._store.stop(chat, message_id, now=self._clock())
        except SpoolError as exc:
            # Each step looks again when it is due: one whose alert was acted on stops then.
            log.warning(
                "the escalation of message %d could not be stopped now: %s", message_id, exc
            )
            return
        self._count("stopped", stopped)

    def taken(self, key: str) -> None:
        """Someone took the button's issue: its taker is called again if it stays theirs and
        open past its route's `take_for` (oncall/recalls.py)."""
        if self._recalls is None:
            return
        try:
            self._recalls.plan(key, now=self._clock())
        except SpoolError as exc:
            log.warning("a take's recall could not be planned; its taker is not called: %s", exc)

    def let_go(self, chat: str, message_ids: Sequence[int]) -> None:
        """The issue of these messages was let go: their calls go on where they stopped."""
        try:
            resumed = self._store.resume(chat, message_ids, now=self._clock())
        except SpoolError as exc:
            log.warning("the calls of a let-go issue could not be resumed now: %s", exc)
            return
        if resumed:
            log.info("%d escalation step(s) resumed: an issue was let go", resumed)

    def fire_due(self) -> Fired:
        """The dispatcher's upkeep: fire what is due, stop what was acted on meanwhile."""
        now = self._clock()
        try:
            due = self._store.calls_due(now=now)
            done = Fired(0, 0)
            if due.steps:
                # The covers read now: the unit of work that fires the steps reads no more.
                roster = self._roster.as_at(now)
                done = self._store.fire_due(now=now, who=lambda m: _who(roster, m, now))
        except SpoolError as exc:
            log.debug("escalation steps could not be looked at now: %s", exc)
            return Fired(0, 0)
        if done.fired:
            log.info(
                "%d escalation step(s) fired: their people are called under the alerts", done.fired
            )
        self._count("fired", done.fired)
        self._count("stopped", done.stopped)
        if due.recalls:
            self._recall(now)
        return done

    def _recall(self, now: float) -> None:
        """The takers who went quiet called, or their takes ended (oncall/recalls.py)."""
        if self._recalls is None:
            return
        try:
            recalled = self._recalls.fire_due(now=now)
        except SpoolError as exc:
            log.debug("recalls could not be looked at now: %s", exc)
            return
        if recalled.called or recalled.lapsed:
            log.info(
                "%d taker(s) of open issues called again, %d take(s) ended: nobody's again",
                recalled.called,
                recalled.lapsed,
            )
        self._count("recalled", recalled.called)
        self._count("lapsed", recalled.lapsed)

    def _count(self, outcome: str, count: int) -> None:
        if self._metrics is not None:
            self._metrics.of(ESCALATION_STEPS).labels(outcome).inc(count)


def _who(roster: Roster, mention: str, at: float) -> str:
    """The person a mention names at `at`: `oncall:NAME`'s on duty, anyone else as is."""
    if not mention.startswith(ONCALL):
        return mention
    return roster.person(mention.removeprefix(ONCALL), at) or mention
