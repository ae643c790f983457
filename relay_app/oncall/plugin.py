"""On call, as a capability: rotations with their covers, escalation steps, direct calls,
handoffs, `relay-app oncall`, and the tables that keep them. Its parts are still built by the
wiring (parts.py) and it provides `cards.verbs.Calls` there."""

from __future__ import annotations

from ..operating.capability import Capability
from . import direct, handoff_text
from .cli import add_oncall_command, roster_with_covers
from .counters import ESCALATION_STEPS, HANDOFFS

CAPABILITY = Capability(
    "oncall",
    counters=(ESCALATION_STEPS, HANDOFFS),
    shapes=(handoff_text.SHAPE, direct.SHAPE),
    cli=(add_oncall_command,),
    roster=roster_with_covers,
    tables=("escalations", "recalls", "covers", "people", "direct_calls"),
)
