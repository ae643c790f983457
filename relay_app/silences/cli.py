"""`relay-app silence add|list|expire`: quiet in a chat for a while, from the command line, in
the spool every relay on it reads (silences/store.py), as the mute button makes it from the chat.

- `add`: matchers (issue, project, environment, title text; at least one), a duration, a
  comment, and the chat (TELEGRAM_CHAT_ID unless --chat says another);
- `list`: the silences not yet ended (`--all`: those ended in the last week too);
- `expire ID...`: end them now; what each held is summed up in one message to its chat.

Exit codes as the other commands: 0 done, 1 no spool or an unknown id, 2 wrong usage.
"""

from __future__ import annotations

import argparse
import getpass
import time
from collections.abc import Mapping

from ..cards.sent import SentStore
from ..core.routing import chat_key, parse_chat_id
from ..delivery.outbox import Outbox
from ..message.spans import utc_time
from ..operating.config import ConfigError
from ..operating.console import (
    CommandLine,
    Console,
    Failed,
    Usage,
    print_table,
    with_spool,
)
from ..operating.routes_file import routes_from_env
from ..spool import Spool
from ..words import ENGLISH
from .matching import Matchers
from .silencing import Silencing
from .store import Ended, NewSilence, Silence, SilenceStore


def add_silence_commands(line: CommandLine) -> None:
    """The `silence` command and its actions, on the command line's subparsers."""
    open_spool = line.open_spool
    silence = line.commands.add_parser("silence", help="hold alerts back from a chat for a while")
    actions = silence.add_subparsers(required=True, metavar="ACTION")

    add = actions.add_parser("add", help="silence the alerts that match, in one chat")
    add.add_argument("--issue", help="GlitchTip's issue id (1234) or short id (BACKEND-1A)")
    add.add_argument("--project", help="the project's name, as GlitchTip's alerts show it")
    add.add_argument("--environment", help="the environment, as GlitchTip's alerts show it")
    add.add_argument("--title", help="text the issue's title contains (any case)")
    add.add_argument(
        "--for",
        dest="seconds",
        required=True,
        type=line.duration,
        metavar="DURATION",
        help="how long: 3600, 30m, 2h, 1d",
    )
    add.add_argument("--comment", required=True, help="why, for whoever lists it later")
    add.add_argument("--chat", help="the chat's id (default: TELEGRAM_CHAT_ID)")
    add.add_argument("--by", help="who adds it (default: the login name)")
    add.set_defaults(run=with_spool(open_spool, _add))

    listing = actions.add_parser("list", help="list the silences not yet ended")
    listing.add_argument("--all", action="store_true", help="those ended lately too")
    listing.set_defaults(run=with_spool(open_spool, _list))

    expire = actions.add_parser("expire", help="end silences now; each sums up what it held")
    expire.add_argument("ids", nargs="+", type=_silence_id, metavar="ID")
    expire.add_argument("--by", help="who ends them (default: the login name)")
    expire.set_defaults(run=with_spool(open_spool, _expire))


def _add(spool: Spool, args: argparse.Namespace, console: Console) -> int:
    matchers = Matchers(args.issue, args.project, args.environment, args.title)
    if not matchers:
        raise Usage("a silence needs at least one of --issue, --project, --environment, --title")
    if args.seconds <= 0:
        raise Usage("--for must be longer than 0")
    chats, why = _chats(args.chat, matchers, console)
    now = time.time()
    for chat in chats:
        silence = spool.of(SilenceStore).add(
            NewSilence(
                chat, matchers, by=args.by or _login(), comment=args.comment, seconds=args.seconds
            ),
            now=now,
        )
        print(
            f"silence {silence.id} added: {_matchers(silence)} in chat {chat} until "
            f"{utc_time(silence.ends_at)} UTC ({ENGLISH.duration(args.seconds)}).",
            file=console.out,
        )
    print(why, file=console.out)
    print("Every relay on this spool holds the alerts it matches back.", file=console.out)
    return 0


def _as_routes_read(matchers: Matchers) -> dict[str, str]:
    """What a silence matches, in the routes' keys: what the routes may choose a chat by."""
    known = {
        key: value
        for key, value in (("project", matchers.project), ("environment", matchers.environment))
        if value is not None
    }
    if matchers.issue is not None and not matchers.issue.isdigit():
        known["issue"] = matchers.issue  # a short id, as routes read it
    return known


