"""The issues an alert counted but did not attach, named through GlitchTip's API.

GlitchTip attaches at most MAX_ISSUES_PER_ALERT (3) issues to an alert and counts the rest in
its text ("GlitchTip Alert (5 issues)"). It never alerts on those again, so without a name they
are lost to the chat. With GLITCHTIP_API_TOKEN, once the webhook's own alert is queued, the
relay asks GlitchTip for them, off the webhook's thread, and takes what it finds in as a webhook
of its own (`RoutedWebhooks`): routed, with buttons, calls and steps, watched, as the attached
ones are; its first line says what it is (`named_hidden`).

How they are chosen: GlitchTip's rule sends the issues of one project that had enough events
within its window and had not alerted for that rule. The relay takes the project of an attached
issue, and of its unresolved issues, newest event first, those seen within the window (the
project's issue rules' longest, when the token may read them; else FALLBACK_WINDOW), leaving out
the attached ones and those the chat was already told of, as many as the alert counted and did
not attach (at most MOST_NAMED). Where that can be wrong: an issue of the project that had an
event in the window without reaching the rule's count (or that another rule alerted on) can be
named in place of a hidden one that has had no event since; GlitchTip does not say which issues
an alert held beyond the ones it attached. A relay that stops between the webhook and the
look-up names none: the alert's own message still says how many it did not attach.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from ..core.alerts import Alert, Field, Issue, IssueAlert, shade_of_level
from ..core.errors import TrackerError
from ..core.off_thread import OffThread
from ..core.routing import Destination
from ..delivery.render import Note
from ..intake.receive import Received
from ..issue_api.client import ROUTED_TAGS
from ..message.subjects import issue_ref, org_of
from ..words import Words
from .api import GlitchTipApi, ProjectPath
from .source import GLITCHTIP

log = logging.getLogger(__name__)

# The window when the project's rules cannot be read (a token without project:read): an hour,
# longer than most rules', so that a hidden issue is not missed; the newest are taken first.
FALLBACK_WINDOW = 3600.0
# Named for one alert at most: each costs two requests to GlitchTip.
MOST_NAMED = 20
# Alerts' look-ups waiting at once in a process; past it, one is said and counted, not made.
MOST_WAITING = 20
# The issues of the project read, newest event first: one page.
READ_AT_ONCE = 100


@dataclass(frozen=True)
class Hidden:
    """What a webhook's alert left unnamed: how many, of which organization, beside which
    attached issues (one of which tells the project), for which chat, when it came."""

    origin: str
    org: str
    attached: tuple[str, ...]
    count: int
    total: int
    destination: Destination
    received_at: float


def hidden_in(
    alert: Alert, origin: str, destination: Destination, received_at: float
) -> Hidden | None:
    """What the webhook's alert (as it was received) counts and does not attach, when its
    attached issues are GlitchTip's own (at `origin`); None when it attaches every issue it
    counts."""
    if not isinstance(alert, IssueAlert) or alert.total <= len(alert.issues):
        return None
    attached = _attached_at(alert, origin)
    if attached is None:
        return None
    org, ids = attached
    count = alert.total - len(alert.issues)
    return Hidden(origin, org, ids, count, alert.total, destination, received_at)


def _attached_at(alert: IssueAlert, origin: str) -> tuple[str, tuple[str, ...]] | None:
    """The organization and the ids of the alert's issues at GlitchTip's `origin`; None when
    none is, or they are of several organizations (one rule alerts on one project's)."""
    glitchtips = GLITCHTIP if alert.source == GLITCHTIP.name else None
    found = [
        (ref.id, org)
        for issue in alert.issues
        if (ref := issue_ref(issue.link, issue.short_id, source=glitchtips)) is not None
        and ref.origin == origin
        and (org := org_of(issue.link)) is not None
    ]
    orgs = {org for _, org in found}
    if len(orgs) != 1:
        return None
    return orgs.pop(), tuple(issue_id for issue_id, _ in found)


class HiddenIssues:
    """This process's naming of hidden issues: each alert's look-up one task off the webhook's
    thread (core/off_thread.py: one thread, a bounded backlog, made lazily after a fork)."""

    def __init__(
        self,
        api: GlitchTipApi,
        take: Callable[[Alert, Destination, Mapping[str, Any]], object],
        *,
        origin: str,
        told: Callable[[str, str], bool],
        counted: Callable[[str, int], None] = lambda outcome, count: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`take`: a webhook's way in (routes, queue, first attempt), with more for its job;
        `origin`: GlitchTip's (GLITCHTIP_URL's public address, its issues' links); `told`:
        whether a chat was told of an issue (by id); `counted`: each look-up's outcome."""
        self._api = api
        self._origin = origin
        # Its alerts' messages say the issues they left out are named (intake/record.py).
        self.names_left_out_at = origin
        self._take = take
        self._told = told
        self._counted = counted
        self._clock = clock
        self._off_thread = OffThread("relay-hidden", threads=1, most_waiting=MOST_WAITING)

    def after_webhook(self, received: Received) -> bool:
        """A webhook was taken in: when its alert counts issues it does not attach, name them
        off the caller's thread. Whether it does."""
        hidden = hidden_in(received.alert, self._origin, received.asked, self._clock())
        if hidden is not None:
            self.name_later(hidden)
        return hidden is not None

    def name_later(self, hidden: Hidden) -> None:
        """Look the hidden issues up and take them in, off the caller's thread; when as many
        look-ups wait already (a storm of such alerts), said and counted instead."""

        def name() -> None:
            self.name(hidden)

        if not self._off_thread.submit(name):
            log.warning(
                "the %d issue(s) an alert counted and did not attach will not be named: %d "
                "such look-ups wait already",
                hidden.count,
                MOST_WAITING,
            )
            self._counted("failed", hidden.count)

    def name(self, hidden: Hidden) -> int:
        """Look them up and take them in now; how many were named."""
        try:
            found = self._found(hidden)
        except TrackerError as exc:
            log.warning(
                "the %d issue(s) an alert counted and did not attach could not be named: %s",
                hidden.count,
                exc,
            )
            self._counted("failed", hidden.count)
            return 0
        except Exception:  # a bug here must not reach the pool unseen
            log.exception("naming the issues an alert did not attach failed")
            self._counted("failed", hidden.count)
            return 0
        if not found:
            log.warning(
                "the %d issue(s) an alert counted and did not attach were not found in "
                "GlitchTip (none of the project's unresolved issues seen in the window is "
                "new to the chat)",
                hidden.count,
            )
            self._counted("not_found", hidden.count)
            return 0
        about = {"attached": len(hidden.attached), "total": hidden.total}
        self._take(named_alert(found, hidden), hidden.destination, {"named_hidden": about})
        log.info(
            "named %d of the %d issue(s) an alert counted and did not attach: %s",
            len(found),
            hidden.count,
            ", ".join(str(issue.get("shortId") or issue.get("id")) for issue, _ in found),
        )
        self._counted("named", len(found))
        if len(found) < hidden.count:
            self._counted("not_found", hidden.count - len(found))
        return len(found)

    def shutdown(self) -> None:
        self._off_thread.shutdown()

    def _found(self, hidden: Hidden) -> list[tuple[dict[str, Any], dict[str, str]]]:
        """The issues chosen (the module's docstring says how), each with its routed tags."""
        project = self._api.issue(hidden.attached[0]).get("project") or {}
        project_id, slug = str(project.get("id", "")), str(project.get("slug", ""))
        if not project_id.isdigit():
            raise TrackerError(f"issue {hidden.attached[0]} names no project")
        since = hidden.received_at - self._window(hidden.org, slug)
        listed = self._api.project_issues(hidden.org, project_id, limit=READ_AT_ONCE)
        chat = str(hidden.destination.chat)
        new_here = (i for i in _candidates(listed, hidden, since) if not self._told(chat, i))
        chosen = list(islice(new_here, min(hidden.count, MOST_NAMED)))
        return [self._api.issue_in(hidden.org, issue_id) for issue_id in chosen]

    def _window(self, org: str, slug: str) -> float:
        """The project's issue rules' longest window, or FALLBACK_WINDOW when they cannot be
        read (the token's scopes) or say none."""
        try:
            rules = self._api.alert_rules(ProjectPath(org, slug))
        except (TrackerError, ValueError):
            return FALLBACK_WINDOW
        minutes = [
            span
            for rule in rules
            if not rule.get("uptime") and isinstance(span := rule.get("timespanMinutes"), int)
        ]
        return 60.0 * max(minutes) if minutes else FALLBACK_WINDOW


def _candidates(listed: list[dict[str, Any]], hidden: Hidden, since: float) -> list[str]:
    """Of the project's issues as listed (newest event first), the unresolved ones seen since
    `since` that the alert did not attach: their ids."""
    return [
        str(issue.get("id", ""))
        for issue in listed
        if str(issue.get("id", "")) not in hidden.attached
        and issue.get("status") == "unresolved"
        and (_time(issue.get("lastSeen")) or 0.0) >= since
    ]


def named_alert(found: list[tuple[dict[str, Any], dict[str, str]]], hidden: Hidden) -> Alert:
    """The issues found, as GlitchTip's webhook would have attached them (apps/alerts/
    webhooks.py), with `named_hidden` saying what they are."""
    issues = []
    for issue, tags in found:
        project = issue.get("project") or {}
        fields = [Field("Project", str(project.get("name", "")))]
        # The tags GlitchTip's webhook puts in the fields, in its order, by the fields' titles.
        fields += [Field(title, tags[title]) for title in ROUTED_TAGS.values() if tags.get(title)]
        level = str(issue.get("level", "")).lower()
        issues.append(
            Issue(
                title=str(issue.get("title") or ""),
                link=f"{hidden.origin}/{hidden.org}/issues/{issue.get('id')}",
                culprit=str(issue.get("culprit") or "") or None,
                shade=shade_of_level(level),
                short_id=str(issue.get("shortId") or f"#{issue.get('id')}"),
                fields=tuple(fields),
            )
        )
    count = len(issues)
    heading = "GlitchTip Alert" + (f" ({count} issues)" if count > 1 else "")
    return IssueAlert(heading, tuple(issues), count, GLITCHTIP.name)


def named_hidden_line(about: object, words: Words) -> str | None:
    """The first line of the issues named: how many the alert counted and attached."""
    if not isinstance(about, dict):
        return None
    return words.named_hidden.format(
        attached=int(about.get("attached", 0)), total=int(about.get("total", 0))
    )


NAMED_HIDDEN = Note("named_hidden", named_hidden_line)


def _time(raw: object) -> float | None:
    """An ISO 8601 time as GlitchTip's API writes it ('2026-12-04T19:04:18.522Z')."""
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
