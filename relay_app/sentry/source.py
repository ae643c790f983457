"""Sentry as a source of alerts, as the core reads its issues: the relay's ids `sentry:<id>`,
and its links as its webhooks are read into the relay's shape (hooks.py):
`<SENTRY_URL>/organizations/<org>/issues/<id>/`. Sentry keeps an ignored issue's condition
itself (`statusDetails`), and brings the issue back when it is met."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ..core.sources import Source


def status_details(condition: Mapping[str, float], now: float) -> dict[str, int]:
    """The condition as Sentry's `statusDetails` for `ignored`, which Sentry keeps itself: an
    ignore for so many minutes (`ignoreDuration`), or until so many more events
    (`ignoreCount`). Sentry then sets the issue unresolved, and says so in its webhook."""
    if "until" in condition:
        return {"ignoreDuration": max(1, math.ceil((condition["until"] - now) / 60))}
    return {"ignoreCount": int(condition["events"])}


SENTRY = Source(
    name="sentry",
    shown="Sentry",
    prefix="sentry:",
    issue_path=re.compile(
        r"^/organizations/[A-Za-z0-9][A-Za-z0-9_-]{0,99}/issues/(?P<number>[0-9]{1,20})/?$"
    ),
    snoozes_sent_as=status_details,
    # Its webhooks name a project by its slug (a project's name may differ from it).
    project_named_by="slug",
)
