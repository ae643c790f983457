"""Stored wall-clock times, guarded against the clock stepping back.

In-process waits use the monotonic clock, but what the relay stores (when an alert is due, when
a chat last had a message, when a pause ends) must be wall-clock time, the one every process
shares. When that clock steps back (NTP, a VM resumed), a stored time that was "in a second"
becomes "in an hour". So a stored time is kept with the time it was decided, and a decision
dated after now means the clock stepped back since: such a time no longer holds (the alert is
due now, the pause is over, the send no longer counts), rather than being waited out an hour
late. Shifting it to start from now instead would not do: the decision stays "in the future"
for the whole hour, and the shifted time with it.

A decision dated only a little after now is no step at all: a process that read the clock at
the start of its pass sees another's decision taken a moment later.
"""

from __future__ import annotations

# Further ahead than this, a decision's date means the clock stepped back.
STEP_TOLERANCE = 10.0


def stepped_back(decided_at: float, now: float) -> bool:
    return decided_at > now + STEP_TOLERANCE


def guarded(at: float, decided_at: float, now: float) -> float:
    """`at`, decided at `decided_at`, as it stands `now`: `now` itself when the clock has
    stepped back since it was decided."""
    return now if stepped_back(decided_at, now) else at
