"""`relay-app summary [--chat ID] [--send]`: the daily summary of a chat (summaries/daily.py)
as it would be posted now, covering what happened since the last one (or the last day); with
`--send`, queued for the relay to post in the chat's turn (the day's own summary stays due).
`relay-app report [--days 7] [--route NAME] [--chart FILE.png]`: what on call cost
(summaries/report.py), in every chat or where a route sends; with `--chart`, also as a picture
(report_chart.py) in the relay's language, written to FILE.png.
Exit codes as the other commands: 0 done, 1 a spool that cannot be used, 2 wrong usage."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any
from zoneinfo import ZoneInfo

from ..cards.calls_made import CALLS_MADE
from ..core.drawing import draw
from ..core.errors import DrawingFailed, SpoolError
from ..core.routing import Destination, chat_key, parse_chat_id
from ..message.open_issues import CHAT_ISSUES
from ..operating.config import ConfigError, Settings
from ..operating.console import CommandLine, Console, Failed, Usage
from ..words import ENGLISH, words_for
from .daily import DailySummaries, Reading
from .names import place_names
from .report import Report, ReportStore
from .report_chart import report_spec, with_chart_words
from .report_text import report_lines
from .store import SummaryStore
from .text import summary_message

# The longest period a report covers.
MAX_REPORT_DAYS = 90


def add_summary_command(line: CommandLine) -> None:
    summary = line.commands.add_parser(
        "summary", help="the daily summary of a chat now (with --send, posted there)"
    )
    summary.add_argument(
        "--chat", metavar="ID", help="the chat (default: TELEGRAM_CHAT_ID, in its topic)"
    )
    summary.add_argument("--send", action="store_true", help="post it to the chat")
    summary.set_defaults(run=lambda args, console: _summary(args, console, line))


def _summary(args: argparse.Namespace, console: Console, line: CommandLine) -> int:
    try:
        settings = console.settings()
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    places = settings.routes.summaries(settings.default_destination)
    destination = _where(args.chat, settings.default_destination, places)
    spool = line.open_spool(console.environ)
    try:
        reading = Reading(
            line.lending.of(CHAT_ISSUES, spool),
            line.sources,
            spool.of(lambda store: ReportStore.lent(store, line.lending)),
            line.lending.of(CALLS_MADE, spool),
        )
        summaries = DailySummaries(
            places, spool.of(SummaryStore), reading, zone=ZoneInfo(settings.timezone)
        )
        now = time.time()
        data = summaries.compose(destination, spool.of(SummaryStore).since(destination, now=now))
        print(summary_message(data["summary"], words_for(settings.language)).text, file=console.out)
        if args.send:
            spool.of(SummaryStore).queue_now(destination, data, now=now)
            print(
                f"queued for {destination.describe()}: the relay posts it in the chat's turn",
                file=console.out,
            )
    except SpoolError as exc:
        raise Failed(f"the spool cannot be used: {exc}") from None
    finally:
        spool.close()
    return 0


def _where(raw: str | None, default: Destination, places: dict[Destination, Any]) -> Destination:
    """The chat named (in the topic its summary goes to, if it has one), or the default."""
    if raw is None:
        return default
    chat = parse_chat_id(raw)
    if chat is None:
        raise Usage(f"--chat {raw!r} is not a chat id (like -1001234567890)")
    for place in places:
        if chat_key(place.chat) == chat_key(chat):
            return place
    return Destination(chat, default.thread if chat_key(chat) == default.chat_key else None)


def add_report_command(line: CommandLine) -> None:
    report = line.commands.add_parser(
        "report", help="what on call cost: alerts, time to take and resolve, calls, who took what"
    )
    report.add_argument("--days", type=int, default=7, metavar="N", help="the last N days (7)")
    report.add_argument("--route", metavar="NAME", help="the place a route sends to (all chats)")
    report.add_argument(
        "--chart", metavar="FILE.png", help="also draw it as a picture, written to FILE.png"
    )
    report.set_defaults(run=lambda args, console: _report(args, console, line))


def _chart(path: str, found: Report, settings: Settings, console: Console) -> None:
    """The report as a picture, in the relay's language, written to `path`."""
    words = with_chart_words(words_for(settings.language))
    spec = report_spec(found, words, ZoneInfo(settings.timezone), place_names(settings))
    try:
        out = open(path, "wb")  # noqa: SIM115 (opened before drawing: a wrong path fails at once)
    except OSError as exc:
        raise Failed(f"the report's picture could not be written to {path}: {exc}") from None
    with out:
        try:
            png = draw(spec)
        except DrawingFailed as exc:
            os.remove(path)  # no empty picture left behind
            raise Failed(f"the report's picture could not be drawn: {exc}") from None
        out.write(png)
    print(f"the picture: {path} ({len(png) // 1024} KB)", file=console.out)


def _place_of(name: str | None, settings: Settings) -> Destination | None:
    """Where the route named `name` sends (None: every chat)."""
    if name is None:
        return None
    route = next((r for r in settings.routes.routes if r.name == name), None)
    if route is None:
        names = ", ".join(r.name for r in settings.routes.routes) or "none"
        raise Usage(f"--route {name!r} names no route of the routes file ({names})")
    return route.place(settings.default_destination)


def _report(args: argparse.Namespace, console: Console, line: CommandLine) -> int:
    if not 1 <= args.days <= MAX_REPORT_DAYS:
        raise Usage(f"--days must be from 1 to {MAX_REPORT_DAYS}")
    try:
        settings = console.settings()
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    place = _place_of(args.route, settings)
    zone = ZoneInfo(settings.timezone)
    spool = line.open_spool(console.environ)
    try:
        now = time.time()
        found = spool.of(lambda store: ReportStore.lent(store, line.lending)).report(
            place,
            start=now - args.days * 86400,
            now=now,
            zone=zone,
            calls=line.lending.of(CALLS_MADE, spool),
        )
    except SpoolError as exc:
        raise Failed(f"the spool cannot be used: {exc}") from None
    finally:
        spool.close()
    where = place.describe() if place is not None else "every chat"
    print(f"{where}, the last {args.days} day(s):", file=console.out)
    for text in report_lines(found, ENGLISH, zone):
        print(text, file=console.out)
    if args.chart is not None:
        _chart(args.chart, found, settings, console)
    if args.days > 7:
        print(
            "(the spool keeps a message's record a week at least, RELAY_RETRY_MAX_AGE if longer:"
            " the start of a longer period may be forgotten)",
            file=console.out,
        )
    return 0
