"""`relay-app routes check|test`: the routes file (RELAY_ROUTES, routes/) before it is in
service.
- `check [FILE]`: is the file one the relay would start with? Every route, or the problem with
  its file, line or key, and the fix.
- `test FILE.json [--routes FILE] [--at TIME]`: for each issue (or uptime monitor) of a saved
  GlitchTip webhook, the route that takes it, the chat and topic it would go to, who it calls
  then (the person behind each `oncall:NAME`, covers applied), whether it rings, and its
  escalation steps with their times and people. Now, or at TIME. Sends nothing.
Exit codes as the other commands: 0 done, 1 a file that cannot be used, 2 wrong usage.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ..core.alerts import Alert, IssueAlert, UptimeAlert
from ..core.errors import Unreadable
from ..core.json_body import PayloadError, payload_from_json
from ..core.routing import Destination
from ..routes import Route, RoutesError, RouteTable, read_routes, split
from ..routes.rotation import ONCALL, Roster
from ..routes.sound import Sound, levels_of
from ..routes.split import Part
from ..routes.steps import AT_DELIVERY, Step
from ..routes.summary_time import WEEKDAYS
from ..routes.table import Matcher
from .config import ConfigError, Settings
from .console import Console, Failed, Usage
from .env_values import time_zone
from .readers import read_payload

# Who is on duty for a routes file, with the covers the spool keeps when the environment names
# one (registered by the on-call capability: capabilities.py); the rotations alone otherwise.
RosterOf = Callable[[Mapping[str, str], RouteTable], Roster]


def rotations_only(environ: Mapping[str, str], table: RouteTable) -> Roster:
    return Roster(table.rotations, ZoneInfo(_zone_name(environ)))


def add_routes_commands(commands: Any, roster_of: RosterOf = rotations_only) -> None:
    routes = commands.add_parser("routes", help="check the routes file, or test it on a webhook")
    actions = routes.add_subparsers(required=True, metavar="ACTION")
    check = actions.add_parser("check", help="check the routes file (default: RELAY_ROUTES)")
    check.add_argument("file", nargs="?", metavar="FILE", help="the routes file")
    check.set_defaults(run=_check)
    test = actions.add_parser(
        "test", help="say where each issue of a saved webhook would go; sends nothing"
    )
    test.add_argument(
        "payload",
        metavar="FILE.json",
        help="a webhook's body: GlitchTip's, or a source's the relay takes (Sentry's)",
    )
    test.add_argument("--routes", metavar="FILE", help="the routes file (default: RELAY_ROUTES)")
    test.add_argument(
        "--at",
        metavar="TIME",
        help="another moment: 2026-12-24T23:00 (RELAY_TIMEZONE's, unless it names its offset)",
    )
    test.set_defaults(run=lambda args, console: _test(args, console, roster_of))


def _table(named: str | None, console: Console) -> RouteTable:
    path = named or console.environ.get("RELAY_ROUTES", "").strip()
    if not path:
        raise Usage("name the routes file, or set RELAY_ROUTES")
    try:
        return read_routes(path, console.route_sources)
    except RoutesError as exc:
        raise Failed(str(exc)) from None


def _check(args: argparse.Namespace, console: Console) -> int:
    table = _table(args.file, console)
    for rotation in table.rotations:
        said = "; each handoff said where the routes naming it send" if rotation.announce else ""
        print(
            f"rotation “{rotation.name}”: {', '.join(rotation.people)} in turn, "
            f"{duration(rotation.every.total_seconds())} each from {rotation.start:%Y-%m-%d %H:%M}"
            f" ({rotation.timezone or 'RELAY_TIMEZONE'}){said}; relay-app oncall says who is on"
            " now",
            file=console.out,
        )
    for route in table.routes:
        print(f"route {route.number} “{route.name}”: {_describe(route)}", file=console.out)
    count = len(table.routes)
    routes = f"{count} route" + ("" if count == 1 else "s")
    print(f"{table.source}: {routes}, first match wins", file=console.out)
    return 0


def _test(args: argparse.Namespace, console: Console, roster_of: RosterOf) -> int:
    table = _table(args.routes, console)
    out = console.out
    try:
        found = read_payload(_payload(args.payload), args.readers, console.environ, args.sources)
    except Unreadable as exc:
        raise Failed(f"{args.payload}: the alert cannot be read: {exc}") from None
    if found.alert is None:
        print(f"a webhook of {found.source}'s that sends no message: {found.said}", file=out)
        print("nothing was sent", file=out)
        return 0
    alert = found.alert
    default = _default(console)
    zone = ZoneInfo(_zone_name(console.environ))
    at = moment_of(args.at, zone)
    roster = roster_of(console.environ, table)
    routed = split(alert, table, default, default)
    print(f"at {_shown(at, zone)}:", file=out)
    for part in routed.parts:
        route = "no route (where the webhook URL says: the defaults here)"
        if part.route is not None:
            route = f"route {part.route.number} “{part.route.name}”"
        print(f"{part.destination.describe()}: {route}", file=out)
        for title in _titles(part.alert):
            print(f"  {title}", file=out)
        if part.route is not None:
            for line in _what_it_does(part, roster, at, zone):
                print(f"  {line}", file=out)
    for dropped in routed.dropped:
        print(f"dropped: route {dropped.route.number} “{dropped.route.name}”", file=out)
        for title in dropped.titles:
            print(f"  {title}", file=out)
    print("nothing was sent", file=out)
    return 0


def _what_it_does(part: Part, roster: Roster, at: float, zone: ZoneInfo) -> list[str]:
    """Who the part's route calls at `at`, whether its message rings, and its steps."""
    route = part.route
    assert route is not None
    lines = []
    if route.mention:
        lines.append(f"calls {_people(route.mention, roster, at)}")
    levels = levels_of(_shades(part.alert))
    rings = route.sound.rings(at, levels, zone)
    lines.append("rings" if rings else f"without sound ({', '.join(_sound(route.sound))})")
    if route.topics:
        lines.append(
            f"each issue in a forum topic of its own (made by its first card sent alone; a "
            f"digest, or where Telegram refuses topics: {part.destination.describe()})"
        )
    if route.board:
        lines.append(f"listed on the board pinned in {part.destination.describe()}")
    for step in route.escalate:
        when = at + step.after
        privately = ", privately too" if step.direct else ""
        if step.after == 0:
            lines.append(f"at once, privately: {_people(step.people, roster, when)}")
            continue
        lines.append(
            f"after {duration(step.after)} ({_shown(when, zone)}) if nobody acts: "
            f"{_people(step.people, roster, when)}{privately}"
        )
    return lines


