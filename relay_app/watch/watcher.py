"""The watcher of GlitchTip (docs/oncall.md): GlitchTip alerts once per issue and rule, so an
unresolved issue that alerted with 3 events and then has 30,000 an hour says nothing more. The
relay knows the issues it alerted on (watch/store.py): every RELAY_WATCH_INTERVAL one process
of the fleet asks GlitchTip about them in batches (their hourly counts, 200 a request; their
states, 100 a request: 15 requests for 1,000 issues), posts each unresolved one that is
escalating (message/trend.py) again, at most once a day, through the routes, silences and
mentions any alert goes through, and brings the cards of those changed outside the chat in
step (cards/in_step.py).

GlitchTip down, slow or refusing the token is said once, when it starts and when it ends; it
costs no alert, and the next round asks again. An answer about one issue that cannot be
GlitchTip's (a NaN, a count of 10^30, a status it has no word for: issue_api/client.py reads every
number and type) spoils that issue alone: the round goes on without it, and it is said once
(a day, for the fleet) while it lasts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.alerts import IssueAlert, alert_as_json
from ..core.errors import SpoolError, TrackerError, Unreadable
from ..core.json_values import json_count
from ..core.metrics import Metrics
from ..core.process import OwnThread
from ..core.rounds import RoundFollower
from ..core.services import Key
from ..core.sources import Sources
from ..core.trackers import STATES_AT_ONCE, STATS_AT_ONCE, IssueState, IssueWatch
from ..delivery.job import Delivery
from ..delivery.render import Note
from ..message.subjects import IssueHomes, issue_ref, org_of
from ..message.trend import Trend, trend
from ..spool.store import Tx
from ..words import Words
from .counters import ESCALATING_POSTS, WATCHER_REQUESTS
from .store import Seen, Watched, WatchStore, watch_in

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Post = Callable[[Watched, Trend], None]
# GlitchTip's states of issues, asked at a time (the clock's): cards made to show them.
Follow = Callable[[Mapping[str, str], float], int]
# How often a process looks whether the fleet's next round is due.
LOOK_EVERY = 1.0


@dataclass(frozen=True)
class Round:
    asked: int  # requests made to GlitchTip
    escalating: int  # issues posted again
    in_step: int = 0  # buttons made to show a status changed outside the chat
    back: int = 0  # issues those who joined the rounds brought back (snoozes whose time came)
    unreadable: int = 0  # issues left out: GlitchTip's answer about them was not readable


@dataclass(frozen=True)
class WatchPlan:
    """What the watcher watches and how often: a round `every` seconds
    (RELAY_WATCH_INTERVAL), looked for every `look_every`; an issue is escalating from
    `min_events` events in its last hour (RELAY_ESCALATING_MIN_EVENTS); `links` says where the
    issue links whose issues are watched are: each source's with a token (GlitchTip's, Sentry's);
    `sources` read the alerts their jobs keep."""

    every: float
    min_events: int
    links: IssueHomes
    sources: Sources
    look_every: float = LOOK_EVERY


@dataclass(frozen=True)
class AfterRound:
    """What a round's findings lead to: `post`, an escalating issue posted again; `follow`,
    the cards brought in step with the states read (cards/in_step.py). Those who `join` the
    rounds (core/rounds.py) are told the states too."""

    post: Post
    follow: Follow | None = None


class Watcher(OwnThread):
    thread_name = "relay-watcher"

    def __init__(
        self,
        store: WatchStore,
        api: IssueWatch,
        plan: WatchPlan,
        after: AfterRound,
        *,
        metrics: Metrics | None = None,
        clock: Clock = time.time,
    ) -> None:
        self._store = store
        self._api = api
        self._post = after.post
        self._every = plan.every
        self._min_events = plan.min_events
        self._links = plan.links
        self._sources = plan.sources
        self._metrics = metrics
        self._follow = after.follow
        # Replaced whole, never changed in place: the round's thread reads it as it is.
        self._followers: tuple[RoundFollower, ...] = ()
        self._clock = clock
        self._look_every = plan.look_every
        self._failing: str | None = None
        # Issues said to be unreadable, while they are: the rounds are the leader's alone, so
        # this process's memory is the fleet's (a new leader says them once again).
        self._unreadable: set[str] = set()
        self.join_for = plan.look_every + 1
        self._start_in_this_process()

    def join(self, follower: RoundFollower) -> None:
        """Rounds (core/rounds.py): `follower`'s issues asked about from the next round."""
        self._followers = (*self._followers, follower)

    def alerted(self, about: Iterable[Mapping[str, Any]], chat: str, thread: int | None) -> None:
        """Alerts just delivered to `chat`: their GlitchTip issues are watched from now."""
        watching = self._watching(about, chat, thread)
        if watching is None:
            return
        try:
            self._store.record(watching, now=self._clock())
        except SpoolError as exc:
            log.warning("issues alerted on could not be kept for the watcher: %s", exc)

    def follow_up(self, delivery: Delivery) -> Callable[[Tx], None] | None:
        """`alerted`, written in a delivery's unit of work (None: no GlitchTip issue)."""
        return self._watching(delivery.about, delivery.sent.chat, delivery.destination.thread)

    def _watching(
        self, about: Iterable[Mapping[str, Any]], chat: str, thread: int | None
    ) -> Callable[[Tx], None] | None:
        issues = [
            found
            for data in about
            for found in _issues_of(data, self._links, self._sources, chat, thread)
        ]
        if not issues:
            return None
        return lambda tx: watch_in(tx, issues)

    def _loop(self) -> None:
        wait = self._look_every
        while not self._stop.wait(wait):
            wait = self._look_every
            try:
                until_due = self._store.take_round(now=self._clock(), every=self._every)
                if until_due is None:
                    self.round()
                else:  # the round's time is kept in the spool: asked again when it comes
                    wait = min(max(until_due, self._look_every), self._every)
            except SpoolError as exc:
                log.debug("the watcher could not read the spool now: %s", exc)
            except Exception:  # the watcher must outlive any one bad round
                log.exception("a round of the watcher failed; the next one tries again")

    def round(self) -> Round:
        """Ask GlitchTip about the watched issues (and those the rounds' followers want) once;
        post those escalating, bring the cards in step, and tell the followers."""
        now = self._clock()
        by_org: dict[str, list[Watched]] = {}
        for issue in self._store.watched(now=now):
            by_org.setdefault(issue.org, []).append(issue)
        wanted = self._wanted()
        done = Round(0, 0)
        for org in [*by_org, *(org for org in wanted if org not in by_org)]:
            issues = by_org.get(org, [])
            ids = list(dict.fromkeys([*(i.issue_id for i in issues), *wanted.get(org, [])]))
            try:
                asked = self._ask(org, ids, issues, now)
            except TrackerError as exc:
                self._failed(done.asked + 1, str(exc))
                return replace(done, asked=done.asked + 1)
            done = self._settle(done, org, asked, now)
        self._answered(done.asked)
        return done

    def _wanted(self) -> dict[str, list[str]]:
        wanted: dict[str, list[str]] = {}
        for follower in self._followers:
            for org, ids in follower.wanted().items():
                wanted.setdefault(org, []).extend(ids)
        return wanted

    def _settle(self, done: Round, org: str, asked: Asked, now: float) -> Round:
        """What one organisation's answers lead to, added to the round's tally."""
        synced = back = 0
        states = asked.states
        if self._follow is not None:
            synced = self._follow({i: state.status for i, state in states.items()}, now)
        for follower in self._followers:
            back += follower.settle(org, states, unreadable=asked.unreadable)
        posted = sum(self._posted(issue, found, now) for issue, found in asked.escalating)
        return Round(
            done.asked + asked.made,
            done.escalating + posted,
            done.in_step + synced,
            done.back + back,
            done.unreadable + len(asked.unreadable),
        )

    def _ask(self, org: str, ids: Sequence[str], issues: Sequence[Watched], now: float) -> Asked:
        """Every issue's state (100 a request), and the watched unresolved issues escalating,
        from their counts (200 a request); an issue GlitchTip's answer says something
        unreadable of is left out of both, and said."""
        asked = Asked()
        for batch in _batches(ids, STATES_AT_ONCE):
            answered = self._api.issue_states(org, batch)
            asked.states.update(answered.found)
            asked.unreadable.update(answered.unreadable)
            asked.made += 1
        counts: dict[str, list[list[int]]] = {}
        for batch in _batches([issue.issue_id for issue in issues], STATS_AT_ONCE):
            hours = self._api.issue_counts(org, batch)
            counts.update(hours.found)
            asked.unreadable.update(hours.unreadable)
            asked.made += 1
        self._say_unreadable(org, asked.unreadable, read=ids)
        for issue_id in asked.unreadable:
            asked.states.pop(issue_id, None)
        readable = [issue for issue in issues if issue.issue_id not in asked.unreadable]
        trends = {i.issue_id: trend(counts.get(i.issue_id, []), now) for i in readable}
        self._keep_seen(asked.states, trends, now)
        asked.escalating = [
            (issue, found)
            for issue in readable
            if (state := asked.states.get(issue.issue_id)) is not None
            and state.status == "unresolved"
            and (found := trends[issue.issue_id]).escalating(self._min_events)
        ]
        return asked

    def _say_unreadable(
        self, org: str, unreadable: Mapping[str, str], *, read: Sequence[str]
    ) -> None:
        """Each issue GlitchTip's answer was unreadable about, said once while it lasts; those
        read well again forgotten."""
        self._unreadable -= {issue for issue in read if issue not in unreadable}
        for issue, why in unreadable.items():
            if issue in self._unreadable:
                continue
            self._unreadable.add(issue)
            log.warning(
                "GlitchTip's answer about issue %s of %s cannot be read (%s): the watcher "
                "leaves it out (no escalating post, no card in step, no snooze brought back) "
                "until it can, and reads the other issues as usual",
                issue,
                org,
                why,
            )

    def _keep_seen(
        self, states: Mapping[str, IssueState], trends: Mapping[str, Trend], now: float
    ) -> None:
        """What this round read, kept for the chat's overviews (the summary, /issues)."""
        seen = {
            issue: Seen(state.status, state.events, trends[issue].counts)
            for issue, state in states.items()
            if issue in trends
        }
        try:
            self._store.seen(seen, now=now)
        except SpoolError as exc:
            log.debug("what the watcher read could not be kept now: %s", exc)

    def _posted(self, issue: Watched, found: Trend, now: float) -> int:
        if not self._store.escalated(issue.issue_id, now=now):
            return 0  # posted within the day, by this relay or another
        log.info(
            "issue %s is escalating: %d events in the last hour (%.1f an hour before): posted "
            "again",
            issue.issue_id,
            found.last_hour,
            found.average_before,
        )
        self._post(issue, found)
        if self._metrics is not None:
            self._metrics.of(ESCALATING_POSTS).inc()
        return 1

    def _failed(self, asked: int, said: str) -> None:
        self._count("failed", asked)
        if self._failing is None:
            log.warning(
                "the watcher cannot ask GlitchTip about the issues it alerted on (%s): "
                "escalating issues are not posted again until it can; no alert is lost",
                said,
            )
        self._failing = said

    def _answered(self, asked: int) -> None:
        self._count("answered", asked)
        if self._failing is not None:
            log.warning("the watcher reaches GlitchTip again (it had: %s)", self._failing)
        self._failing = None

    def _count(self, outcome: str, requests: int) -> None:
        if self._metrics is not None and requests:
            self._metrics.of(WATCHER_REQUESTS).labels(outcome).inc(requests)


