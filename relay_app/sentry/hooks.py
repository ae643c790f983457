"""A Sentry webhook, once its signature holds, read into what the relay does with it
(`read_hook`): an alert to take in (core/alerts.py), Sentry's; issues' states to bring their
cards in step with; or something only noted in the log.

`Sentry-Hook-Resource` and the body's `action` say what it is:
- `event_alert.triggered`: an issue alert rule fired (the integration is the rule's action);
- `metric_alert.critical|warning|resolved`: a metric alert and its recovery;
- `issue.created`: an alert only where a route asks for `kind = "created"`;
  `issue.resolved|unresolved|ignored|archived`: the issue's new state;
  `issue.assigned`: noted;
- `installation.*` and anything else: noted.

Payloads as Sentry's documentation and source give them (tests/sentry_samples/). An issue's link
is written as `<SENTRY_URL>/organizations/<org>/issues/<id>/` whatever form Sentry sent it in
(sentry.io sends `https://<org>.sentry.io/issues/<id>/`): one form, which message/subjects.py
reads as Sentry's, and the origin of SENTRY_URL, which buttons require. Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..core.alerts import (
    OWN_LEVELS,
    Alert,
    Field,
    Issue,
    IssueAlert,
    IssueKind,
    MonitorChange,
    MonitorState,
    UptimeAlert,
    shade_of_level,
)
from ..core.issue_details import details_as_json
from ..core.json_values import json_object
from .details import details_of
from .source import SENTRY

SOURCE = "sentry"
_SLUG = r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}"
# Where a Sentry URL names the organization: its web pages, its API's, and sentry.io's own
# subdomain for each organization.
_ORG_IN_PATH = re.compile(rf"/(?:api/0/)?(?:organizations|projects)/({_SLUG})/")
_SENTRY_IO_ORG = re.compile(rf"^({_SLUG})\.sentry\.io$")
# sentry.io's hosts that are not an organization's.
_SENTRY_IO_HOSTS = frozenset({"www", "us", "de", "api", "o1"})
_PROJECT_IN_PATH = re.compile(rf"/api/0/projects/{_SLUG}/({_SLUG})/")
# Sentry's words for an issue's states; `archived` is its newer name for ignored.
_STATES = {
    "resolved": "resolved",
    "unresolved": "unresolved",
    "ignored": "ignored",
    "archived": "ignored",
}
# A metric alert's actions: its outage (critical), its recovery (resolved), a warning.
_METRIC_ACTIONS = ("critical", "warning", "resolved")
# Each as the state of a monitor it reads as.
_METRIC_STATES: dict[str, MonitorState] = {
    "critical": "down",
    "warning": "warning",
    "resolved": "up",
}


@dataclass(frozen=True)
class Alerting:
    """An alert to take in; `details`: its issue's, by the relay's id of it, as a job keeps
    them."""

    alert: Alert
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What tells a copy of it apart from another alert, beside the delivery's Request-ID
    # (Sentry's retry of a delivery builds a new one): an issue alert's event and rule, a metric
    # alert's incident and state, a new issue's id.
    key: str | None = None

    @property
    def created(self) -> bool:
        return isinstance(self.alert, IssueAlert) and self.alert.kind == "created"


@dataclass(frozen=True)
class InStep:
    """Issues whose state changed in Sentry, by the relay's id of each."""

    states: dict[str, str]
    said: str
    # The issue and what befell it: with the body's digest, what tells Sentry's retry of this
    # delivery apart from the next change of the issue (sentry/webhook.py).
    key: str = ""


@dataclass(frozen=True)
class Assigned:
    """An issue assigned in Sentry, to someone (their name) or nobody."""

    issue_id: str
    assignee: str | None
    said: str
    key: str = ""


@dataclass(frozen=True)
class Noted:
    """A webhook the relay has nothing to do with but say so in its log."""

    said: str


Hook = Alerting | InStep | Assigned | Noted


def read_hook(resource: str, body: dict[str, Any], *, sentry_url: str) -> Hook:
    """What the webhook (`resource`: its Sentry-Hook-Resource; `body`: its parsed JSON) asks of
    the relay. Never raises: what it cannot read is noted."""
    action = body.get("action")
    action = action if isinstance(action, str) else ""
    data = json_object(body.get("data"))
    if resource == "event_alert" and action == "triggered":
        return _event_alert(data, sentry_url)
    if resource == "metric_alert" and action in _METRIC_ACTIONS:
        return _metric_alert(action, data)
    if resource == "issue":
        return _issue_hook(action, json_object(data.get("issue")), sentry_url)
    if resource == "installation":
        installation = json_object(data.get("installation")) or json_object(
            body.get("installation")
        )
        return Noted(f"the integration's installation {_said(installation.get('uuid'))} {action}")
    return Noted(f"a {_said(resource)} webhook ({_said(action)}) the relay does not act on")


