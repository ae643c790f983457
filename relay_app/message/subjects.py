"""What an alert is about: the GlitchTip issues and uptime monitors it names, read from the
payload once, when the webhook arrives, and kept with the alert's message. The relay needs them
after the message is sent: to put Resolve and Ignore buttons under each issue, and to thread an
uptime monitor's recovery under its outage. Pure data, and
the JSON an alert's row kept it as before jobs held data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core.json_values import json_object
from ..core.origins import origin_of as parsed_origin
from ..glitchtip.details import details_from_json
from ..glitchtip.webhook import (
    Alert,
    IssueAlert,
    MonitorState,
    UptimeAlert,
    level_of,
    parse_alert,
)

# GlitchTip's issue links end in the issue's id: <domain>/<org_slug>/issues/<id>.
_ISSUE_PATH = re.compile(r"/issues/([0-9]{1,20})/?$")
# Sentry's, as the relay writes them (sentry/hooks.py):
# <SENTRY_URL>/organizations/<org>/issues/<id>/.
# Its issues' ids are told apart from GlitchTip's by this prefix, in every record the relay keeps:
# the two number their issues alike, and one relay may serve both.
_SENTRY_PATH = re.compile(r"^/organizations/[A-Za-z0-9][A-Za-z0-9_-]{0,99}/issues/([0-9]{1,20})/?$")
SENTRY_PREFIX = "sentry:"
# The sources, as an alert names its own (glitchtip/webhook.py's SOURCES).
GLITCHTIP, SENTRY = "glitchtip", "sentry"


@dataclass(frozen=True)
class IssueRef:
    """An issue GlitchTip's API can change: `id` as its API names it, and the origin of the
    alert's link, which must be GlitchTip's own for the issue to get buttons."""

    id: str
    origin: str
    short_id: str | None = None
    # Its title as the message showed it: how `relay-app silence list` names a muted issue.
    title: str | None = None
    # A GlitchTip issue's organization, as its link names it: the one organization a button
    # may act in (GlitchTip refuses the id in any other: glitchtip/api.py).
    org: str | None = None

    @property
    def label(self) -> str:
        """How buttons and notices name it: 'BACKEND-1A', or '#4' without a short id."""
        return self.short_id or f"#{self.id.removeprefix(SENTRY_PREFIX)}"


@dataclass(frozen=True)
class MonitorRef:
    """An uptime monitor's change. Monitors are told apart by their link."""

    link: str
    name: str
    state: MonitorState


@dataclass(frozen=True)
class Subjects:
    issues: tuple[IssueRef, ...] = ()
    monitors: tuple[MonitorRef, ...] = ()
    # Whom its route calls ('@username', 'tg:<user id>'): named once in the message it goes in.
    mentions: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.issues or self.monitors or self.mentions)

    @property
    def recovery(self) -> bool:
        """An uptime alert saying a monitor is back up: it is sent as a reply to the outage."""
        return any(monitor.state == "up" for monitor in self.monitors)

    @classmethod
    def from_json(cls, raw: str | None) -> Subjects:
        """The subjects an alert's row held as JSON before jobs held data (spool/history.py,
        step 13: its `rendered` message); anything else (a person's edit) reads as nothing."""
        if not raw:
            return NO_SUBJECTS
        try:
            data = json.loads(raw)
            # Older rows lack the later fields (a flag, then the title): read as their defaults.
            issues = tuple(
                IssueRef(
                    str(i),
                    str(o),
                    s,
                    title=str(rest[1]) if len(rest) > 1 and rest[1] is not None else None,
                )
                for i, o, s, *rest in data.get("issues", [])
            )
            monitors = tuple(
                MonitorRef(
                    str(link),
                    str(name),
                    state if state in ("down", "warning", "up") else "unknown",
                )
                for link, name, state in data.get("monitors", [])
            )
            mentions = tuple(str(m) for m in data.get("mentions", []))
        except (ValueError, TypeError, AttributeError):
            return NO_SUBJECTS
        return cls(issues, monitors, mentions)


NO_SUBJECTS = Subjects()


def subjects_of(alert: Alert) -> Subjects:
    if isinstance(alert, IssueAlert):
        refs = (
            issue_ref(issue.link, issue.short_id, issue.title, source=alert.source)
            for issue in alert.issues
        )
        return Subjects(issues=tuple(ref for ref in refs if ref is not None))
    if isinstance(alert, UptimeAlert):
        return Subjects(
            monitors=tuple(
                MonitorRef(monitor.link, monitor.name, monitor.state)
                for monitor in alert.monitors
                if monitor.link
            )
        )
    return NO_SUBJECTS


