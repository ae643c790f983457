"""Summaries, as a capability: a route's daily summary (and its weekly report) posted by the
fleet's leader's upkeep, what it counts after each delivery and of each alert a silence held
(it provides the core's `intake.hold.HELD_NOTED`), `relay-app summary` and `relay-app
report`."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from ..cards.calls_made import CALLS_MADE
from ..core.services import Lent
from ..delivery.posted_once import POSTED_ONCE
from ..delivery.render import Writer
from ..intake.hold import HELD_NOTED
from ..message.open_issues import CHAT_ISSUES, STILL_OPEN
from ..operating.capability import Capability, Core, Running
from . import text
from .cli import add_report_command, add_summary_command
from .counters import SUMMARIES
from .daily import PICTURE_FIRST, DailySummaries, Reading
from .names import place_names
from .report import ReportStore
from .report_chart import CHART_WORDS
from .store import SummaryStore
from .weekly_photo import KIND, WeeklyPhotos, write


def _start(core: Core) -> Running:
    """With a spool and a route that says `summary`: the daily summaries."""
    settings, spool = core.settings, core.spool
    places = settings.routes.summaries(settings.default_destination)
    if spool is None or not places:
        return Running()
    photos = WeeklyPhotos(core.outbox, core.words, names=place_names(settings))
    summaries = DailySummaries(
        places,
        spool.of(SummaryStore),
        Reading(
            core.lending.of(CHAT_ISSUES, spool),
            core.sources,
            spool.of(lambda store: ReportStore.lent(store, core.lending)),
            core.lending.of(CALLS_MADE, spool),
        ),
        zone=ZoneInfo(settings.timezone),
        posted=core.metrics.of(SUMMARIES).inc,
        pictured=photos.post,
        picture_first=settings.timing.of(PICTURE_FIRST),
        clock=core.clock,
    )
    core.services.provide(HELD_NOTED, summaries)
    return Running(
        upkeep=(summaries.upkeep,), follow_ups=(summaries.follow_up,), stop=photos.shutdown
    )


CAPABILITY = Capability(
    "summaries",
    counters=(SUMMARIES,),
    shapes=(text.SHAPE,),
    cli=(add_summary_command, add_report_command),
    tables=("summaries",),
    lends=(Lent(POSTED_ONCE, SummaryStore), Lent(STILL_OPEN, ReportStore.lent, borrows=True)),
    writers=(Writer(KIND, write),),
    words=CHART_WORDS,
    start=_start,
)