def _people(mentions: Sequence[str], roster: Roster, at: float) -> str:
    """'@anna_ops (oncall:payments), @vera_lead': each `oncall:NAME` made its person then."""
    shown = []
    for mention in mentions:
        name = mention.removeprefix(ONCALL)
        rotation = roster.rotations.get(name) if mention.startswith(ONCALL) else None
        if rotation is None:
            shown.append(mention)
            continue
        duty = roster.on_duty(rotation, at)
        covering = f", covering {duty.covering}" if duty.covering else ""
        shown.append(f"{duty.person} ({mention}{covering})")
    return ", ".join(shown)


def _shades(alert: Alert) -> list[tuple[str | None, str]]:
    if not isinstance(alert, IssueAlert):
        return [(None, "error")]  # a monitor's alert is its own: it rings as an error's
    return [(None, issue.shade) for issue in alert.issues]


def _zone_name(environ: Mapping[str, str]) -> str:
    try:
        return time_zone(environ, "RELAY_TIMEZONE")
    except ConfigError as exc:
        raise Usage(str(exc)) from None


def moment_of(raw: str | None, zone: ZoneInfo) -> float:
    """An `--at TIME` (`2026-12-24T23:00`, on `zone`'s wall clock unless it names its
    offset) as a Unix time; now without one. Raises Usage."""
    if raw is None:
        return time.time()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise Usage(f"--at {raw!r} is not a time like 2026-12-24T23:00") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).timestamp()


