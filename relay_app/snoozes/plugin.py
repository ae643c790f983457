"""Snoozes, as a capability: Ignore's timed and counted choices, brought back by the watcher.
Its parts are still built by the wiring (parts.py), and its choices are still the core card's."""

from __future__ import annotations

from ..operating.capability import Capability
from .counters import SNOOZES

CAPABILITY = Capability("snoozes", counters=(SNOOZES,), tables=("snoozes",))
