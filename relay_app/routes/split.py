"""A webhook split by the routes: each of its issues (or uptime monitors) routed on its own, and
the issues bound for one place put back together as a webhook of their own, as GlitchTip would
have sent it for them alone. Each part is then taken in like any webhook: its message, digest,
pacing, silences, buttons, details and dead letters are its destination's.

Issues GlitchTip counted but did not list ("12 issues" with three attached) cannot be routed:
they go with the first part that is sent, as its "…and 9 more".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.routing import Destination
from ..glitchtip.webhook import (
    KIND_KEY,
    Alert,
    IssueAlert,
    UptimeAlert,
    parse_alert,
    source_of,
)
from .table import Route, RouteTable, facts_of_issue, facts_of_monitor

_COUNT = re.compile(r"\s*\(\d+ issues?\)")


@dataclass(frozen=True)
class Part:
    payload: dict[str, Any]
    destination: Destination
    route: Route | None  # None: no route matched; where the webhook URL says
    count: int  # its issues (or monitors), the unlisted ones included
    alert: Alert  # its payload, read: what each stage after the split reads

    @property
    def mention(self) -> tuple[str, ...]:
        return self.route.mention if self.route is not None else ()


@dataclass(frozen=True)
class Dropped:
    route: Route
    count: int
    titles: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    parts: tuple[Part, ...]
    dropped: tuple[Dropped, ...] = ()


def split(
    payload: dict[str, Any],
    table: RouteTable,
    asked: Destination,
    default: Destination,
    levels: Mapping[str, str] | None = None,
    *,
    alert: Alert | None = None,
) -> Split:
    """The webhook's parts by route. `asked`: where its URL says (the default unless it names a
    chat or topic); `default`: TELEGRAM_CHAT_ID's, for a route that names only a topic;
    `levels`: the issues' own levels that are known, by the issue's link; `alert`: the payload
    as read already (read here otherwise). A part that is the whole webhook keeps that
    reading; each other part, a webhook of its own, is read once here."""
    alert, (facts, titles, total) = _read(payload, alert, levels or {})
    chosen = [table.first(each) for each in facts]
    groups: dict[int, list[int]] = {}
    for index, route in enumerate(chosen):
        groups.setdefault(route.number if route is not None else 0, []).append(index)
    whole = len(groups) == 1  # nothing to split: the webhook as GlitchTip sent it
    parts: list[Part] = []
    dropped: list[Dropped] = []
    unlisted = total - len(facts)
    for indices in groups.values():
        route = chosen[indices[0]]
        if route is not None and route.drop:
            dropped.append(Dropped(route, len(indices), tuple(titles[i] for i in indices)))
            continue
        count, unlisted = len(indices) + unlisted, 0
        part, read = (payload, alert) if whole else _read_part(payload, indices, count)
        parts.append(Part(part, _where(route, asked, default), route, count, read))
    return Split(tuple(parts), tuple(dropped))


def _read(
    payload: dict[str, Any], alert: Alert | None, levels: Mapping[str, str]
) -> tuple[Alert, tuple[list[dict[str, str | None]], list[str], int]]:
    """The payload read (`alert`, unless read already), and what the routes read of each
    issue (or monitor), their titles, and how many GlitchTip counted in all."""
    alert = parse_alert(payload) if alert is None else alert
    return alert, _facts(payload, alert, levels)


def _facts(
    payload: dict[str, Any], alert: Alert, levels: Mapping[str, str]
) -> tuple[list[dict[str, str | None]], list[str], int]:
    source = source_of(payload)
    if isinstance(alert, IssueAlert):
        kind = "created" if payload.get(KIND_KEY) == "created" else "issue"
        facts = [
            {**each, "source": source, "kind": kind} for each in _facts_of_issues(alert, levels)
        ]
        return facts, [issue.title for issue in alert.issues], alert.total
    if isinstance(alert, UptimeAlert):
        monitors = alert.monitors
        facts = [{**facts_of_monitor(m.name), "source": source} for m in monitors]
        return facts, [m.name for m in monitors], alert.total
    # A payload the relay does not know: routed on nothing it could read but its source.
    return [{"source": source}], [""], 1


def facts_of(payload: dict[str, Any]) -> list[dict[str, str | None]]:
    """What the routes read of each issue (or monitor) of a payload."""
    return _read(payload, None, {})[1][0]


def _facts_of_issues(alert: IssueAlert, levels: Mapping[str, str]) -> list[dict[str, str | None]]:
    return [
        facts_of_issue(
            i.title,
            i.short_id,
            i.color,
            ((f.title, f.value) for f in i.fields),
            (levels.get(i.link) if i.link else None) or i.level,
        )
        for i in alert.issues
    ]


def chat_for(
    facts: Mapping[str, str | None], table: RouteTable, default: Destination
) -> str | None:
    """The chat the routes send an issue with these facts to, when its webhook's URL names
    none (TELEGRAM_CHAT_ID's when no route takes it); None when a route drops it."""
    route = table.first(facts)
    if route is not None and route.drop:
        return None
    return _where(route, default, default).chat_key


def _where(route: Route | None, asked: Destination, default: Destination) -> Destination:
    if route is None or (route.chat is None and route.thread is None):
        return asked
    if route.chat is None:  # a topic of TELEGRAM_CHAT_ID
        return Destination(default.chat, route.thread)
    return Destination(route.chat, route.thread)


def _read_part(
    payload: Mapping[str, Any], indices: list[int], count: int
) -> tuple[dict[str, Any], Alert]:
    """The part of these attachments, and its reading: a webhook of its own."""
    part = _part_of(payload, indices, count)
    return part, parse_alert(part)


def _part_of(payload: Mapping[str, Any], indices: list[int], count: int) -> dict[str, Any]:
    """The webhook GlitchTip would have sent for these of its attachments alone."""
    attachments = payload["attachments"]
    part = dict(payload)
    part["attachments"] = [attachments[i] for i in indices]
    sections = payload.get("sections")
    if isinstance(sections, list) and len(sections) == len(attachments):
        part["sections"] = [sections[i] for i in indices]
    heading = payload.get("text")
    if isinstance(heading, str) and "uptime" not in heading.lower():
        bare = _COUNT.sub("", heading)
        part["text"] = bare + (f" ({count} issues)" if count > 1 else "")
    return part