@dataclass
class Asked:
    """What one organisation's answers said this round."""

    made: int = 0  # requests
    states: dict[str, IssueState] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # issue id: why
    escalating: list[tuple[Watched, Trend]] = field(default_factory=list)


def _batches(ids: Sequence[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _issues_of(
    data: Mapping[str, Any], links: IssueHomes, sources: Sources, chat: str, thread: int | None
) -> list[Watched]:
    """The issues of an alert's job that a source with a token owns, each alone."""
    if not links:
        return []
    try:
        alert = sources.alert_kept_in(data)
    except Unreadable:
        return []  # its delivery said so already
    if not isinstance(alert, IssueAlert):
        return []
    found = []
    source = links.source(alert.source)
    for issue in alert.issues:
        ref = issue_ref(issue.link, issue.short_id, issue.title, source=source)
        org = org_of(issue.link)
        if ref is not None and links.owns(ref) and org is not None:
            # Posted again as an issue's alert, whatever kind first brought it.
            alone = replace(alert, heading="", issues=(issue,), total=1, kind="issue")
            found.append(Watched(ref.id, org, alert_as_json(alone), chat, thread))
    return found


def escalating_line(about: object, words: Words) -> str | None:
    """The first line of an escalating issue posted again: why it is posted."""
    if not isinstance(about, dict):
        return None
    count = json_count(about.get("count"))
    return words.escalating.format(
        count="?" if count is None else count, spark=str(about.get("spark", ""))
    )


# The watcher's re-post of an escalating issue says why, above the issue's own message.
ESCALATING = Note("escalating", escalating_line)


# This relay's watcher, as the watch capability started it (tests ask it for a round).
WATCHER: Key[Watcher] = Key("watcher")
