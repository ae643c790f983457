"""RELAY_WATCH_INTERVAL, RELAY_ESCALATING_MIN_EVENTS and RELAY_SNOOZE_EVENTS: how often the
watcher of GlitchTip asks about the issues the relay alerted on, how many events in the last
hour make one escalating (watch/watcher.py, docs/oncall.md), and the N of Ignore's "until N
more events" (snoozes/snoozing.py, docs/actions.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .env_values import integer, number


@dataclass(frozen=True)
class Watching:
    every: float = 60.0
    min_events: int = 100
    snooze_events: int = 100


DEFAULT_WATCHING = Watching()


def watching_from_env(environ: Mapping[str, str]) -> Watching:
    return Watching(
        every=number(environ, "RELAY_WATCH_INTERVAL", default=60.0, low=1.0, high=3600.0),
        min_events=integer(
            environ, "RELAY_ESCALATING_MIN_EVENTS", default=100, low=1, high=1_000_000_000
        ),
        snooze_events=integer(
            environ, "RELAY_SNOOZE_EVENTS", default=100, low=1, high=1_000_000_000
        ),
    )