def _shown(at: float, zone: ZoneInfo) -> str:
    moment = datetime.fromtimestamp(at, zone)
    return f"{moment:%Y-%m-%d %H:%M} {moment.tzname()}"


def _payload(path: str) -> dict[str, Any]:
    try:
        return payload_from_json(Path(path).read_bytes())
    except OSError as exc:
        raise Failed(f"{path}: {exc.strerror or exc}") from None
    except PayloadError as exc:
        raise Failed(f"{path}: {exc}") from None


def _default(console: Console) -> Destination:
    try:
        return Settings.destination_from_env(console.environ)
    except ConfigError:
        raise Usage(
            "set TELEGRAM_CHAT_ID (and TELEGRAM_THREAD_ID): where an issue no route takes goes"
        ) from None


def _titles(alert: Alert) -> list[str]:
    if isinstance(alert, IssueAlert):
        shown = [f"{i.short_id or '?'} {i.title}" for i in alert.issues]
        unlisted = alert.total - len(alert.issues)
        return shown + ([f"…and {unlisted} more GlitchTip counted"] if unlisted else [])
    if isinstance(alert, UptimeAlert):
        return [f"monitor {m.name}: {m.state}" for m in alert.monitors]
    return ["(a payload the relay does not know)"]


def _describe(route: Route) -> str:
    matchers = " and ".join(_said(matcher) for matcher in route.matchers) or "every alert"
    if route.drop:
        return f"{matchers}: dropped"
    where = _place(route)
    if route.mention:
        where.append(f"calling {', '.join(route.mention)}")
    where += _sound(route.sound)
    where += [_step(step) for step in route.escalate]
    if route.take_for is not None:
        where.append(f"a taker called again after {duration(route.take_for)}")
    return f"{matchers}: {', '.join(where + _kept_there(route))}"


def _kept_there(route: Route) -> list[str]:
    """What the route keeps where it sends: a daily summary, a topic per issue, a board."""
    kept = []
    if route.summary is not None:
        zone = route.summary.timezone or "RELAY_TIMEZONE"
        weekly = route.summary.report_on
        report = f", with the week's report on {WEEKDAYS[weekly]}s" if weekly is not None else ""
        kept.append(f"a daily summary at {route.summary.at:%H:%M} ({zone}){report}")
    if route.topics:
        kept.append("a forum topic per issue")
    if route.board:
        kept.append("a pinned board of its open issues")
    return kept


def _step(step: Step) -> str:
    if step.after == AT_DELIVERY:
        return f"privately {', '.join(step.people)} as it is delivered"
    privately = " (privately too)" if step.direct else ""
    return f"then {', '.join(step.people)} after {duration(step.after)} if nobody acts{privately}"


def _place(route: Route) -> list[str]:
    """The chat and topic a route names; what it leaves out is the webhook URL's."""
    if route.thread is None:
        return [] if route.chat is None else [f"chat {route.chat}"]
    if route.chat is None:
        return [f"topic {route.thread} of TELEGRAM_CHAT_ID"]
    return [f"chat {route.chat}", f"topic {route.thread}"]


def _sound(sound: Sound) -> list[str]:
    if sound.silent:
        return ["without sound"]
    if sound.quiet_hours is None:
        return []
    zone = sound.timezone or "RELAY_TIMEZONE"
    loud = f" but {', '.join(sound.loud_levels)}" if sound.loud_levels else ""
    return [f"without sound {sound.quiet_hours} ({zone}){loud}"]


def duration(seconds: float) -> str:
    """'10m', '1h', '1w': a route's or a rotation's time, as its file may write it."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _said(matcher: Matcher) -> str:
    verbs = {
        "title": ("contains", "does not contain"),
        "title_prefix": ("starts with", "does not start with"),
    }
    verb = verbs.get(matcher.key, ("is", "is not"))[matcher.negated]
    key = "title" if matcher.key == "title_prefix" else matcher.key
    return f"{key} {verb} {' or '.join(repr(value) for value in matcher.values)}"