def _event_alert(data: dict[str, Any], sentry_url: str) -> Hook:
    event = json_object(data.get("event"))
    rule = _text(data.get("triggered_rule")) or _text(
        json_object(data.get("issue_alert")).get("title")
    )
    issue_id = _digits(event.get("issue_id"))
    urls = (event.get("web_url"), event.get("issue_url"), event.get("url"))
    org = _org_of(*urls)
    if not event or issue_id is None:
        return Noted("an event alert without an event or its issue's id")
    level = _level(event.get("level"))
    title = _text(event.get("title")) or _text(event.get("message")) or "(no title)"
    link = _issue_link(sentry_url, org, issue_id) or _text(event.get("web_url"))
    alert = _alert(
        rule,
        title=title,
        link=link,
        culprit=_text(event.get("culprit")) or _text(event.get("location")),
        level=level,
        fields=_event_fields(event),
        short_id=None,
    )
    details = details_of(event, {"level": level})
    event_id = _text(event.get("event_id"))[:64]
    return Alerting(
        alert,
        {SENTRY.relay_id(issue_id): details_as_json(details)},
        key=f"event:{event_id}:{rule[:200]}" if event_id else None,
    )


def _event_fields(event: dict[str, Any]) -> tuple[Field, ...]:
    """What the routes read of an event: its project (the slug in its API URL), environment,
    server and release (its own, or its tags')."""
    tags = _tags(event.get("tags"))
    return _fields(
        project=_project_of(event.get("url")) or _text(event.get("project")),
        environment=_text(event.get("environment")) or tags.get("environment"),
        server=tags.get("server_name"),
        release=_text(event.get("release")) or tags.get("release"),
    )


def _metric_alert(action: str, data: dict[str, Any]) -> Hook:
    """A metric alert, one thread an incident: its warning or critical begins it, as an uptime
    monitor's outage does (a critical after the warning goes under the warning's message), and
    its resolution goes under the first, saying how long it lasted (its link, the incident's,
    tells incidents apart)."""
    return _metric_change(action, data)


def _metric_change(action: str, data: dict[str, Any]) -> Alerting:
    incident = json_object(data.get("metric_alert"))
    rule = json_object(incident.get("alert_rule"))
    name = _text(rule.get("name")) or _text(data.get("description_title")) or "(metric alert)"
    change = MonitorChange(
        name=name,
        link=_text(data.get("web_url")) or None,
        sentence=_text(data.get("description_text")).replace("\\n", "\n"),
        state=_METRIC_STATES.get(action, "up"),
    )
    return Alerting(UptimeAlert(name, (change,), 1, SOURCE), key=_incident_key(incident, action))


def _incident_key(incident: dict[str, Any], action: str) -> str | None:
    """A metric alert's incident and state: Sentry's retry of it builds another Request-ID."""
    incident_id = _digits(incident.get("id"))
    return f"metric:{incident_id}:{action}" if incident_id else None


def _issue_hook(action: str, issue: dict[str, Any], sentry_url: str) -> Hook:
    issue_id = _digits(issue.get("id"))
    label = _text(issue.get("shortId")) or (f"#{issue_id}" if issue_id else "an issue")
    if issue_id is None:
        return Noted(f"an issue webhook ({_said(action)}) that names no issue")
    if action in _STATES:
        return InStep(
            {SENTRY.relay_id(issue_id): _STATES[action]},
            f"issue {label} was {action} in Sentry",
            key=f"issue:{issue_id}:{action}",
        )
    if action == "assigned":
        return _assigned(issue, issue_id, label)
    if action != "created":
        return Noted(f"an issue webhook ({_said(action)}) the relay does not act on")
    return _created(issue, issue_id, sentry_url)


def _assigned(issue: dict[str, Any], issue_id: str, label: str) -> Assigned:
    """Whom Sentry assigned the issue to (a user's name or e-mail, a team's name), or nobody."""
    assignee = json_object(issue.get("assignedTo"))
    who = (_text(assignee.get("name")) or _text(assignee.get("email")))[:100] or None
    return Assigned(
        SENTRY.relay_id(issue_id),
        who,
        f"issue {label} was assigned to {who or 'nobody'} in Sentry",
        key=f"issue:{issue_id}:assigned",
    )


def _created(issue: dict[str, Any], issue_id: str, sentry_url: str) -> Alerting:
    """A new issue, as an alert (which only a route asking for it takes)."""
    project = json_object(issue.get("project"))
    org = _org_of(issue.get("web_url"), issue.get("url"), issue.get("project_url"))
    level = _level(issue.get("level"))
    metadata = json_object(issue.get("metadata"))
    alert = _alert(
        "",
        title=_text(issue.get("title")) or _text(metadata.get("value")) or "(no title)",
        link=_issue_link(sentry_url, org, issue_id) or _text(issue.get("web_url")),
        culprit=_text(issue.get("culprit")),
        level=level,
        fields=_fields(
            project=_text(project.get("slug")) or _text(project.get("name")),
            environment=None,
            server=None,
            release=None,
        ),
        short_id=_text(issue.get("shortId")),
        kind="created",
    )
    details = details_of(None, issue)
    return Alerting(
        alert,
        {SENTRY.relay_id(issue_id): details_as_json(details)},
        key=f"issue:{issue_id}:created",
    )


