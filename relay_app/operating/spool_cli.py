"""`relay-app spool list|retry|purge|backup`: the spool of a running (or stopped) relay, as
the people who run it see it. It never creates a spool, and never touches an alert that is
still pending except to say so. Dead letters for the default chat follow TELEGRAM_CHAT_ID as it
is when they are retried; `retry --chat ID [--thread N]` sends them elsewhere. `backup` copies
the file while the relay runs (spool/backup.py).

Exit codes as the other commands: 0 done, 1 no spool or an unknown id, 2 wrong usage.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from ..core.routing import ChatId, Destination, parse_chat_id, parse_thread_id
from ..core.sources import Sources
from ..delivery.render import Added, Renderer, Shape
from ..message.spans import utc_time
from ..spool import Job, Spool
from ..spool.admin import Requeued
from ..spool.backup import back_up
from ..words import ENGLISH
from .config import ConfigError, Settings, spool_path_from_env, spool_url_from_env
from .console import CommandLine, Console, Failed, SpoolCommand, Usage, print_table, with_spool

EXIT_OK = 0


def add_spool_commands(line: CommandLine) -> None:
    """The `spool` command and its actions, on the command line's subparsers."""

    def on_spool(command: SpoolCommand) -> Callable[[argparse.Namespace, Console], int]:
        return with_spool(line.open_spool, command)

    spool = line.commands.add_parser("spool", help="list, resend or purge spooled alerts")
    actions = spool.add_subparsers(required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="list pending alerts (or dead ones with --dead)")
    listing.add_argument("--dead", action="store_true", help="list dead letters instead")
    listing.set_defaults(run=on_spool(partial(_list, shapes=line.shapes, sources=line.sources)))

    retry = actions.add_parser(
        "retry", help="make dead alerts pending again; a running relay resends them"
    )
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("ids", nargs="*", type=_alert_id, default=[], metavar="ID")
    which.add_argument("--all-dead", action="store_true", help="every dead alert")
    retry.add_argument(
        "--chat",
        type=_chat_id,
        help="send them to this chat instead (default: each where it was going; those for "
        "the default chat to TELEGRAM_CHAT_ID as it is now)",
    )
    retry.add_argument("--thread", type=_thread_id, help="and to this forum topic of it")
    retry.set_defaults(run=on_spool(_retry))

    purge = actions.add_parser("purge", help="delete dead alerts older than a duration")
    purge.add_argument(
        "--dead", action="store_true", required=True, help="required: only dead alerts go"
    )
    purge.add_argument(
        "--older-than",
        required=True,
        type=line.duration,
        metavar="DURATION",
        help="received longer ago than this: 3600, 90s, 15m, 12h, 7d, 2w, 1d12h",
    )
    purge.set_defaults(run=on_spool(_purge))

    backup = actions.add_parser(
        "backup", help="copy the spool file, while the relay runs, into a new file"
    )
    backup.add_argument("path", metavar="PATH", help="the new file (never overwritten)")
    backup.set_defaults(run=_backup)


def _chat_id(raw: str) -> ChatId:
    chat = parse_chat_id(raw)
    if chat is None:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not a chat id: an integer (like -1001234567890) or @channelname"
        )
    return chat


def _thread_id(raw: str) -> int:
    thread = parse_thread_id(raw)
    if thread is None:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a forum topic's id (a positive integer)")
    return thread


def _alert_id(raw: str) -> int:
    value = raw.lstrip("#")
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not an alert id (a number, as listed)")
    return int(value)


def _list(
    found: Spool,
    args: argparse.Namespace,
    console: Console,
    *,
    shapes: Sequence[Shape],
    sources: Sources,
) -> int:
    out, spool = console.out, found.admin
    alerts = spool.alerts("dead" if args.dead else "pending")
    when = "DIED (UTC)" if args.dead else "NEXT ATTEMPT (UTC)"
    rows: list[tuple[str, ...]] = [
        ("ID", "RECEIVED (UTC)", "TRIES", when, "TO", "ALERT", "LAST ERROR")
    ]
    # Each alert as the relay renders it, in English: this is the operator's table.
    renderer = Renderer(ENGLISH, sources=sources, late_after=float("inf"), added=Added(shapes))
    rows += [_row(alert, renderer.about(alert, now=time.time())) for alert in alerts]
    print_table(rows, out)
    counts = spool.counts()
    print(f"\n{counts['pending']} pending, {counts['dead']} dead in {spool.path}", file=out)
    telegram = found.health.read()
    if not telegram.sending and counts["pending"]:
        print(
            f"Telegram is not answering the relay (since {utc_time(telegram.decided_at)} UTC): "
            "the pending alerts wait for it, and go as soon as it answers, oldest first, "
            "whatever their NEXT ATTEMPT says. The relay asks it every second meanwhile.",
            file=out,
        )
    return EXIT_OK


