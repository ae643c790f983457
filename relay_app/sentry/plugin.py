"""Sentry, as a capability: `relay-app check`'s questions of its settings and the deliveries it
counted once. Its page is still built by the wiring (parts.py)."""

from __future__ import annotations

from ..operating.capability import Capability
from .check import sentry_verdicts

CAPABILITY = Capability(
    "sentry",
    on=lambda settings: settings.sentry is not None,
    checks=(sentry_verdicts,),
    tables=("sentry_deliveries",),
)
