"""Summaries, as a capability: a route's daily summary and weekly report, `relay-app summary`
and `relay-app report`. Its parts are still built by the wiring (parts.py)."""

from __future__ import annotations

from ..operating.capability import Capability
from . import text
from .cli import add_report_command, add_summary_command
from .counters import SUMMARIES

CAPABILITY = Capability(
    "summaries",
    counters=(SUMMARIES,),
    shapes=(text.SHAPE,),
    cli=(add_summary_command, add_report_command),
    tables=("summaries",),
)
