"""Every interval the relay waits on, from one source: Telegram's pace, how long a lease
outlasts its attempt, how often the dispatcher looks and a failing Telegram is asked again, how
long a poll for presses waits, how often an unreachable Telegram is asked again at start, how
often each process looks at the fleet's leader's lease and how long it lasts.
The defaults are production's; `scaled` compresses them all alike, for tests and drills against
stand-ins, which then run in a fraction of the time without a sleep of their own.

RELAY_TIME_SCALE (operating/config.py) is that factor. Floors keep production honest: a relay
that talks to Telegram itself keeps Telegram's pace whatever the factor, and no interval goes
below what the relay's own work takes (FLOOR).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .pacing import TELEGRAMS, Pace

# No interval is compressed below this: below it, the relay's own writes and requests, not the
# interval, would decide what happens.
FLOOR = 0.05


@dataclass(frozen=True)
class Timing:
    pace: Pace = TELEGRAMS
    # A lease lasts the attempt's deadline and this: the writes around the attempt.
    lease_margin: float = 5.0
    # Of that margin, what an attempt leaves for the writes after it: one that could not end
    # this long before its lease runs out is not made.
    settle_margin: float = 1.0
    # The longest the dispatcher waits before it looks at the queue again; and, where the
    # spool tells of news (PostgreSQL's NOTIFY: work queued, a lane freed) and nothing is due
    # sooner, the longest an idle one waits (its upkeep, the leader's chores, runs as often).
    poll_interval: float = 1.0
    idle_interval: float = 5.0
    # How often a failing Telegram is asked whether it answers again.
    probe_interval: float = 2.0
    # How long one getUpdates waits for a press (Telegram's long poll; whole seconds).
    long_poll: int = 10
    # How often each process looks at the fleet's leader's lease (delivery/leadership.py): the
    # leader renews it, the others see whether it is free; and how long it lasts unrenewed. A
    # leader that stalls is replaced within a term and a look; one gone from its host, at the
    # next look of a process on that host.
    leader_look: float = 1.0
    leader_term: float = 5.0
    # How often the start-up check asks again a Telegram it could not reach.
    reach_again: float = 5.0
    # How often the leader says again, at ERROR, that the routes file on disk is refused.
    routes_refused_again: float = 60.0
    # What every interval is multiplied by (RELAY_TIME_SCALE): a capability's own, too (`of`).
    factor: float = 1.0

    def of(self, seconds: float) -> float:
        """A capability's own interval (how often it writes, how long before it asks again),
        compressed as every other."""
        return seconds if self.factor == 1.0 else max(FLOOR, seconds * self.factor)

    def scaled(self, factor: float, *, keep_telegrams_pace: bool) -> Timing:
        """Every interval times `factor` (at least FLOOR); the pace kept as it is when the
        relay talks to Telegram itself."""
        if factor == 1.0:
            return self
        pace = self.pace if keep_telegrams_pace else self.pace.scaled(factor)
        return replace(
            self,
            pace=pace,
            lease_margin=max(FLOOR, self.lease_margin * factor),
            settle_margin=max(FLOOR, self.settle_margin * factor),
            poll_interval=max(FLOOR, self.poll_interval * factor),
            idle_interval=max(FLOOR, self.idle_interval * factor),
            probe_interval=max(FLOOR, self.probe_interval * factor),
            long_poll=max(1, round(self.long_poll * factor)),
            leader_look=max(FLOOR, self.leader_look * factor),
            leader_term=max(FLOOR, self.leader_term * factor),
            reach_again=max(FLOOR, self.reach_again * factor),
            routes_refused_again=max(FLOOR, self.routes_refused_again * factor),
            factor=self.factor * factor,
        )


PRODUCTION = Timing()
