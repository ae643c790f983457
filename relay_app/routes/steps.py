"""A route's `escalate`: whom the relay calls, and when, while nobody acts on an alert
(docs/oncall.md). Each step is `{ after = "10m", mention = ["@lead"] }`, its time counted from
the alert's delivery (not from the step before), in s, m or h; the last step may say `repeat =
2` and `every = "30m"`: called again that many times, that often. Read here into the steps the
spool keeps as timers (oncall/steps_store.py)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.json_values import json_int

# The longest an alert may wait for a step: the records it needs are kept a week.
MAX_AFTER = 7 * 86400.0
MAX_STEPS = 10
MAX_REPEAT = 24
_DURATION = re.compile(r"^(\d+)\s*([smh])$")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0}

Mentions = Callable[[object], tuple[str, ...]]


@dataclass(frozen=True)
class Step:
    """A route's escalation step: `after` seconds from the alert's delivery, call `people`;
    `direct`: each also privately, where they started a chat with the bot (oncall/people.py).
    A step at AT_DELIVERY is a route's `direct = true`: its alert's own mention line calls them
    in the chat, so it calls only privately."""

    after: float
    people: tuple[str, ...]
    direct: bool = False


AT_DELIVERY = 0.0


def steps_as_json(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """As an alert's job keeps its route's steps, until it is delivered."""
    return [
        {
            "after": step.after,
            "people": list(step.people),
            **({"direct": True} if step.direct else {}),
        }
        for step in steps
    ]


def steps_from_json(raw: object) -> tuple[Step, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(
        Step(
            float(step["after"]),
            tuple(str(person) for person in step["people"]),
            step.get("direct") is True,
        )
        for step in raw
        if isinstance(step, dict)
        and isinstance(step.get("after"), int | float)
        and isinstance(step.get("people"), list)
    )


def seconds(raw: object) -> float | None:
    """'10m' → 600.0; None for what is not a duration in s, m or h."""
    found = _DURATION.match(raw.strip()) if isinstance(raw, str) else None
    if found is None:
        return None
    return int(found.group(1)) * _UNIT[found.group(2)]


def steps_of(raw: object, mentions: Mentions, problem: Any) -> tuple[Step, ...]:
    """The route's steps, the last one's repeats spelt out; `mentions` checks a step's people
    as a route's `mention` is checked."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(s, dict) for s in raw):
        raise problem(
            "escalate", 'must be a list of steps: [{ after = "10m", mention = ["@lead"] }]'
        )
    if len(raw) > MAX_STEPS:
        raise problem("escalate", f"has {len(raw)} steps; a route may have {MAX_STEPS}")
    steps = [_step(number, table, mentions, problem) for number, table in enumerate(raw, 1)]
    if any(later.after <= earlier.after for earlier, later in itertools.pairwise(steps)):
        raise problem("escalate", "each step's after must be later than the one before")
    return (*steps, *_repeats(raw[-1], steps[-1], problem))


def _step(number: int, table: Mapping[str, Any], mentions: Mentions, problem: Any) -> Step:
    unknown = sorted(set(table) - {"after", "mention", "repeat", "every", "direct"})
    if unknown:
        raise problem(
            "escalate", f"step {number}: unknown key {unknown[0]!r} (after, mention, direct)"
        )
    direct = table.get("direct", False)
    if not isinstance(direct, bool):
        raise problem("escalate", f"step {number}: direct must be true or false")
    after = seconds(table.get("after"))
    if after is None or not 0 < after <= MAX_AFTER:
        raise problem(
            "escalate", f'step {number}: after must be like "10m" (s, m or h; at most 7 d)'
        )
    people = mentions(table.get("mention"))
    if not people:
        raise problem("escalate", f"step {number}: mention names nobody to call")
    return Step(after, people, direct)


def _repeats(table: Mapping[str, Any], last: Step, problem: Any) -> list[Step]:
    times, every = table.get("repeat"), table.get("every")
    if times is None and every is None:
        return []
    if (times := json_int(times)) is None or not 1 <= times <= MAX_REPEAT:
        raise problem("escalate", f"the last step's repeat must be a number from 1 to {MAX_REPEAT}")
    gap = seconds(every)
    if gap is None or gap < 60:
        raise problem("escalate", 'the last step\'s every must be like "30m" (at least 1 m)')
    return [Step(last.after + gap * n, last.people, last.direct) for n in range(1, times + 1)]


def called_directly(route_mentions: Sequence[str], steps: Sequence[Step]) -> tuple[Step, ...]:
    """A route's steps with `direct = true` on the route: its own mentions called privately at
    its alert's delivery, and every step privately too."""
    at_delivery = (Step(AT_DELIVERY, tuple(route_mentions), True),) if route_mentions else ()
    return (*at_delivery, *(Step(s.after, s.people, True) for s in steps))


def duration_of(raw: object, *, least: float, most: float) -> float | None:
    """A duration like "1h" (s, m or h) within [least, most]; None otherwise."""
    found = seconds(raw)
    return found if found is not None and least <= found <= most else None
