"""Charts, as a capability: 📈 on every issue's row of a card and `/chart ISSUE` answer with a
picture of the issue's events (by hour over 24 hours, by day over 7 days) drawn from its
source's stats in a bounded process of its own (drawing.py), sent as a photo that carries the
issue's buttons (writes.py). It owns no table: a chart sent is kept as a card (cards/sent.py)."""

from __future__ import annotations

from ..core.trackers import ISSUE_HISTORY
from ..delivery.render import Writer
from ..operating.capability import Capability, Core, Running
from ..operating.config import Settings
from .asking import CHART, chart_command, chart_press
from .charting import KIND, Charts
from .counters import CHARTS
from .writes import chart_writer, left_behind


def _on(settings: Settings) -> bool:
    return settings.acts_on_issues


def _start(core: Core) -> Running:
    histories = core.services.find(ISSUE_HISTORY)
    if core.spool is None or histories is None:
        return Running()
    counted = core.metrics.of(CHARTS)
    sent = core.sent_store(core.spool)
    charts = Charts(
        histories,
        core.outbox,
        core.words,
        zone_of=core.zone_of,
        count=lambda outcome: counted.labels(outcome).inc(),
        clock=core.clock,
    )
    writer = chart_writer(
        sent,
        theirs=core.buttons,
        snooze_events=core.settings.watching.snooze_events,
        sent_to=charts.sent,
        clock=core.clock,
    )
    return Running(
        presses={CHART.verb: chart_press(charts)},
        commands=(chart_command(charts, sent, core.sources),),
        writers=(Writer(KIND, writer),),
        stop=charts.shutdown,
    )


CAPABILITY = Capability(
    "charts",
    on=_on,
    counters=(CHARTS,),
    buttons=(CHART,),
    writers=(Writer(KIND, left_behind),),
    words={
        "en": {
            "button_chart": "📈",
            "command_chart": "a chart of an issue's events: /chart ALERT-7",
            "chart_caption": "📈 <b>{label}</b> {title}",
            "chart_counts": "Events: {day} in 24 h, {week} in 7 days",
            "chart_seen": "First seen {time}",
            "chart_instead": "Last 24 h: {spark}",
            "chart_hours": "Events per hour, last 24 hours",
            "chart_days": "Events per day, last 7 days",
            "chart_first_seen": "first seen",
            "chart_release": "latest release {release}",
            "chart_coming": "📈 The chart of {label} is on its way",
            "chart_busy": "📈 Charts are being drawn: ask for {label}'s again in a minute",
            "chart_not_now": "📈 Not now: ask again in a few seconds",
            "chart_unavailable": "📈 No chart of {label} now: {source} cannot be asked.",
            "chart_unknown": "No issue {issue} in this chat's cards: /chart takes a short id "
            "(ALERT-7), a number or a link.",
            "chart_usage": "/chart ISSUE: a short id (ALERT-7), the issue's number or its link.",
        },
        "ru": {
            "button_chart": "📈",
            "command_chart": "график событий задачи: /chart ALERT-7",
            "chart_caption": "📈 <b>{label}</b> {title}",
            "chart_counts": "События: {day} за 24 ч, {week} за 7 дней",
            "chart_seen": "Впервые {time}",
            "chart_instead": "Последние 24 ч: {spark}",
            "chart_hours": "События по часам, последние 24 часа",
            "chart_days": "События по дням, последние 7 дней",
            "chart_first_seen": "впервые",
            "chart_release": "последний релиз {release}",
            "chart_coming": "📈 График {label} скоро будет",
            "chart_busy": "📈 Графики рисуются: попросите {label} ещё раз через минуту",
            "chart_not_now": "📈 Не сейчас: попросите ещё раз через несколько секунд",
            "chart_unavailable": "📈 Графика {label} сейчас не будет: {source} не отвечает.",
            "chart_unknown": "Задачи {issue} нет среди карточек этого чата: /chart принимает "
            "короткий id (ALERT-7), номер или ссылку.",
            "chart_usage": "/chart ЗАДАЧА: короткий id (ALERT-7), номер задачи или ссылка.",
        },
    },
    start=_start,
)
