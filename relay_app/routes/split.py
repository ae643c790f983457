"""An alert split by the routes: each of its issues (or uptime monitors) routed on its own, and
the issues bound for one place put back together as an alert of their own, as its source would
have sent it for them alone. Each part is then taken in like any webhook: its message, digest,
pacing, silences, buttons, details and dead letters are its destination's.

Issues GlitchTip counted but did not list ("12 issues" with three attached) cannot be routed:
they go with the first part that is sent, as its "…and 9 more".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..core.alerts import Alert, IssueAlert, UptimeAlert
from ..core.routing import Destination
from .table import Route, RouteTable, facts_of_issue, facts_of_monitor

_COUNT = re.compile(r"\s*\(\d+ issues?\)")


@dataclass(frozen=True)
class Part:
    alert: Alert  # its issues (or monitors) alone: what each stage after the split reads
    destination: Destination
    route: Route | None  # None: no route matched; where the webhook URL says
    count: int  # its issues (or monitors), the unlisted ones included

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
    alert: Alert,
    table: RouteTable,
    asked: Destination,
    default: Destination,
    levels: Mapping[str, str] | None = None,
) -> Split:
    """The alert's parts by route. `asked`: where its URL says (the default unless it names a
    chat or topic); `default`: TELEGRAM_CHAT_ID's, for a route that names only a topic;
    `levels`: the issues' own levels that are known, by the issue's link. A part that is the
    whole alert is that alert; each other part, an alert of its own."""
    facts, titles, total = _facts(alert, levels or {})
    chosen = [table.first(each) for each in facts]
    groups: dict[int, list[int]] = {}
    for index, route in enumerate(chosen):
        groups.setdefault(route.number if route is not None else 0, []).append(index)
    whole = len(groups) == 1  # nothing to split: the alert as its source sent it
    parts: list[Part] = []
    dropped: list[Dropped] = []
    unlisted = total - len(facts)
    for indices in groups.values():
        route = chosen[indices[0]]
        if route is not None and route.drop:
            dropped.append(Dropped(route, len(indices), tuple(titles[i] for i in indices)))
            continue
        count, unlisted = len(indices) + unlisted, 0
        part = alert if whole else _part_of(alert, indices, count)
        parts.append(Part(part, _where(route, asked, default), route, count))
    return Split(tuple(parts), tuple(dropped))


def _facts(
    alert: Alert, levels: Mapping[str, str]
) -> tuple[list[dict[str, str | None]], list[str], int]:
    """What the routes read of each issue (or monitor), their titles, and how many its source
    counted in all."""
    if isinstance(alert, IssueAlert):
        facts = [
            {**each, "source": alert.source, "kind": alert.kind}
            for each in _facts_of_issues(alert, levels)
        ]
        return facts, [issue.title for issue in alert.issues], alert.total
    if isinstance(alert, UptimeAlert):
        monitors = alert.monitors
        facts = [{**facts_of_monitor(m.name), "source": alert.source} for m in monitors]
        return facts, [m.name for m in monitors], alert.total
    # A payload the relay does not know: routed on nothing it could read but its source.
    return [{"source": alert.source}], [""], 1


def facts_of(alert: Alert) -> list[dict[str, str | None]]:
    """What the routes read of each issue (or monitor) of an alert."""
    return _facts(alert, {})[0]


def _facts_of_issues(alert: IssueAlert, levels: Mapping[str, str]) -> list[dict[str, str | None]]:
    return [
        facts_of_issue(
            i.title,
            i.short_id,
            i.shade,
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


def _part_of(alert: Alert, indices: list[int], count: int) -> Alert:
    """The alert its source would have sent for these of its issues (or monitors) alone."""
    if isinstance(alert, UptimeAlert):
        return replace(alert, monitors=tuple(alert.monitors[i] for i in indices), total=count)
    if not isinstance(alert, IssueAlert):
        return alert  # one part only: never split
    bare = _COUNT.sub("", alert.heading)
    heading = bare + (f" ({count} issues)" if count > 1 else "")
    return replace(
        alert, heading=heading, issues=tuple(alert.issues[i] for i in indices), total=count
    )
