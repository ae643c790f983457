"""The sources of alerts, as the core knows them: each one a `Source` value that its own package
declares (the trackers' packages, handed over by the wiring and the registry), so the core
reads an issue's id, its link and its source's name without spelling any source.

The relay's id of an issue is its source's own id behind the source's prefix (`<prefix><id>`):
two sources number their issues alike, and one relay may serve both. One source, the first the
relay had, has no prefix: its ids were kept bare before a second source came, and stay so."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .alerts import Alert, alert_or_body, kept_alert


@dataclass(frozen=True)
class Source:
    # As an alert, a route's `source` and the logs name it.
    name: str
    # As people read it, in the chat's words ('GlitchTip').
    shown: str
    # What the relay's ids of its issues begin with: '' for the one source without, else the
    # source's name and a colon.
    prefix: str
    # An issue's link's path, as the source writes it (searched): its group `number` is the
    # issue's own id.
    issue_path: re.Pattern[str]
    # Whether its issue links name an organization that a button must act in (the segment
    # before `issues/`): its API refuses the issue's id in any other.
    org_in_link: bool = False
    # How it is sent one of Ignore's timed or counted choices, where it brings an ignored issue
    # back by itself as the choice asked (a snooze kept by the source: no watcher of the
    # relay's needs to): the condition ({"until": unix time} or {"events": N}) and the time
    # now in, the details its API takes with the status out. None: it keeps no snooze.
    snoozes_sent_as: Callable[[Mapping[str, float], float], dict[str, int]] | None = None
    # How a body posted to the relay's own webhook URL (/webhook/<secret>) is read, where that
    # URL is this source's (the first source's: GlitchTip's). None: its webhooks come by a page
    # of its capability's own (Sentry's).
    reads_webhook: Callable[[dict[str, Any]], Alert] | None = None
    # How an alert a relay before kept as this source's webhook body is read (the first
    # source's shape was every alert's then: core/alerts.py). None: none was kept so.
    reads_kept_bodies: Callable[[dict[str, Any]], Alert] | None = None
    # Which of its API's fields of a project its webhooks name the project by ('name' or
    # 'slug'): a route's `project` then takes a link's card of an issue as it takes its alerts.
    project_named_by: str = "name"
    # The heading of a link's card of one of its issues, as its webhooks head their alerts; ''
    # for the heading of one issue the chat's words give it (message/formatting.py).
    card_heading: str = ""
    # How it reads a heading its webhooks write in their own words, which the chat then reads
    # in its language: the number of issues the heading counts (0: one that counts none), or
    # None for a heading of other words, shown as it came. None: every heading as it came.
    reads_heading: Callable[[str], int | None] | None = None

    def __post_init__(self) -> None:
        if self.prefix not in ("", f"{self.name}:"):
            raise ValueError(f"the source {self.name}'s prefix must be '' or '{self.name}:'")
        if "number" not in self.issue_path.groupindex:
            raise ValueError(f"the source {self.name}'s issue path names no group 'number'")
        if self.project_named_by not in ("name", "slug"):
            raise ValueError(f"the source {self.name} names a project by 'name' or 'slug'")

    @property
    def keeps_snoozes(self) -> bool:
        """Whether it brings an ignored issue back by itself, as Ignore's choice asked."""
        return self.snoozes_sent_as is not None

    def relay_id(self, own_id: str) -> str:
        """The relay's id of one of its issues."""
        return self.prefix + own_id

    def own_id(self, relay_id: str) -> str:
        """The id its API knows an issue by."""
        return relay_id.removeprefix(self.prefix)

    def holds(self, relay_id: str) -> bool:
        """Whether the relay's id names one of its issues."""
        return relay_id.startswith(self.prefix) if self.prefix else not has_prefix(relay_id)

    def number_in(self, path: str) -> str | None:
        """The issue's own id that a link's path names, as this source writes its links."""
        found = self.issue_path.search(path)
        return found["number"] if found is not None else None


def has_prefix(relay_id: str) -> bool:
    """Whether the relay's id of an issue carries a source's prefix (its own ids are numbers)."""
    return ":" in relay_id


def number_of(relay_id: str) -> str:
    """The issue's own id, whichever source's: how a notice names an issue with no short id."""
    return relay_id.rpartition(":")[2]


class Sources:
    """The relay's sources, the first the one whose ids have no prefix. A source asked for that
    it does not have (a name in an old row, an id of a source since taken out) is None, never
    another source's."""

    def __init__(self, sources: Iterable[Source]) -> None:
        self._all = tuple(sources)
        names = [source.name for source in self._all]
        if len(set(names)) != len(names):
            raise ValueError(f"a source is declared twice among {names}")
        if [source.prefix for source in self._all].count("") > 1:
            raise ValueError("only one source's ids may have no prefix")

    def __iter__(self) -> Iterator[Source]:
        return iter(self._all)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(source.name for source in self._all)

    def named(self, name: str) -> Source | None:
        return next((source for source in self._all if source.name == name), None)

    def of(self, relay_id: str) -> Source | None:
        """The source whose issue the relay's id names."""
        return next((source for source in self._all if source.holds(relay_id)), None)

    def read_posted(self, body: dict[str, Any]) -> Alert:
        """A body posted to the relay's own webhook URL, read as the source whose URL it is."""
        reader = next((s.reads_webhook for s in self._all if s.reads_webhook), None)
        if reader is None:
            raise ValueError("no source reads the webhook URL's bodies")
        return reader(body)

    def alert_kept_in(self, data: Mapping[str, Any]) -> Alert | None:
        """The alert a job's data (or a row's) keeps, as this relay writes it or as one before
        did; None when it keeps none. Raises Unreadable (core/errors.py) when what it keeps
        cannot be read back."""
        return kept_alert(data, self._body_reader)

    def alert_kept_as(self, raw: object) -> Alert:
        """An alert a row keeps (`alert_as_json`'s, or a body a relay before kept instead).
        Raises Unreadable when it cannot be read back."""
        return alert_or_body(raw, self._body_reader)

    @property
    def _body_reader(self) -> Callable[[dict[str, Any]], Alert] | None:
        return next((s.reads_kept_bodies for s in self._all if s.reads_kept_bodies), None)
