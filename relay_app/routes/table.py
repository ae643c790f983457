"""The routes file (RELAY_ROUTES): which alerts go where and who is called, as the operator wrote
it in TOML, read with the standard library's tomllib and checked whole before it is used.

A list of `[[route]]` tables, tried in order; the first whose every matcher matches an issue (or
an uptime monitor) takes it. Matchers: `project`, `environment`, `server`, `release`, `level`
(the issue's own level from GlitchTip's API when its details came within their budget:
`fatal`, `error`, `warning`, `info`, `debug`; else read from the attachment's colour, the only
way the webhook gives it: `error` for #e52b50, which GlitchTip sends for error and fatal, `info`
for #4b60b4, `warning` for none, which it sends for warnings and the other levels), `title`
(contains), `title_prefix` (starts with), `issue` (the short id), `monitor` (an uptime
monitor's name), `kind` (`issue` or `uptime`). A value is a string or a list of strings (any of
them); `"!x"` negates (a list of negations: none of them), and never matches an alert that
lacks the fact (`monitor = "!x"` is not every issue). Case does not matter, as in the
silences' matchers. What a route does: `chat` and `thread` (where; a
`thread` alone is a topic of TELEGRAM_CHAT_ID), `mention` (`@username`, or `tg:<user id>` for
people without one), its sound (`silent`, `quiet_hours` with `timezone` and `loud_levels`:
sound.py), `topics = "per_issue"` (in a forum, each issue a topic of its own: rooms/),
`board = true` (a live list of its open issues pinned where it sends: board/), or
`drop = true`; `name` names it in logs and metrics.

A file that does not parse, a key that is not one of these (a typo), a value of the wrong kind, a
chat that is no chat id, a file over MAX_ROUTES_BYTES or MAX_ROUTES: a RoutesError naming the
file, the line and the key (or the cap), and the fix.

A file is parsed once per process for each content it has had: `parse_routes` keeps the last
table it made, and gives it again for the same text. So gunicorn's master, which checks the file
with the other variables and then puts it in force, parses it once, and its workers, forked
after, find the table made (docs/routing.md).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.routing import ChatId, Destination, chat_key, parse_chat_id, parse_thread_id
from ..core.typed import MAX_USER_ID, is_person
from .rotation import ONCALL, Rotation, named_rotations, rotation_of
from .sound import RINGS, Sound, sound_of
from .steps import MAX_AFTER, Step, called_directly, duration_of, steps_of
from .summary_time import SummaryAt, summary_of

MATCHERS = (
    "source",
    "kind",
    "project",
    "environment",
    "server",
    "release",
    "level",
    "title",
    "title_prefix",
    "issue",
    "monitor",
)
ACTIONS = (
    "name",
    "chat",
    "thread",
    "mention",
    "drop",
    "silent",
    "quiet_hours",
    "timezone",
    "loud_levels",
    "escalate",
    "summary",
    "reply_takes",
    "direct",
    "take_for",
    "report",
    "topics",
    "board",
)
# What `topics` may say: `per_issue`, each issue a forum topic of its own (rooms/).
TOPICS = ("per_issue",)
# GlitchTip's levels (its API's); the webhook's colour tells only error, warning and info.
LEVELS = ("fatal", "error", "warning", "info", "debug")
# What an alert is about: an issue alert, an uptime monitor's (up or down), or an issue just
# created (Sentry's `issue.created`, which only a route that names this kind takes).
KINDS = ("issue", "uptime", "created")
# Per issue, the facts a matcher reads; GlitchTip's field names for each.
FIELD_NAMES = {
    "project": "Project",
    "environment": "Environment",
    "server": "Server Name",
    "release": "Release",
}
# People one route may call: the line naming them fits in the room a message keeps for notes.
MAX_MENTIONS = 6
# The file's size and its routes, at most. Every issue of every webhook is tried against the
# routes in order, and every worker holds them: a thousand routes cost an issue that none takes
# about 1.5 ms, and 250 KB of TOML parse in about 0.1 s (docs/routing.md). A file past either
# is refused, before any of it is parsed for the size.
MAX_ROUTES_BYTES = 512 * 1024
MAX_ROUTES = 1000
_ROTATION = re.compile(r"oncall:[A-Za-z0-9_.-]{1,40}")


class RoutesError(ValueError):
    """The routes file cannot be used; the message names the file, the line or key, the fix."""


@dataclass(frozen=True)
class Matcher:
    key: str
    values: tuple[str, ...]  # folded
    negated: bool

    def matches(self, facts: Mapping[str, str | None]) -> bool:
        """Whether the alert's fact is one of the values (`!`: none of them). What lacks the
        fact matches neither: `monitor = "!x"` is every monitor but x, never an issue."""
        fact = facts.get(self.key.removesuffix("_prefix"))
        if not fact:
            return False
        folded = fact.casefold()
        if self.key == "title":
            found = any(value in folded for value in self.values)
        elif self.key == "title_prefix":
            found = folded.startswith(self.values)
        else:
            found = folded in self.values
        return found != self.negated


@dataclass(frozen=True)
class Route:
    number: int  # 1 for the file's first
    name: str
    matchers: tuple[Matcher, ...]
    chat: ChatId | None = None
    thread: int | None = None
    mention: tuple[str, ...] = ()
    drop: bool = False
    sound: Sound = RINGS
    escalate: tuple[Step, ...] = ()
    summary: SummaryAt | None = None  # when its chat gets the daily summary
    # Whether a reply under its alert by someone allowed to act takes its issue (On it).
    reply_takes: bool = True
    # How long an issue of its alerts may be taken, and stay open, before its taker is called
    # again (docs/oncall.md); None: as long as they like.
    take_for: float | None = None
    # In a forum: "per_issue", each issue it alerts on a topic of its own (rooms/).
    topics: str | None = None
    board: bool = False  # a live list of its open issues kept pinned where it sends (board/)

    def matches(self, facts: Mapping[str, str | None]) -> bool:
        if facts.get("kind") == "created" and not self.asks_for_created:
            # Sentry tells of every new issue; an alert for each goes only where it is asked for.
            return False
        return all(matcher.matches(facts) for matcher in self.matchers)

    @property
    def asks_for_created(self) -> bool:
        """Whether it names `kind = "created"`: Sentry's new issues are alerts there."""
        return any(
            m.key == "kind" and not m.negated and "created" in m.values for m in self.matchers
        )

    @property
    def rotations_called(self) -> list[str]:
        """The rotations it calls by `oncall:NAME`, in `mention` or an escalation step."""
        return named_rotations([*self.mention, *(p for step in self.escalate for p in step.people)])

    def place(self, default: Destination) -> Destination:
        """Where the route's alerts go: its chat and topic, else `default`'s (a chat of its own
        without a topic is that chat's main thread)."""
        chat = self.chat if self.chat is not None else default.chat
        thread = (
            self.thread
            if self.thread is not None
            else (default.thread if self.chat is None else None)
        )
        return Destination(chat, thread)


