"""The watcher of GlitchTip, as a capability: the issues the relay alerted on asked about each
interval by the fleet's leader, the cards kept in step with what their source says, escalating
issues posted again, and the snoozes brought back (it provides snoozes' SNOOZING, which the
presses ask for); the tables of what it watches."""

from __future__ import annotations

import logging
import time

from ..cards.in_step import CardsInStep
from ..cards.sent import SentStore
from ..cards.verbs import CALLS
from ..core.routing import Destination, parse_chat_id
from ..glitchtip.api import ISSUE_WATCH, GlitchTipApi
from ..glitchtip.details import HOURLY
from ..glitchtip.webhook import source_of
from ..intake.routed import TAKE_IN
from ..message.trend import Trend
from ..operating.capability import Capability, Core, Running
from ..snoozes.snoozing import SNOOZING, BringBack, Snoozing
from ..snoozes.store import SnoozeStore
from ..spool import Spool
from .counters import ESCALATING_POSTS, WATCHER_REQUESTS
from .store import Watched, WatchStore
from .watcher import ESCALATING, WATCHER, AfterRound, Watcher, WatchPlan

log = logging.getLogger(__name__)


def _start(core: Core) -> Running:
    """With a source's token (GlitchTip's, Sentry's) and a spool: the watcher, a chore of the
    fleet's leader; with GlitchTip's, the cards it keeps in step and the snoozes."""
    settings, spool = core.settings, core.spool
    api = core.services.find(ISSUE_WATCH)
    if not settings.acts_on_issues or spool is None or api is None:
        return Running()
    in_step, snoozing = _following_glitchtip(core, spool)
    if snoozing is not None:
        core.services.provide(SNOOZING, snoozing)

    def post(issue: Watched, found: Trend) -> None:
        post_escalating(core, issue, found)

    watcher = Watcher(
        spool.of(WatchStore),
        api,
        WatchPlan(
            settings.watching.every,
            settings.watching.min_events,
            settings.issue_homes,
            look_every=settings.timing.poll_interval,
        ),
        AfterRound(
            post,
            follow=(lambda states, at: in_step.follow(states, asked_at=at)) if in_step else None,
            snoozing=snoozing,
        ),
        metrics=core.metrics,
        clock=core.clock,
    )
    core.services.provide(WATCHER, watcher)
    watched = spool.of(WatchStore)
    core.services.provide(
        HOURLY, lambda issue_id: watched.hourly_of([issue_id], now=core.clock()).get(issue_id)
    )
    return Running(chores=(watcher,), follow_ups=(watcher.follow_up,), stop=watcher.shutdown)


def _following_glitchtip(core: Core, spool: Spool) -> tuple[CardsInStep | None, Snoozing | None]:
    """With GLITCHTIP_API_TOKEN: what the watcher's rounds keep in step with GlitchTip, the
    cards (cards/in_step.py) and the snoozes (snoozes/snoozing.py)."""
    settings, clock = core.settings, core.clock
    token, url, links = (
        settings.glitchtip_api_token,
        settings.glitchtip_url,
        settings.glitchtip_links,
    )
    if token is None or url is None or links is None:
        return None, None
    in_step = CardsInStep(
        spool.of(SentStore),
        core.outbox,
        origin=links,
        escalation=core.services.find(CALLS),
        metrics=core.metrics,
        clock=clock,
    )
    snoozing = Snoozing(
        spool.of(SnoozeStore),
        spool.of(WatchStore),
        BringBack(
            GlitchTipApi(token, url, timeout=settings.send_timeout),
            core.outbox,
            reopened=lambda issue: in_step.follow(
                {issue: "unresolved"}, asked_at=clock(), settle=0
            ),
            zone_of=core.zone_of,
        ),
        events=settings.watching.snooze_events,
        metrics=core.metrics,
        clock=clock,
    )
    return in_step, snoozing


def post_escalating(core: Core, issue: Watched, found: Trend) -> None:
    """An escalating issue as a webhook of its own: routes, silences and mentions apply."""
    take_in = core.services.find(TAKE_IN)
    if take_in is None:  # the wiring provides it once the routes take webhooks in
        log.error("%s is escalating, but nothing takes alerts in to post it again", issue.issue_id)
        return
    # GlitchTip's heading; another source's alert has its own ("Sentry Alert").
    heading = "GlitchTip Alert" if source_of(issue.alert) == "glitchtip" else ""
    payload = {"alias": "GlitchTip", "text": heading, **issue.alert}
    where = Destination(parse_chat_id(issue.chat) or issue.chat, issue.thread)
    escalating = {"count": found.last_hour, "spark": found.sparkline}
    # Posted again: never said to be new, and its calls are its first message's (oncall/steps.py).
    also = {"escalating": escalating, "again": True}
    take_in.take(payload, where, time.monotonic(), also=also)


CAPABILITY = Capability(
    "watch",
    counters=(WATCHER_REQUESTS, ESCALATING_POSTS),
    notes=(ESCALATING,),
    tables=("watched", "watch_round", "organizations"),
    start=_start,
)
