"""`relay-app routes check|test`: the routes file (RELAY_ROUTES, routes/) before it is in
service.
- `check [FILE]`: is the file one the relay would start with? Every route, or the problem with
  its file, line or key, and the fix.
- `test FILE.json [--routes FILE]`: for each issue (or uptime monitor) of a saved GlitchTip
  webhook, the route that takes it and the chat, topic and mentions it would go to. Sends
  nothing.
Exit codes as the other commands: 0 done, 1 a file that cannot be used, 2 wrong usage.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.routing import Destination
from ..glitchtip.webhook import (
    IssueAlert,
    PayloadError,
    UptimeAlert,
    parse_alert,
    payload_from_json,
)
from ..routes import Route, RoutesError, RouteTable, read_routes, split
from ..routes.sound import Sound
from ..routes.table import Matcher
from .config import ConfigError, Settings
from .console import Console, Failed, Usage


def add_routes_commands(commands: Any) -> None:
    routes = commands.add_parser("routes", help="check the routes file, or test it on a webhook")
    actions = routes.add_subparsers(required=True, metavar="ACTION")
    check = actions.add_parser("check", help="check the routes file (default: RELAY_ROUTES)")
    check.add_argument("file", nargs="?", metavar="FILE", help="the routes file")
    check.set_defaults(run=_check)
    test = actions.add_parser(
        "test", help="say where each issue of a saved webhook would go; sends nothing"
    )
    test.add_argument("payload", metavar="FILE.json", help="a webhook GlitchTip sent")
    test.add_argument("--routes", metavar="FILE", help="the routes file (default: RELAY_ROUTES)")
    test.set_defaults(run=_test)


def _table(named: str | None, console: Console) -> RouteTable:
    path = named or console.environ.get("RELAY_ROUTES", "").strip()
    if not path:
        raise Usage("name the routes file, or set RELAY_ROUTES")
    try:
        return read_routes(path)
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


def _test(args: argparse.Namespace, console: Console) -> int:
    table = _table(args.routes, console)
    payload = _payload(args.payload)
    default = _default(console)
    routed = split(payload, table, default, default)
    out = console.out
    for part in routed.parts:
        route = "no route (where the webhook URL says: the defaults here)"
        if part.route is not None:
            route = f"route {part.route.number} “{part.route.name}”"
        mentions = f", calling {', '.join(part.mention)}" if part.mention else ""
        print(f"{part.destination.describe()}{mentions}: {route}", file=out)
        for title in _titles(part.payload):
            print(f"  {title}", file=out)
    for dropped in routed.dropped:
        print(f"dropped: route {dropped.route.number} “{dropped.route.name}”", file=out)
        for title in dropped.titles:
            print(f"  {title}", file=out)
    print("nothing was sent", file=out)
    return 0


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


def _titles(payload: dict[str, Any]) -> list[str]:
    alert = parse_alert(payload)
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
    where += [
        f"then {', '.join(step.people)} after {duration(step.after)} if nobody acts"
        for step in route.escalate
    ]
    if route.summary is not None:
        zone = route.summary.timezone or "RELAY_TIMEZONE"
        where.append(f"a daily summary at {route.summary.at:%H:%M} ({zone})")
    return f"{matchers}: {', '.join(where)}"


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