def _chats(given: str | None, matchers: Matchers, console: Console) -> tuple[list[str], str]:
    """The chats the silence goes in, and why those: --chat's alone; else, with routes in
    force, every chat they may send such alerts to and TELEGRAM_CHAT_ID; else that one."""
    environ = console.environ
    if given is not None:
        return [_chat(given, environ)], "Only in that chat (--chat)."
    default = _chat(None, environ)
    try:
        table = routes_from_env(environ, console.route_sources)
    except ConfigError as exc:
        raise Failed(f"{exc}; or give --chat") from None
    if not table:
        return [default], "In TELEGRAM_CHAT_ID's chat (no RELAY_ROUTES; --chat names another)."
    where = parse_chat_id(default)
    assert where is not None  # _chat checked it
    chats = [chat_key(chat) for chat in table.chats_for(_as_routes_read(matchers), where)]
    return chats, (
        f"In each chat the routes of {table.source} may send such alerts to, and "
        "TELEGRAM_CHAT_ID's (--chat names one chat alone)."
    )


def _list(spool: Spool, args: argparse.Namespace, console: Console) -> int:
    now = time.time()
    silences = spool.of(SilenceStore).listed(now=now, ended_too=args.all)
    rows: list[tuple[str, ...]] = [
        ("ID", "CHAT", "UNTIL (UTC)", "STATE", "HELD", "BY", "MATCHERS", "COMMENT")
    ]
    rows += [_row(silence, now) for silence in silences]
    print_table(rows, console.out)
    holding = sum(1 for silence in silences if _state(silence, now) == "active")
    print(f"\n{holding} active in {spool.admin.path}", file=console.out)
    return 0


def _row(silence: Silence, now: float) -> tuple[str, ...]:
    return (
        str(silence.id),
        silence.chat,
        utc_time(silence.ended_at or silence.ends_at),
        _state(silence, now),
        str(silence.held),
        silence.created_by,
        _matchers(silence),
        silence.comment,
    )


# A muted issue's title, as the list shows it: enough to recognise it.
TITLE_SHOWN = 60


def _matchers(silence: Silence) -> str:
    """'issue=23 (BACKEND-1A “ZeroDivisionError: division by zero”) environment=production':
    the matchers, and the issue named as the chat named it, when the spool knows how."""
    plain = silence.matchers.plain()
    if silence.matchers.issue is None or silence.label is None:
        return plain
    named = silence.label
    if silence.issue_title:
        title = silence.issue_title
        if len(title) > TITLE_SHOWN:
            title = title[: TITLE_SHOWN - 1] + "…"
        named += f" “{title}”"
    issue = f"issue={silence.matchers.issue}"
    return plain.replace(issue, f"{issue} ({named})", 1)


def _state(silence: Silence, now: float) -> str:
    if silence.ended_at is not None:
        return "ended" if silence.ended_by is None else f"expired by {silence.ended_by}"
    return "active" if silence.ends_at > now else "ending"


def _expire(spool: Spool, args: argparse.Namespace, console: Console) -> int:
    known = {s.id: s for s in spool.of(SilenceStore).listed(now=time.time(), ended_too=True)}
    missing = [silence_id for silence_id in args.ids if silence_id not in known]
    silencing = _silencing(spool)
    by = args.by or _login()
    for silence_id in args.ids:
        if silence_id in known:
            print(_expired(silence_id, silencing.end(silence_id, by=by)), file=console.out)
    if missing:
        names = ", ".join(str(silence_id) for silence_id in missing)
        raise Failed(f"no such silence in {spool.admin.path}: {names}")
    return 0


def _expired(silence_id: int, ended: Ended | None) -> str:
    if ended is None:
        return f"silence {silence_id} had ended already; left as it is"
    if ended.summary_alert is None:
        return f"silence {silence_id} expired; it held no alerts"
    return (
        f"silence {silence_id} expired; it held {ended.held} alert(s): their summary is alert "
        f"#{ended.summary_alert}, which a running relay sends"
    )


def _silencing(spool: Spool) -> Silencing:
    """Silencing as the relay has it: what it ends queues the summary and the muted cards'
    edits as jobs, data the running relay sends in the chat's language."""
    return Silencing(spool.of(SilenceStore), spool.of(SentStore), outbox=Outbox(spool.queue))


def _chat(raw: str | None, environ: Mapping[str, str]) -> str:
    given = raw if raw is not None else environ.get("TELEGRAM_CHAT_ID", "")
    chat = parse_chat_id(given.strip())
    if chat is None:
        raise Usage(
            f"{given!r} is not a chat id: give --chat (like -1001234567890) or set TELEGRAM_CHAT_ID"
        )
    return chat_key(chat)


def _silence_id(raw: str) -> int:
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not a silence id (a number, as listed)")
    return int(raw)


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "relay-app"
