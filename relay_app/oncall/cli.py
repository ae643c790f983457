"""`relay-app oncall [--routes FILE] [--at TIME]`: each on-call rotation of the routes file
(RELAY_ROUTES), who is on call now (or at TIME), with the covers kept in the spool, until the
next change, and who is next; then the covers to come.

`relay-app oncall calendar ROTATION [--days N] [-o FILE.ics]`: the rotation as iCalendar, one
event per shift with its person, the covers applied (oncall/calendar.py), for a calendar app.

`relay-app oncall cover ROTATION PERSON [--from TIME] [--until TIME | --for 2h]`: a cover kept in
the spool for every relay on it (oncall/covers.py); without an end it lasts to the end of the turn
it starts in. `--list` lists the covers in force and to come; `--remove ID` removes one. A time
without an offset is on the rotation's wall clock. A swap is two covers.

Exit codes as the other commands: 0 done, 1 a file or a cover that cannot be used, 2 wrong
usage."""

from __future__ import annotations

import argparse
import getpass
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TextIO
from zoneinfo import ZoneInfo

from ..core.errors import SpoolError
from ..core.typed import moment_of, span_of
from ..operating.cli import open_spool_from_env
from ..operating.console import CommandLine, Console, Failed, OpenSpool, Usage, print_table
from ..operating.env_values import ConfigError, time_zone
from ..operating.routes_cli import duration
from ..operating.routes_cli import moment_of as at_moment
from ..routes import RoutesError, RouteTable, read_routes
from ..routes.rotation import Cover, Roster
from ..spool import Spool
from ..words import ENGLISH
from .calendar import DAYS, MAX_DAYS, calendar_of
from .covers import AskedCover, CoverStore, Refused, checked_cover

Run = Callable[[argparse.Namespace, Console], int]


def add_oncall_command(line: CommandLine) -> None:
    oncall = line.commands.add_parser(
        "oncall", help="who is on call in each rotation, and until when; covers"
    )
    oncall.add_argument("--routes", metavar="FILE", help="the routes file (default: RELAY_ROUTES)")
    oncall.add_argument(
        "--at",
        metavar="TIME",
        help="another moment: 2026-12-24T23:00 (UTC unless it names its offset, +03:00)",
    )
    oncall.set_defaults(run=_oncall(line.open_spool))
    actions = oncall.add_subparsers(metavar="ACTION")
    cover = actions.add_parser(
        "cover", help="someone on duty in a rotation for a while (a swap is two covers)"
    )
    cover.add_argument("rotation", nargs="?", metavar="ROTATION")
    cover.add_argument("person", nargs="?", metavar="PERSON", help="@username or tg:<user id>")
    cover.add_argument("--from", dest="start", metavar="TIME", help="default: now")
    cover.add_argument("--until", metavar="TIME", help="default: the end of that turn")
    cover.add_argument("--for", dest="span", metavar="DURATION", help="instead of --until: 8h")
    cover.add_argument("--by", help="who makes it (default: the login name)")
    cover.add_argument("--list", action="store_true", help="the covers in force and to come")
    cover.add_argument("--remove", type=int, metavar="ID", help="remove a cover")
    cover.set_defaults(run=_cover(line.open_spool))
    calendar = actions.add_parser(
        "calendar", help="a rotation's shifts as iCalendar (.ics), covers applied"
    )
    calendar.add_argument("rotation", metavar="ROTATION")
    calendar.add_argument(
        "--days", type=int, default=DAYS, metavar="N", help=f"how far ahead ({DAYS} days)"
    )
    calendar.add_argument("-o", "--out", metavar="FILE.ics", help="write it there (stdout)")
    calendar.set_defaults(run=_calendar(line.open_spool))


