"""The watcher, as a capability: the issues the relay alerted on asked about each interval by
the fleet's leader, the cards kept in step with what their source says, escalating
issues posted again; the tables of what it watches. It provides its rounds to those who would
join them (ROUNDS: snoozes/ does) and where it finds a watched issue (ISSUE_PLACES)."""

from __future__ import annotations

import logging
import time

from ..cards.in_step import FOLLOWS_ROUNDS
from ..core.errors import Unreadable
from ..core.issue_details import HOURLY
from ..core.rounds import ISSUE_PLACES, ROUNDS
from ..core.routing import Destination, parse_chat_id
from ..core.services import Lent
from ..core.trackers import ISSUE_WATCH
from ..intake.receive import receive
from ..intake.route import TAKE_IN
from ..message.open_issues import CHAT_ISSUES
from ..message.trend import Trend
from ..operating.capability import Capability, Core, Running
from .counters import ESCALATING_POSTS, WATCHER_REQUESTS
from .store import Watched, WatchStore
from .watcher import ESCALATING, WATCHER, AfterRound, Watcher, WatchPlan

log = logging.getLogger(__name__)


def _start(core: Core) -> Running:
    """With a source's token (GlitchTip's, Sentry's) and a spool: the watcher, a chore of the
    fleet's leader; the cards it keeps in step, where a source's capability provides them
    (FOLLOWS_ROUNDS: GlitchTip's)."""
    settings, spool = core.settings, core.spool
    api = core.services.find(ISSUE_WATCH)
    if not settings.acts_on_issues or spool is None or api is None:
        return Running()
    in_step = core.services.find(FOLLOWS_ROUNDS)

    def post(issue: Watched, found: Trend) -> None:
        post_escalating(core, issue, found)

    watcher = Watcher(
        spool.of(WatchStore),
        api,
        WatchPlan(
            settings.watching.every,
            settings.watching.min_events,
            core.homes,
            core.sources,
            look_every=settings.timing.poll_interval,
        ),
        AfterRound(
            post,
            follow=(lambda states, at: in_step.follow(states, asked_at=at)) if in_step else None,
        ),
        metrics=core.metrics,
        clock=core.clock,
    )
    core.services.provide(WATCHER, watcher)
    core.services.provide(ROUNDS, watcher)
    watched = spool.of(WatchStore)
    core.services.provide(ISSUE_PLACES, watched)
    core.services.provide(
        HOURLY, lambda issue_id: watched.hourly_of([issue_id], now=core.clock()).get(issue_id)
    )
    return Running(chores=(watcher,), follow_ups=(watcher.follow_up,), stop=watcher.shutdown)


def post_escalating(core: Core, issue: Watched, found: Trend) -> None:
    """An escalating issue as a webhook of its own: routes, silences and mentions apply."""
    take_in = core.services.find(TAKE_IN)
    if take_in is None:  # the wiring provides it once the routes take webhooks in
        log.error("%s is escalating, but nothing takes alerts in to post it again", issue.issue_id)
        return
    try:
        alert = core.sources.alert_kept_as(issue.alert)
    except Unreadable as exc:
        log.error(
            "%s is escalating, but its alert cannot be read to post it again: %s",
            issue.issue_id,
            exc,
        )
        return
    where = Destination(parse_chat_id(issue.chat) or issue.chat, issue.thread)
    escalating = {"count": found.last_hour, "spark": found.sparkline}
    # Posted again: never said to be new, and its calls are its first message's (oncall/steps.py).
    also = {"escalating": escalating, "again": True}
    take_in.route(receive(alert, where, time.monotonic(), also=also))


CAPABILITY = Capability(
    "watch",
    counters=(WATCHER_REQUESTS, ESCALATING_POSTS),
    notes=(ESCALATING,),
    tables=("watched", "watch_round", "organizations"),
    lends=(Lent(CHAT_ISSUES, WatchStore.lent, borrows=True),),
    start=_start,
)