@dataclass(frozen=True)
class RouteTable:
    routes: tuple[Route, ...] = ()
    source: str | None = None  # the file's name, as RELAY_ROUTES gives it
    rotations: tuple[Rotation, ...] = ()

    @property
    def on_call(self) -> dict[str, Rotation]:
        """The rotations by name, as `oncall:NAME` names them."""
        return {rotation.name: rotation for rotation in self.rotations}

    @property
    def reads_levels(self) -> bool:
        """Whether a route matches on `level`: then an alert waits for its issues' details
        (their own level) before it is routed."""
        return any(m.key == "level" for route in self.routes for m in route.matchers)

    def first(self, facts: Mapping[str, str | None]) -> Route | None:
        return next((route for route in self.routes if route.matches(facts)), None)

    @property
    def chats(self) -> tuple[ChatId, ...]:
        """Every chat a route names, once each, in the file's order."""
        seen: dict[str, ChatId] = {}
        for route in self.routes:
            if route.chat is not None:
                seen.setdefault(chat_key(route.chat), route.chat)
        return tuple(seen.values())

    def chats_for(self, known: Mapping[str, str], default: ChatId) -> tuple[ChatId, ...]:
        """The chats an alert may be sent to, knowing only these of its facts (a silence's
        matchers): each route's that does not rule it out, and `default`, where what no route
        takes goes (the webhook's URL may name another chat; a silence cannot know it)."""
        chats = {chat_key(default): default}
        for route in self.routes:
            if route.drop or not all(_may_match(m, known) for m in route.matchers):
                continue
            chat = route.chat if route.chat is not None else default
            chats.setdefault(chat_key(chat), chat)
        return tuple(chats.values())

    def summaries(self, default: Destination) -> dict[Destination, SummaryAt]:
        """Where a daily summary goes, and when: each route's with `summary` (the first that
        names a place), at the place its alerts go (`default`: TELEGRAM_CHAT_ID's)."""
        found: dict[Destination, SummaryAt] = {}
        for route in self.routes:
            if route.summary is not None:
                found.setdefault(route.place(default), route.summary)
        return found

    def rooms(self, default: Destination) -> frozenset[Destination]:
        """The places whose issues each get a forum topic of their own: where a route with
        `topics = "per_issue"` sends."""
        return frozenset(route.place(default) for route in self.routes if route.topics)

    def boards(self, default: Destination) -> tuple[Destination, ...]:
        """Where a board of the open issues is kept: where a route with `board` sends, once
        each, in the file's order."""
        return tuple(dict.fromkeys(r.place(default) for r in self.routes if r.board and not r.drop))

    def handoffs(self, default: Destination) -> dict[Destination, tuple[Rotation, ...]]:
        """Where each handoff of a rotation with `announce` is said: where its callers send."""
        found: dict[Destination, dict[str, Rotation]] = {}
        announced = {r.name: r for r in self.rotations if r.announce}
        for route in self.routes:
            for name in route.rotations_called:
                if name in announced:
                    found.setdefault(route.place(default), {})[name] = announced[name]
        return {place: tuple(rotations.values()) for place, rotations in found.items()}

    def __bool__(self) -> bool:
        return bool(self.routes)