def _roster(
    console: Console,
    routes: str | None,
    spool: Spool | None,
    shown_without: TextIO | None = None,
) -> Roster:
    """The rotations of the routes file, with the spool's covers; `shown_without`: where to
    say the covers could not be read, and go on without them (else it raises)."""
    environ = console.environ
    path = routes or environ.get("RELAY_ROUTES", "").strip()
    if not path:
        raise Usage("name the routes file with --routes, or set RELAY_ROUTES")
    try:
        table = read_routes(path, console.route_sources)
        zone = ZoneInfo(time_zone(environ, "RELAY_TIMEZONE"))
    except (RoutesError, ConfigError) as exc:
        raise Failed(str(exc)) from None
    if spool is None:
        return Roster(table.rotations, zone)
    # Read on this host's clock (the store's may be PostgreSQL's), then kept to those that have
    # not ended by the moment asked about.
    try:
        covers = spool.of(CoverStore).in_force(now=time.time())
    except SpoolError as exc:
        if not shown_without:
            raise
        print(f"(covers not shown: {exc})", file=shown_without)
        covers = []
    return Roster(table.rotations, zone, lambda at: [c for c in covers if c.ends_at > at])


def roster_with_covers(environ: Mapping[str, str], table: RouteTable) -> Roster:
    """The rotations of `table` with the covers the spool the environment names keeps (none
    when it names none or it cannot be read: `relay-app oncall cover --list` says why)."""
    zone = ZoneInfo(time_zone(environ, "RELAY_TIMEZONE"))
    try:
        spool = open_spool_from_env(environ)
    except (Usage, Failed, SpoolError):
        return Roster(table.rotations, zone)
    try:
        covers = spool.of(CoverStore).in_force(now=time.time())
    except SpoolError:
        covers = []
    finally:
        spool.close()
    return Roster(table.rotations, zone, lambda at: [c for c in covers if c.ends_at > at])


def _oncall(open_spool: OpenSpool) -> Run:
    def run(args: argparse.Namespace, console: Console) -> int:
        spool = _spool_if_kept(open_spool, console)
        try:
            roster = _roster(console, args.routes, spool, console.err)
            return _said(roster, at_moment(args.at, ZoneInfo("UTC")), console)
        finally:
            if spool is not None:
                spool.close()

    return run


def _calendar(open_spool: OpenSpool) -> Run:
    def run(args: argparse.Namespace, console: Console) -> int:
        if not 1 <= args.days <= MAX_DAYS:
            raise Usage(f"--days must be from 1 to {MAX_DAYS}")
        spool = _spool_if_kept(open_spool, console)
        try:
            roster = _roster(console, args.routes, spool, console.err)
        finally:
            if spool is not None:
                spool.close()
        if args.rotation not in roster.rotations:
            names = ", ".join(roster.rotations) or "none"
            raise Failed(f"no rotation {args.rotation!r} in the routes file ({names})")
        written = calendar_of(roster, args.rotation, now=time.time(), days=args.days)
        if args.out is None:
            console.out.write(written.decode("utf-8"))
            return 0
        try:
            with open(args.out, "wb") as out:
                out.write(written)
        except OSError as exc:
            raise Failed(f"{args.out}: {exc.strerror or exc}") from None
        print(f"{args.out}: {args.rotation}, the next {args.days} days", file=console.out)
        return 0

    return run


def _spool_if_kept(open_spool: OpenSpool, console: Console) -> Spool | None:
    """The spool, for its covers; None (said) when the environment names none."""
    try:
        return open_spool(console.environ)
    except (Usage, Failed, SpoolError) as exc:
        print(f"(covers not shown: {exc})", file=console.err)
        return None


