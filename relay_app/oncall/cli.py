"""`relay-app oncall [--routes FILE] [--at TIME]`: each on-call rotation of the routes file
(RELAY_ROUTES), who is on call now (or at TIME), until the next handoff, and who is next.
Exit codes as the other commands: 0 done, 1 a file that cannot be used, 2 wrong usage."""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from zoneinfo import ZoneInfo

from ..operating.console import CommandLine, Console, Failed, Usage, print_table
from ..operating.env_values import ConfigError, time_zone
from ..operating.routes_cli import duration
from ..routes import RoutesError, read_routes


def add_oncall_command(line: CommandLine) -> None:
    oncall = line.commands.add_parser(
        "oncall", help="who is on call in each rotation, and until when"
    )
    oncall.add_argument("--routes", metavar="FILE", help="the routes file (default: RELAY_ROUTES)")
    oncall.add_argument(
        "--at",
        metavar="TIME",
        help="another moment: 2026-12-24T23:00 (UTC unless it names its offset, +03:00)",
    )
    oncall.set_defaults(run=_oncall)


def _oncall(args: argparse.Namespace, console: Console) -> int:
    path = args.routes or console.environ.get("RELAY_ROUTES", "").strip()
    if not path:
        raise Usage("name the routes file with --routes, or set RELAY_ROUTES")
    try:
        table = read_routes(path)
        zone = ZoneInfo(time_zone(console.environ, "RELAY_TIMEZONE"))
    except (RoutesError, ConfigError) as exc:
        raise Failed(str(exc)) from None
    at = _moment(args.at)
    if not table.rotations:
        print(f"{table.source}: no [[rotation]]; oncall:NAME names one", file=console.out)
        return 0
    rows: list[tuple[str, ...]] = [("ROTATION", "ON CALL", "UNTIL", "THEN", "EVERY")]
    for rotation in table.rotations:
        duty = rotation.on_duty(at, zone)
        rows.append(
            (
                rotation.name,
                duty.person,
                f"{duty.until:%Y-%m-%d %H:%M} {duty.until.tzname()}",
                duty.next_person,
                duration(rotation.every.total_seconds()),
            )
        )
    print_table(rows, console.out)
    return 0


def _moment(raw: str | None) -> float:
    if raw is None:
        return time.time()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise Usage(f"--at {raw!r} is not a time like 2026-12-24T23:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo("UTC"))
    return moment.timestamp()