def _alert(
    heading: str,
    *,
    title: str,
    link: str,
    culprit: str | None,
    level: str | None,
    fields: tuple[Field, ...],
    short_id: str | None,
    kind: IssueKind = "issue",
) -> IssueAlert:
    """One issue's alert."""
    issue = Issue(
        title=title,
        link=link or None,
        culprit=culprit or None,
        shade=shade_of_level(level),
        short_id=short_id or None,
        fields=fields,
        level=level,
    )
    return IssueAlert(heading, (issue,), 1, SOURCE, kind)


def _fields(
    *, project: str | None, environment: str | None, server: str | None, release: str | None
) -> tuple[Field, ...]:
    """The facts the routes read, under GlitchTip's names for them."""
    named = (
        ("Project", project),
        ("Environment", environment),
        ("Server Name", server),
        ("Release", release),
    )
    return tuple(Field(name, value) for name, value in named if value)


def _issue_link(sentry_url: str, org: str | None, issue_id: str) -> str | None:
    if org is None:
        return None
    return f"{sentry_url.rstrip('/')}/organizations/{org}/issues/{issue_id}/"


def _org_of(*urls: object) -> str | None:
    """The organization's slug, from the first of Sentry's URLs that names it."""
    for url in urls:
        if not isinstance(url, str):
            continue
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        if found := _ORG_IN_PATH.search(parts.path + "/"):
            return found.group(1)
        host = (parts.hostname or "").lower()
        if (found := _SENTRY_IO_ORG.match(host)) and found.group(1) not in _SENTRY_IO_HOSTS:
            return found.group(1)
    return None


# A customer domain's address of an issue on sentry.io: `https://<org>.sentry.io/issues/<id>/`.
_CUSTOMER_ISSUE = re.compile(r"^/issues/([0-9]{1,20})/?$")


def customer_domain_issue(link: str, sentry_url: str) -> str | None:
    """The issue a link on one of sentry.io's customer domains names, written in the form the
    relay reads Sentry's links in (`<SENTRY_URL>/organizations/<org>/issues/<id>/`); None for
    any other link, or with a SENTRY_URL that is not sentry.io's (a self-hosted Sentry has no
    customer domains). Read strictly: https, no port, no user, no query or fragment."""
    try:
        parts, home = urlsplit(link), urlsplit(sentry_url)
    except ValueError:
        return None
    if not _on_sentry_io(home.hostname) or not _bare_https(link):
        return None
    found = _SENTRY_IO_ORG.match((parts.hostname or "").lower())
    issue = _CUSTOMER_ISSUE.match(parts.path)
    if found is None or issue is None or found.group(1) in _SENTRY_IO_HOSTS:
        return None
    return _issue_link(sentry_url, found.group(1), issue.group(1))


def _on_sentry_io(host: str | None) -> bool:
    """Whether a SENTRY_URL's host is sentry.io's (or one of its regions')."""
    found = (host or "").lower()
    return found == "sentry.io" or found.endswith(".sentry.io")


def _bare_https(link: str) -> bool:
    """https, with no port, user, query or fragment (a port that is no number is one)."""
    parts = urlsplit(link)
    try:
        port = parts.port
    except ValueError:
        return False
    plain = parts.scheme == "https" and port is None and "@" not in parts.netloc
    return plain and not parts.query and not parts.fragment


def _project_of(url: object) -> str | None:
    found = _PROJECT_IN_PATH.search(url) if isinstance(url, str) else None
    return found.group(1) if found else None


def _tags(raw: object) -> dict[str, str]:
    """An event's tags, which Sentry gives as [key, value] pairs (or {key, value} objects)."""
    tags: dict[str, str] = {}
    for tag in raw if isinstance(raw, list) else []:
        if isinstance(tag, list) and len(tag) == 2:
            key, value = tag
        elif isinstance(tag, dict):
            key, value = tag.get("key"), tag.get("value")
        else:
            continue
        if isinstance(key, str) and isinstance(value, str):
            tags.setdefault(key, value)
    return tags


def _level(raw: object) -> str | None:
    return raw if isinstance(raw, str) and raw in OWN_LEVELS else None


def _digits(raw: object) -> str | None:
    text = str(raw) if isinstance(raw, str | int) and not isinstance(raw, bool) else ""
    return text if text.isascii() and text.isdigit() and len(text) <= 20 else None


def _text(raw: object) -> str:
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    return ""


def _said(raw: object) -> str:
    """A stranger's word, short, for a log line."""
    return repr(_text(raw)[:40])