def _said(roster: Roster, at: float, console: Console) -> int:
    if not roster:
        print("the routes file has no [[rotation]]; oncall:NAME names one", file=console.out)
        return 0
    rows: list[tuple[str, ...]] = [("ROTATION", "ON CALL", "UNTIL", "THEN", "EVERY")]
    for rotation in roster.rotations.values():
        duty = roster.on_duty(rotation, at)
        covering = f" (covering {duty.covering})" if duty.covering else ""
        rows.append(
            (
                rotation.name,
                duty.person + covering,
                f"{duty.until:%Y-%m-%d %H:%M} {duty.until.tzname()}",
                duty.next_person,
                duration(rotation.every.total_seconds()),
            )
        )
    print_table(rows, console.out)
    coming = [cover for cover in roster.covers(at) if cover.starts_at > at]
    if coming:
        print("\nCovers to come:", file=console.out)
        print_table(_cover_rows(coming, roster), console.out)
    return 0


def _cover(open_spool: OpenSpool) -> Run:
    def run(args: argparse.Namespace, console: Console) -> int:
        spool = open_spool(console.environ)
        try:
            roster = _roster(console, None, spool)
            store = spool.of(CoverStore)
            if args.list:
                covers = roster.covers(time.time())
                if not covers:
                    print("no cover in force or to come", file=console.out)
                else:
                    print_table(_cover_rows(covers, roster), console.out)
                return 0
            if args.remove is not None:
                return _removed(store, args.remove, console)
            return _made(store, roster, args, console)
        finally:
            spool.close()

    return run


def _made(store: CoverStore, roster: Roster, args: argparse.Namespace, console: Console) -> int:
    if not args.rotation or not args.person:
        raise Usage("name the rotation and the person: oncall cover payments @boris_ops")
    now = time.time()
    rotation = roster.rotations.get(args.rotation)
    zone = rotation.zone(roster.zone) if rotation is not None else roster.zone
    starts_at = _time(args.start, "--from", zone, now) if args.start else now
    until = _time(args.until, "--until", zone, now) if args.until else None
    if args.span:
        span = span_of(args.span)
        if span is None:
            raise Usage(f"--for {args.span!r} is not a duration like 8h, 90m, 2d")
        until = starts_at + span
    asked = AskedCover(args.rotation, args.person, starts_at, until, args.by or _login())
    try:
        cover = store.add(checked_cover(asked, roster, now), now=now)
    except Refused as refused:
        raise Failed(refused.said.text(ENGLISH)) from None
    instead = roster.person(cover.rotation, cover.starts_at)
    print(
        f"cover {cover.id}: {cover.person} is on call in {cover.rotation} from "
        f"{_shown(cover.starts_at, roster, cover)} until {_shown(cover.ends_at, roster, cover)}"
        f" (instead of {instead}). Every relay on this spool calls them within seconds.",
        file=console.out,
    )
    return 0


def _removed(store: CoverStore, cover_id: int, console: Console) -> int:
    removed = store.remove(cover_id, now=time.time())
    if removed is None:
        raise Failed(f"no cover {cover_id} (relay-app oncall cover --list shows them)")
    print(f"cover {removed.id} removed: {removed.person} in {removed.rotation}", file=console.out)
    return 0


def _cover_rows(covers: list[Cover], roster: Roster) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("ID", "ROTATION", "PERSON", "FROM", "UNTIL", "BY")]
    rows += [
        (
            str(cover.id),
            cover.rotation,
            cover.person,
            _shown(cover.starts_at, roster, cover),
            _shown(cover.ends_at, roster, cover),
            cover.by,
        )
        for cover in covers
    ]
    return rows


def _shown(at: float, roster: Roster, cover: Cover) -> str:
    rotation = roster.rotations.get(cover.rotation)
    zone = rotation.zone(roster.zone) if rotation is not None else roster.zone
    moment = datetime.fromtimestamp(at, zone)
    return f"{moment:%Y-%m-%d %H:%M} {moment.tzname()}"


def _time(raw: str, option: str, zone: ZoneInfo, now: float) -> float:
    found = moment_of(raw, zone, now)
    if found is None:
        raise Usage(f"{option} {raw!r} is not a time like 2026-12-10T18:00, 10.12 18:00 or 18:00")
    return found


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "relay-app"