def issue_ref(
    link: str | None, short_id: str | None, title: str | None = None, *, source: str
) -> IssueRef | None:
    """The issue an alert's link names, read as its `source`'s link (the intake it came
    through decides: a body at GlitchTip's URL is GlitchTip's, one signed by Sentry is
    Sentry's), never as the link's own form says: a GlitchTip webhook linking Sentry's issue
    names no Sentry issue, so nothing of it reaches Sentry's API or token. None for a link that
    is not an issue of that source's."""
    if not link:
        return None
    try:
        path = urlsplit(link).path
    except ValueError:
        return None
    origin = origin_of(link)
    if origin is None:
        return None
    found = _SENTRY_PATH.match(path) if source == SENTRY else _ISSUE_PATH.search(path)
    if found is None or source not in (GLITCHTIP, SENTRY):
        return None
    if source == SENTRY:
        return IssueRef(SENTRY_PREFIX + found[1], origin, short_id, title=title)
    return IssueRef(found[1], origin, short_id, title=title, org=_org_in(path))


def number_in_link(link: str | None) -> str | None:
    """The issue's number an issue's link ends in, whichever source's form it has: to tell two
    lines of a message apart, and for a silence that names an issue by number; never to act."""
    try:
        path = urlsplit(link or "").path
    except ValueError:
        return None
    found = _SENTRY_PATH.match(path) or _ISSUE_PATH.search(path)
    return found[1] if found else None


def is_sentrys(issue_id: str) -> bool:
    """Whether the relay's id of an issue names one of Sentry's (`sentry:<id>`)."""
    return issue_id.startswith(SENTRY_PREFIX)


def source_name(issue_id: str) -> str:
    """The name of the issue's source, as the chat's words say it."""
    return "Sentry" if is_sentrys(issue_id) else "GlitchTip"


@dataclass(frozen=True)
class IssueHomes:
    """Where each source's issue links must be for an issue to get buttons: GlitchTip's origin
    (GLITCHTIP_PUBLIC_URL, or GLITCHTIP_URL) and Sentry's (SENTRY_URL), None for a source with
    no token. A webhook can name any link, and a press acts on the issue a link names: only a
    source's own links, of its own issues, may become buttons."""

    glitchtip: str | None = None
    sentry: str | None = None
    # GLITCHTIP_ORGANIZATIONS: the organizations whose issues get buttons; None: any the
    # token reaches.
    glitchtip_orgs: frozenset[str] | None = None

    def owns(self, issue: IssueRef) -> bool:
        if is_sentrys(issue.id):
            return self.sentry is not None and issue.origin == self.sentry
        return (
            self.glitchtip is not None
            and issue.origin == self.glitchtip
            and issue.org is not None
            and (self.glitchtip_orgs is None or issue.org in self.glitchtip_orgs)
        )

    def __bool__(self) -> bool:
        return self.glitchtip is not None or self.sentry is not None

    def described(self) -> str:
        """Its origins, for a log line."""
        return " and ".join(home for home in (self.glitchtip, self.sentry) if home) or "none"


NO_HOMES = IssueHomes()


def org_of(link: str | None) -> str | None:
    """The organization's slug in a GlitchTip issue's link: <domain>/<org_slug>/issues/<id>."""
    try:
        return _org_in(urlsplit(link or "").path)
    except ValueError:
        return None


def _org_in(path: str) -> str | None:
    parts = path.strip("/").split("/")
    return parts[-3] if len(parts) >= 3 and parts[-2] == "issues" else None


def origin_of(url: str) -> str | None:
    """'https://glitchtip.example.org' for any http(s) URL there: scheme, host and port, as a
    browser compares them (lower case, the scheme's default port left out), read as a request
    would go (core/origins.py). None for anything else, and for a URL with a user, a password
    or a fragment, which no tracker's link holds."""
    found = parsed_origin(url)
    return str(found) if found is not None else None


def split_by_origin(subjects: Subjects, homes: IssueHomes) -> tuple[Subjects, tuple[IssueRef, ...]]:
    """The subjects with only the issues a source with a token owns (`homes`), and the issues
    left out: only those may become buttons."""
    kept = tuple(issue for issue in subjects.issues if homes.owns(issue))
    if len(kept) == len(subjects.issues):
        return subjects, ()
    left_out = tuple(issue for issue in subjects.issues if not homes.owns(issue))
    return Subjects(kept, subjects.monitors), left_out


@dataclass(frozen=True)
class Alerted:
    """An issue a webhook's alert is about, as its job keeps it: the issue as its source names
    it, its link, and its level (its details' or the payload's own, else its colour's)."""

    issue: IssueRef
    link: str
    level: str


def alerted_in(data: Mapping[str, Any]) -> list[Alerted]:
    """The issues of a job's webhook (none for another shape of alert)."""
    payload = json_object(data.get("webhook"))
    alert = parse_alert(dict(payload)) if payload else None
    if not isinstance(alert, IssueAlert):
        return []
    details = json_object(data.get("details"))
    found = []
    for issue in alert.issues:
        ref = issue_ref(issue.link, issue.short_id, issue.title, source=alert.source)
        if ref is None or issue.link is None:
            continue
        known = details_from_json(details[ref.id]) if ref.id in details else None
        level = (known.level if known is not None else None) or issue.level
        found.append(Alerted(ref, issue.link, level or str(level_of(issue.color))))
    return found