def _may_match(matcher: Matcher, known: Mapping[str, str]) -> bool:
    """Whether an alert with the `known` facts may meet `matcher`: it does not say otherwise
    where it reads a fact that is known; any other fact might be anything."""
    key = matcher.key.removesuffix("_prefix")
    return key not in known or matcher.matches({key: known[key]})


NO_ROUTES = RouteTable()


def read_routes(path: str, sources: tuple[str, ...], *, shown_as: str | None = None) -> RouteTable:
    """The routes in the file at `path` (named `shown_as` in what it says), whose `source` may
    name `sources` (the registry's: `sources_named`). Raises RoutesError."""
    name = shown_as or path
    return parse_routes(routes_bytes(path, name).decode("utf-8", errors="replace"), name, sources)


def routes_bytes(path: str, name: str) -> bytes:
    """The routes file as it is on disk, read no further than its cap (a device or a file that
    grows ends there too). Raises RoutesError naming `name`."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_ROUTES_BYTES + 1)
            size = os.fstat(file.fileno()).st_size
    except OSError as exc:
        raise RoutesError(
            f"{name}: cannot be read ({exc.strerror or exc}): set RELAY_ROUTES to the routes "
            "file's full path, readable by the relay's user"
        ) from None
    if len(raw) > MAX_ROUTES_BYTES:
        held = f"{size} bytes" if size > MAX_ROUTES_BYTES else "more"
        raise RoutesError(
            f"{name}: holds {held}, over the cap of {MAX_ROUTES_BYTES} bytes "
            f"({MAX_ROUTES_BYTES // 1024} KiB) a routes file may have: shorten it (one route may "
            'list several values: project = ["a", "b"])'
        )
    return raw


@functools.lru_cache(maxsize=1)
def parse_routes(text: str, name: str, sources: tuple[str, ...]) -> RouteTable:
    """The table `text` holds, whose `source` may name `sources` (the registry's sources'
    names). The last one made is kept for the same arguments (the module's docstring says
    why); a RouteTable cannot be changed, so it is safe to share."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RoutesError(f"{name}: not TOML: {exc}") from None
    lines = _RouteLines(text)
    unknown = sorted(set(document) - {"route", "rotation"})
    if unknown:
        raise RoutesError(
            f"{name}:{lines.top(unknown[0])}: unknown key {unknown[0]!r}; the file holds only "
            "[[route]] and [[rotation]] tables"
        )
    rotations = _rotations(document.get("rotation", []), name, lines)
    tables = document.get("route", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise RoutesError(f"{name}: 'route' must be [[route]] tables, one per route")
    if len(tables) > MAX_ROUTES:
        raise RoutesError(
            f"{name}:{lines.of(MAX_ROUTES + 1, None)}: route {MAX_ROUTES + 1}: the file holds "
            f"{len(tables)} routes, over the cap of {MAX_ROUTES}: merge routes that go to the "
            'same place (one route may list several values: project = ["a", "b"])'
        )
    closed = {**_CLOSED, "source": (sources, _sources_said(sources))}
    routes = tuple(
        _route(table, number, name, lines, closed) for number, table in enumerate(tables, 1)
    )
    _oncall_named(routes, {rotation.name for rotation in rotations}, name, lines)
    return RouteTable(routes, source=name, rotations=rotations)


def _rotations(raw: object, name: str, lines: _RouteLines) -> tuple[Rotation, ...]:
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise RoutesError(f"{name}: 'rotation' must be [[rotation]] tables, one per rotation")
    rotations: list[Rotation] = []
    for number, table in enumerate(raw, 1):

        def problem(key: str | None, said: str, number: int = number) -> RoutesError:
            where = lines.of(number, key, table="rotation")
            return RoutesError(f"{name}:{where}: rotation {number}, {key}: {said}")

        rotation = rotation_of(table, number, problem)
        if any(other.name == rotation.name for other in rotations):
            raise problem("name", f"{rotation.name!r} names another rotation too")
        rotations.append(rotation)
    return tuple(rotations)


def _mentioned(mention: str) -> bool:
    """Whether `mention` names one person (core/typed.py) or a rotation (`oncall:NAME`)."""
    return is_person(mention) or _ROTATION.fullmatch(mention) is not None


def _oncall_named(routes: Sequence[Route], known: set[str], name: str, lines: _RouteLines) -> None:
    """Every oncall:NAME a route calls names a rotation of the file."""
    for route in routes:
        for rotation in route.rotations_called:
            if rotation not in known:
                key = "mention" if f"{ONCALL}{rotation}" in route.mention else "escalate"
                raise RoutesError(
                    f"{name}:{lines.of(route.number, key)}: route {route.number}, {key}: "
                    f"oncall:{rotation} names no [[rotation]] of this file"
                    + (f" (it has: {', '.join(sorted(known))})" if known else "")
                )


def _route(
    table: dict[str, Any], number: int, name: str, lines: _RouteLines, closed: _Closed
) -> Route:
    def problem(key: str | None, said: str) -> RoutesError:
        where = lines.of(number, key)
        return RoutesError(f"{name}:{where}: route {number}{f', {key}' if key else ''}: {said}")

    _known_keys(table, problem)
    matchers = tuple(_matcher(key, table[key], problem, closed) for key in MATCHERS if key in table)
    chat = _chat(table.get("chat"), problem)
    thread = _thread(table.get("thread"), problem)
    mention = _mentions(table.get("mention", []), problem)
    sound = sound_of(table, problem)
    escalate, take_for = _calls(table, mention, problem)
    summary = summary_of(table, problem)
    if "report" in table and summary is None:
        raise problem("report", "needs summary: the report is a part of the daily summary")
    reply_takes = table.get("reply_takes", True)
    if not isinstance(reply_takes, bool):
        raise problem("reply_takes", "must be true or false")
    topics, board = _rooms(table, problem)
    acts = any(
        (chat, thread, mention, sound, escalate, summary, not reply_takes, take_for, topics, board)
    )
    drop = _drop(table.get("drop", False), acts, problem)
    route_name = table.get("name", f"route {number}")
    if not isinstance(route_name, str) or not route_name.strip():
        raise problem("name", "must be a string")
    return Route(
        number,
        route_name.strip(),
        matchers,
        chat,
        thread,
        mention,
        drop,
        sound,
        escalate,
        summary,
        reply_takes,
        take_for,
        topics,
        board,
    )


def _rooms(table: dict[str, Any], problem: Any) -> tuple[str | None, bool]:
    """Whether its issues get a forum topic each (`topics`), and whether it keeps a board."""
    topics = table.get("topics")
    if topics is not None and topics not in TOPICS:
        raise problem(
            "topics", 'must be "per_issue" (each issue a forum topic of its own), or left out'
        )
    board = table.get("board", False)
    if not isinstance(board, bool):
        raise problem("board", "must be true or false")
    return topics, board


def _calls(
    table: dict[str, Any], mention: tuple[str, ...], problem: Any
) -> tuple[tuple[Step, ...], float | None]:
    """Whom a route calls while nobody acts (`escalate`, and `direct`: privately too), and how
    long an issue may be someone's before they are called again (`take_for`)."""
    escalate = steps_of(table.get("escalate"), lambda raw: _step_mentions(raw, problem), problem)
    direct = table.get("direct", False)
    if not isinstance(direct, bool):
        raise problem("direct", "must be true or false")
    if direct:
        escalate = called_directly(mention, escalate)
    take_for = None
    if "take_for" in table:
        take_for = duration_of(table["take_for"], least=1.0, most=MAX_AFTER)
        if take_for is None:
            raise problem("take_for", 'must be a duration like "1h" (s, m or h; at most 7 d)')
    return escalate, take_for


def _step_mentions(raw: object, problem: Any) -> tuple[str, ...]:
    """An escalation step's people, checked as a route's `mention` is."""

    def said_of_step(key: str | None, said: str) -> RoutesError:
        error: RoutesError = problem("escalate", f"a step's {said}")
        return error

    return _mentions(raw if raw is not None else [], said_of_step)


def _known_keys(table: dict[str, Any], problem: Any) -> None:
    for key in table:
        if key not in MATCHERS and key not in ACTIONS:
            near = difflib.get_close_matches(key, MATCHERS + ACTIONS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise problem(key, f"unknown key{hint} (keys: {', '.join(MATCHERS + ACTIONS)})")


def _drop(raw: object, goes_somewhere: bool, problem: Any) -> bool:
    if not isinstance(raw, bool):
        raise problem("drop", "must be true or false")
    if raw and goes_somewhere:
        raise problem(
            "drop",
            "a dropped alert goes nowhere: leave out chat, thread, mention, sound, escalate and "
            "summary",
        )
    if not raw and not goes_somewhere:
        raise problem(
            None,
            "says nothing to do: give chat (and thread), mention, silent or quiet_hours, "
            "escalate, summary, or drop = true",
        )
    return raw


def _matcher(key: str, raw: object, problem: Any, closed: _Closed) -> Matcher:
    values = _strings(key, raw, problem)
    negated = {value.startswith("!") for value in values}
    if len(negated) > 1:
        raise problem(key, 'mixes values and "!" negations: give one route each, or only either')
    stripped = [value.removeprefix("!").strip() for value in values]
    if not all(stripped):
        raise problem(key, "has an empty value")
    allowed, said = closed.get(key, ((), ""))
    if key in closed and (wrong := [v for v in stripped if v.casefold() not in allowed]):
        raise problem(key, f"{wrong[0]!r} is not {said}")
    return Matcher(key, tuple(v.casefold() for v in stripped), negated.pop())


# The matchers whose values are a closed list, and what a wrong one is not; `source`'s is the
# registry's sources', given to the parse.
_Closed = Mapping[str, tuple[tuple[str, ...], str]]
_CLOSED: _Closed = {
    "level": (LEVELS, f"a level of GlitchTip's: {', '.join(LEVELS)}"),
    "kind": (KINDS, 'a kind of alert: "issue", "uptime" or "created"'),
}


def _sources_said(sources: tuple[str, ...]) -> str:
    named = " or ".join(f'"{source}"' for source in sources)
    return f"a source of alerts: {named}" if sources else "a source of alerts: the relay has none"


def _strings(key: str, raw: object, problem: Any) -> list[str]:
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise problem(key, "must be a string or a list of strings")
    return values


def _chat(raw: object, problem: Any) -> ChatId | None:
    if raw is None:
        return None
    chat = parse_chat_id(str(raw)) if isinstance(raw, str | int) else None
    if chat is None:
        raise problem(
            "chat", f'{raw!r} is not a chat id (like "-1001234567890") nor an @channelname'
        )
    return chat


def _thread(raw: object, problem: Any) -> int | None:
    if raw is None:
        return None
    thread = parse_thread_id(str(raw)) if isinstance(raw, int | str) else None
    if thread is None or isinstance(raw, bool):
        raise problem("thread", f"{raw!r} is not a forum topic's id (a positive integer)")
    return thread


def _mentions(raw: object, problem: Any) -> tuple[str, ...]:
    values = _strings("mention", raw, problem) if raw != [] else []
    if len(values) > MAX_MENTIONS:
        raise problem("mention", f"names {len(values)} people; a route may call {MAX_MENTIONS}")
    wrong = [value for value in values if not _mentioned(value)]
    if wrong:
        raise problem(
            "mention",
            f"{wrong[0]!r} is neither @username, tg:<user id> (1 to {MAX_USER_ID}) nor oncall:NAME",
        )
    return tuple(dict.fromkeys(values))


def facts_of_monitor(name: str) -> dict[str, str | None]:
    """What a route's matchers read of one uptime monitor of an alert."""
    return {"kind": "uptime", "monitor": name, "title": name}


def facts_of_issue(
    title: str,
    short_id: str | None,
    shade: str,
    fields: Iterable[tuple[str, str]],
    level: str | None = None,
) -> dict[str, str | None]:
    """What a route's matchers read of one issue of an alert; `level`: its own, from its
    source's API when its details came (else its shade, core/alerts.py, says what it can)."""
    by_name = {name.casefold(): value for name, value in fields}
    facts: dict[str, str | None] = {
        key: by_name.get(field.casefold()) for key, field in FIELD_NAMES.items()
    }
    facts["kind"] = "issue"
    facts["title"] = title
    facts["issue"] = short_id
    facts["level"] = level.casefold() if level else shade
    return facts


class _RouteLines:
    """Where each route and each of its keys is in the file's text, for the messages (tomllib
    gives values, not places)."""

    # Indentation only, not \s: a blank line before a table or key is not where it is.
    _TABLE = re.compile(r"^[ \t]*\[\[\s*(route|rotation)\s*\]\]", re.MULTILINE)
    _KEY = re.compile(r"^[ \t]*([A-Za-z0-9_\"'-]+)[ \t]*=", re.MULTILINE)

    def __init__(self, text: str) -> None:
        self._text = text
        self._tables = [(found.group(1), found.start()) for found in self._TABLE.finditer(text)]

    def _line(self, offset: int) -> int:
        return self._text.count("\n", 0, offset) + 1

    def top(self, key: str) -> int:
        for found in self._KEY.finditer(self._text):
            if found.group(1).strip("\"'") == key:
                return self._line(found.start())
        return 1

    def of(self, number: int, key: str | None, *, table: str = "route") -> int:
        """The line of the `number`th table of its kind, or of its `key`."""
        indexes = [index for index, (kind, _) in enumerate(self._tables) if kind == table]
        if number > len(indexes):
            return 1
        index = indexes[number - 1]
        start = self._tables[index][1]
        end = self._tables[index + 1][1] if index + 1 < len(self._tables) else len(self._text)
        if key is not None:
            for found in self._KEY.finditer(self._text, start, end):
                if found.group(1).strip("\"'") == key:
                    return self._line(found.start())
        return self._line(start)