def _row(alert: Job, text: str) -> tuple[str, ...]:
    when = alert.dead_at if alert.state == "dead" else alert.next_attempt_at
    topic = alert.destination.thread
    return (
        str(alert.id),
        utc_time(alert.received_at),
        str(alert.attempts),
        utc_time(when) if when is not None else "-",
        f"{alert.destination.chat}" + (f"/{topic}" if topic is not None else ""),
        _clip(_summary(text), 60),
        _clip(alert.last_error or "-", 200),
    )


def _retry(opened: Spool, args: argparse.Namespace, console: Console) -> int:
    out, spool = console.out, opened.admin
    to, default = _retry_destinations(args, console.environ)
    if args.all_dead:
        count = spool.requeue_all_dead(to=to, default=default)
        print(f"{count} dead alert(s) are pending again{_going(to, default)}.", file=out)
    else:
        before = spool.requeue(args.ids, to=to, default=default)
        for alert_id, found in before.items():
            if found.state is not None:
                print(_requeued(alert_id, found), file=out)
        missing = [alert_id for alert_id, found in before.items() if found.state is None]
        if missing:
            names = ", ".join(f"#{alert_id}" for alert_id in missing)
            raise Failed(f"no such alert in {spool.path}: {names}")
    print("A running relay sends them within a couple of seconds.", file=out)
    return EXIT_OK


def _backup(args: argparse.Namespace, console: Console) -> int:
    try:
        url = spool_url_from_env(console.environ)
        path = spool_path_from_env(console.environ)
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    if url is not None:
        raise Usage(
            "the spool is in PostgreSQL (RELAY_SPOOL_URL): back it up with pg_dump, as "
            "docs/postgresql.md says"
        )
    if path is None:
        raise Usage("RELAY_SPOOL_PATH is 'off': this relay keeps no spool")
    made = back_up(path, args.path)
    print(
        f"Backed up {path} to {made.path} ({made.size} bytes): {made.pending} pending, "
        f"{made.dead} dead; it passed SQLite's integrity check. To restore it, stop the relay "
        "and put it in place of the spool file.",
        file=console.out,
    )
    return EXIT_OK


def _requeued(alert_id: int, found: Requeued) -> str:
    if found.state != "dead" or found.to is None:
        return f"#{alert_id}: already pending; left as it is"
    chat, thread = found.to
    topic = f" topic {thread}" if thread is not None else ""
    return f"#{alert_id}: pending again, for chat {chat}{topic}"


def _retry_destinations(
    args: argparse.Namespace, environ: Mapping[str, str]
) -> tuple[Destination | None, Destination | None]:
    """Where `--chat`/`--thread` send the alerts (None: not given), and the default chat as
    TELEGRAM_CHAT_ID and TELEGRAM_THREAD_ID say now, which alerts addressed to it follow (None
    when they are not set here: those alerts keep their chat)."""
    try:
        default = Settings.destination_from_env(environ)
    except ConfigError:
        default = None
    if args.chat is None and args.thread is None:
        return None, default
    if args.chat is None:
        if default is None:
            raise Usage("--thread needs --chat, or TELEGRAM_CHAT_ID set to the topic's chat")
        return Destination(default.chat, args.thread), default
    return Destination(args.chat, args.thread), default


def _going(to: Destination | None, default: Destination | None) -> str:
    if to is not None:
        return f", for {to.describe()}"
    if default is not None:
        return f"; those for the default chat go to {default.describe()} (TELEGRAM_CHAT_ID)"
    return ""


def _purge(found: Spool, args: argparse.Namespace, console: Console) -> int:
    out, spool = console.out, found.admin
    before = time.time() - args.older_than
    count = spool.purge_dead(received_before=before)
    print(f"Deleted {count} dead alert(s) received before {utc_time(before)} UTC.", file=out)
    return EXIT_OK


def _summary(text: str) -> str:
    """The first lines that say something: the header, then titles (an issue's culprit)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " · ".join(lines[:3])


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
