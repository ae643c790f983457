"""The queue in one process's memory: for alerts the spool cannot take (RELAY_SPOOL_PATH=off,
or the spool is unusable or full). The same scheduling as the spool's (queue.py), without
durability: these alerts are lost if the process stops first, which is logged, and when it
stops deliberately each gets one last attempt. Dead ones are logged, not kept.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Container
from dataclasses import dataclass, field

from ..clock import guarded
from ..errors import QueueFull
from ..formatting import Message
from ..outcomes import Dead, Delivered, RetryAt, Settled, Settlement
from ..pacing import MemoryPacer
from ..routing import Destination
from .holders import Holder
from .model import Admission, Claim, Lane, Later, SpooledAlert
from .queue import MAX_CLAIM, Fit, Retire, claim_due, due_now, why_wait

# Per process; past it, an alert that cannot be written to the spool cannot wait anywhere.
MAX_MEMORY_ALERTS = 1000


@dataclass
class _Waiting:
    alert: SpooledAlert
    scheduled_at: float
    after_failure: bool = False


@dataclass
class _Lane:
    destination: Destination
    waiting: list[_Waiting] = field(default_factory=list)  # oldest first
    token: str | None = None


class MemoryQueue:
    durable = False
    name = "memory"

    def __init__(self, *, max_alerts: int = MAX_MEMORY_ALERTS) -> None:
        self.max_alerts = max_alerts
        self._lock = threading.Lock()
        self._lanes: dict[str, _Lane] = {}
        self._pacer = MemoryPacer()

    def admit(
        self,
        message: Message,
        destination: Destination,
        *,
        now: float,
        holder: Holder,
        token: str,
        in_flight: Container[str],
        telegram_up: bool,
        attempt_by: float,
        lease_for: float,
        wait_until: float | None = None,
    ) -> Admission:
        with self._lock:
            if self._count() >= self.max_alerts:
                raise QueueFull(f"{self.max_alerts} alerts are already waiting in memory")
            lane = self._lanes.setdefault(destination.lane, _Lane(destination))
            alert = SpooledAlert(
                message, destination, received_at=now, retry_from=now, next_attempt_at=now
            )
            waiting, turn = why_wait(
                behind=lambda: bool(lane.waiting) or not _free(lane, in_flight),
                telegram_up=telegram_up,
                attempt_by=attempt_by,
                take_turn=lambda: self._pacer.reserve(
                    destination.chat_key, group=destination.is_group, now=now
                ),
                now=now,
            )
            lane.waiting.append(_Waiting(alert, now))
            if waiting is not None:
                return Admission(alert, None, waiting, turn)
            alert.attempts = alert.unsure_attempts = 1
            lane.token = token
            return Admission(alert, Claim(destination, token, [alert]))

    def lanes(self, *, now: float, holder: Holder, in_flight: Container[str]) -> list[Lane]:
        with self._lock:
            waiting = sorted(
                (lane for lane in self._lanes.values() if lane.waiting),
                key=lambda lane: lane.waiting[0].alert.memory_number,
            )
            return [
                Lane(lane.destination, _due(lane.waiting[0], now), _free(lane, in_flight))
                for lane in waiting
            ]

    def claim(
        self,
        lane: Lane,
        *,
        now: float,
        holder: Holder,
        token: str,
        in_flight: Container[str],
        fit: Fit,
        retire: Retire,
        send: bool,
        lease_for: float,
    ) -> Claim | Later | None:
        with self._lock:
            held = self._lanes.get(lane.destination.lane)
            if held is None or not _free(held, in_flight):
                return None
            due = due_now(((w, _due(w, now)) for w in held.waiting[:MAX_CLAIM]), now)
            destination = held.destination
            by_alert = {id(waiting.alert): waiting for waiting in due}

            def bury(alert: SpooledAlert, dead: Dead) -> None:
                held.waiting.remove(by_alert[id(alert)])
                alert.state = "dead"

            def turn_later() -> float | None:
                turn = self._pacer.reserve(
                    destination.chat_key, group=destination.is_group, now=now
                )
                return turn if turn > now else None

            def take(taken: list[SpooledAlert]) -> None:
                for waiting in due:  # due and alive: none waits for Telegram to come back now
                    if waiting.alert.state != "dead":
                        waiting.after_failure = False
                held.token = token

            return claim_due(
                destination,
                token,
                [waiting.alert for waiting in due],
                now=now,
                retire=retire,
                bury=bury,
                send=send,
                turn_later=turn_later,
                fit=fit,
                take=take,
            )

    def last_claims(self, fit: Fit) -> list[Claim]:
        """The process is stopping: every alert, due or not, paced or not, claimed for one
        last attempt, in as few messages as fit."""
        claims = []
        with self._lock:
            for lane in self._lanes.values():
                alerts = [waiting.alert for waiting in lane.waiting]
                while alerts:
                    taken = alerts[: max(1, fit(alerts[:MAX_CLAIM]))]
                    alerts = alerts[len(taken) :]
                    for alert in taken:
                        alert.attempts += 1
                        alert.unsure_attempts += 1
                    lane.token = secrets.token_hex(8)
                    claims.append(Claim(lane.destination, lane.token, taken))
        return claims

    def take_all(self) -> list[SpooledAlert]:
        """Empty the queue, returning what was in it, oldest first per destination."""
        with self._lock:
            alerts = [w.alert for lane in self._lanes.values() for w in lane.waiting]
            self._lanes.clear()
        return alerts

    def settle(
        self, claim: Claim, settlement: Settlement, *, now: float, wait_until: float | None = None
    ) -> Settled:
        with self._lock:
            lane = self._lanes[claim.destination.lane]
            if lane.token == claim.token:
                lane.token = None
            for alert, outcome in settlement.outcomes:
                waiting = next((w for w in lane.waiting if w.alert is alert), None)
                if waiting is None:
                    continue
                if isinstance(outcome, Delivered | Dead):
                    lane.waiting.remove(waiting)
                    continue
                assert isinstance(outcome, RetryAt)
                alert.next_attempt_at = outcome.at
                waiting.scheduled_at = now
                waiting.after_failure = outcome.after_failure
                if outcome.destination is not None:
                    lane.waiting.remove(waiting)
                    alert.destination = outcome.destination
                    moved = self._lanes.setdefault(
                        outcome.destination.lane, _Lane(outcome.destination)
                    )
                    moved.waiting.append(waiting)
                    moved.waiting.sort(key=lambda w: w.alert.memory_number)
            if settlement.pause_chat_until is not None:
                self._pacer.pause(claim.destination.chat_key, settlement.pause_chat_until, now=now)
            if settlement.delivered:
                self._due_now(now, chat=claim.destination.chat_key)
        return Settled()

    def after_recovery(self, now: float) -> int:
        with self._lock:
            return self._due_now(now)

    def release(self, holder: Holder) -> int:
        with self._lock:
            held = [lane for lane in self._lanes.values() if lane.token is not None]
            for lane in held:
                lane.token = None
            return len(held)

    def pending(self) -> int:
        with self._lock:
            return self._count()

    def tidy(self) -> None:
        pass  # nothing to copy back or forget

    def subscribe(self, on_news: Callable[[], None]) -> None:
        pass  # one process's memory: nobody else queues here

    def unsubscribe(self) -> None:
        pass

    def _due_now(self, now: float, *, chat: str | None = None) -> int:
        due = 0
        for lane in self._lanes.values():
            if chat is not None and lane.destination.chat_key != chat:
                continue
            for waiting in lane.waiting:
                if waiting.after_failure:
                    waiting.alert.next_attempt_at = min(waiting.alert.next_attempt_at, now)
                    waiting.scheduled_at = now
                    due += 1
        return due

    def _count(self) -> int:
        return sum(len(lane.waiting) for lane in self._lanes.values())


def _free(lane: _Lane, in_flight: Container[str]) -> bool:
    return lane.token is None or lane.token not in in_flight


def _due(waiting: _Waiting, now: float) -> float:
    return guarded(waiting.alert.next_attempt_at, waiting.scheduled_at, now)
