"""What an alert is about: the issues and uptime monitors it names, read from the payload once,
when the webhook arrives, and kept with the alert's message. The relay needs them after the
message is sent: to put Resolve and Ignore buttons under each issue, and to thread an uptime
monitor's recovery under its outage. Pure data, and the JSON an alert's row kept it as before
jobs held data. An issue's link is read as its source writes them (core/sources.py): this
module spells no source's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core.alerts import Alert, IssueAlert, MonitorState, UptimeAlert
from ..core.errors import Unreadable
from ..core.issue_details import details_from_json
from ..core.json_values import json_object
from ..core.origins import origin_of as parsed_origin
from ..core.sources import Source, Sources, number_of

# Every tracker's issue links end in the issue's number: `.../issues/<id>/`.
_ANY_ISSUE_PATH = re.compile(r"/issues/([0-9]{1,20})/?$")


@dataclass(frozen=True)
class IssueRef:
    """An issue its source's API can change: `id`, the relay's (core/sources.py), and the origin
    of the alert's link, which must be its source's own for the issue to get buttons."""

    id: str
    origin: str
    short_id: str | None = None
    # Its title as the message showed it: how `relay-app silence list` names a muted issue.
    title: str | None = None
    # The issue's organization, as its link names it, for a source whose links name one: the
    # one organization a button may act in (its API refuses the id in any other).
    org: str | None = None

    @property
    def label(self) -> str:
        """How buttons and notices name it: 'BACKEND-1A', or '#4' without a short id."""
        return self.short_id or f"#{number_of(self.id)}"


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


def subjects_of(alert: Alert, sources: Sources) -> Subjects:
    if isinstance(alert, IssueAlert):
        source = sources.named(alert.source)
        refs = (
            issue_ref(issue.link, issue.short_id, issue.title, source=source)
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
    link: str | None, short_id: str | None, title: str | None = None, *, source: Source | None
) -> IssueRef | None:
    """The issue an alert's link names, read as its `source`'s link (the intake it came
    through decides: a body at one source's URL is that source's, one signed by another is
    the other's), never as the link's own form says: a webhook of one source linking another's
    issue names no issue of the other's, so nothing of it reaches the other's API or token.
    None for a link that is not an issue of that source's, and for no source."""
    if not link or source is None:
        return None
    try:
        path = urlsplit(link).path
    except ValueError:
        return None
    origin = origin_of(link)
    number = source.number_in(path)
    if origin is None or number is None:
        return None
    org = _org_in(path) if source.org_in_link else None
    return IssueRef(source.relay_id(number), origin, short_id, title=title, org=org)


def number_in_link(link: str | None) -> str | None:
    """The issue's number an issue's link ends in, whichever source's it is: to tell two
    lines of a message apart, and for a silence that names an issue by number; never to act."""
    try:
        path = urlsplit(link or "").path
    except ValueError:
        return None
    found = _ANY_ISSUE_PATH.search(path)
    return found[1] if found else None


@dataclass(frozen=True)
class Home:
    """Where a source's issue links must be (its origin) for its issues to get buttons, and,
    for a source whose links name an organization, the organizations whose issues get them
    (None: any its token reaches)."""

    origin: str
    orgs: frozenset[str] | None = None
    # Another address its issues' links have (sentry.io's customer domains), read as the link
    # at `origin` that names the same issue (None for a link that is none of its); unset: none.
    written_as: Callable[[str], str | None] | None = None


@dataclass(frozen=True)
class IssueHomes:
    """Each source with a token, and its `Home`. A webhook can name any link, and a press acts
    on the issue a link names: only a source's own links, of its own issues, may become
    buttons."""

    homes: tuple[tuple[Source, Home], ...] = ()

    def owns(self, issue: IssueRef) -> bool:
        found = next((pair for pair in self.homes if pair[0].holds(issue.id)), None)
        if found is None:
            return False
        source, home = found
        if issue.origin != home.origin:
            return False
        return not source.org_in_link or (
            issue.org is not None and (home.orgs is None or issue.org in home.orgs)
        )

    def source(self, name: str) -> Source | None:
        """The source of that name, when it has a token."""
        return next((source for source, _ in self.homes if source.name == name), None)

    def of(self, name: str) -> Home | None:
        """The home of the source of that name, when it has a token."""
        return next((home for source, home in self.homes if source.name == name), None)

    def __bool__(self) -> bool:
        return bool(self.homes)

    def described(self) -> str:
        """Its origins, for a log line."""
        return " and ".join(home.origin for _, home in self.homes) or "none"


NO_HOMES = IssueHomes()


def org_of(link: str | None) -> str | None:
    """The organization's slug in an issue's link that names one: <domain>/<org>/issues/<id>."""
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


def alerted_in(data: Mapping[str, Any], sources: Sources) -> list[Alerted]:
    """The issues of a job's alert (none for another shape of alert, or a job's data that
    keeps none it can read)."""
    try:
        alert = sources.alert_kept_in(data)
    except Unreadable:
        return []
    if not isinstance(alert, IssueAlert):
        return []
    details = json_object(data.get("details"))
    source = sources.named(alert.source)
    found = []
    for issue in alert.issues:
        ref = issue_ref(issue.link, issue.short_id, issue.title, source=source)
        if ref is None or issue.link is None:
            continue
        known = details_from_json(details[ref.id]) if ref.id in details else None
        level = (known.level if known is not None else None) or issue.level
        found.append(Alerted(ref, issue.link, level or issue.shade))
    return found
