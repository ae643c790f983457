"""`relay-app`: the relay's command line, for the people who run it. It reads the same
environment as the service.

- `relay-app check [--send]`: is the configuration one that delivers (selfcheck.py)?
- `relay-app chats`: the chats and forum topics the bot has seen, and the ids to set.
- `relay-app ready`: is the relay on this host ready (its /readyz)? For container health checks.
- `relay-app preview [FILE.json]`: the exact HTML the relay would send for a GlitchTip payload.
- `relay-app telegram-webhook set URL|delete`: have Telegram post presses on the alerts' buttons
  to the relay at URL (TELEGRAM_UPDATES=webhook), or stop it.
- `relay-app spool list|retry|purge` looks after the spool of a running (or stopped) relay
  (spool_cli.py).
- `relay-app routes check|test`: the routes file before it is in service (routes_cli.py).
- and the capabilities' own, added by relay_app/cli.py: `relay-app glitchtip connect`, the
  project's alert rule that sends to this relay, and with `--test` the whole path proved
  (glitchtip/connect.py), `relay-app silence add|list|expire` (silences/cli.py), `relay-app
  oncall` (oncall/cli.py), `relay-app summary` (summaries/cli.py).

Exit codes: 0 done (every check passed), 1 something could not be done (a check failed, no
spool, unknown id, a payload that is not JSON), 2 wrong usage or configuration.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import requests

from ..core.errors import DeliveryError, SpoolError, Unreadable
from ..core.issue_details import details_by_issue
from ..core.json_body import PayloadError, payload_from_json
from ..core.logs import redact, register_secret
from ..core.services import Lending
from ..core.sources import Sources
from ..message.formatting import TELEGRAM_TEXT_LIMIT, message_for
from ..message.spans import visible_length
from ..spool import Spool, open_spool
from ..telegram.client import TelegramClient
from ..telegram.updates_webhook import shown_webhook_url, telegram_secret_token, webhook_path
from ..words import words_for
from .binds import local_url
from .chats import find_chats, report
from .config import (
    ConfigError,
    Settings,
    admin_bind_from_env,
    api_url_from_env,
    bind_from_env,
    bot_token_from_env,
    language_from_env,
    spool_path_from_env,
    spool_url_from_env,
)
from .console import AddCommands, CommandLine, Console, Failed, Usage
from .readers import PayloadReader, read_payload
from .routes_cli import RosterOf, add_routes_commands, rotations_only
from .selfcheck import MoreChecks, Verdict, run_checks
from .sources import SaysState
from .spool_cli import add_spool_commands

if TYPE_CHECKING:
    from ..delivery.render import Shape

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(s|m|h|d|w)")
_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def run(
    argv: Sequence[str] | None,
    console: Console,
    *,
    sources: Sources,
    added: Sequence[AddCommands] = (),
    shapes: Sequence[Shape] = (),
    roster_of: RosterOf = rotations_only,
    checks: Sequence[MoreChecks] = (),
    readers: Sequence[PayloadReader] = (),
    said: Sequence[SaysState] = (),
    lending: Lending | None = None,
) -> int:
    """`relay-app` with `argv` (None: the process's), its exit code. `sources`: whose issues
    an alert's links name (core/sources.py); `added`: the
    capabilities' subcommands; `shapes`: the alerts they registered (what `spool list` shows
    of a job); `roster_of`: who is on duty (`routes test`), the covers the capabilities keep
    applied; `checks`: what `check` asks of the capabilities' settings too; `readers`: how
    `preview` and `routes test` read the other sources' webhooks; `said`: what the sources
    among them say of their state (`check`'s sources line); `lending`: the stores they lend
    one another."""
    err = console.err
    parser = _parser(added, shapes, sources, roster_of, lending or Lending())
    parser.set_defaults(
        more_checks=tuple(checks), readers=tuple(readers), said=tuple(said), sources=sources
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has already printed the usage and the problem
        return EXIT_USAGE if exit_.code else EXIT_OK
    try:
        return int(args.run(args, console))
    except Usage as exc:
        print(f"relay-app: error: {exc}", file=err)
        return EXIT_USAGE
    except (Failed, SpoolError) as exc:
        print(f"relay-app: error: {exc}", file=err)
        return EXIT_FAILED


def _parser(
    added: Sequence[AddCommands],
    shapes: Sequence[Shape],
    sources: Sources,
    roster_of: RosterOf = rotations_only,
    lending: Lending | None = None,
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relay-app",
        description="Check the relay's configuration, preview its messages, and look after "
        "its spool. Reads the same environment variables as the relay.",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    check = commands.add_parser(
        "check", help="check the token, the chats and topic, and the spool; exit 0 if all pass"
    )
    check.add_argument(
        "--send", action="store_true", help="also post a test message to the default chat"
    )
    check.set_defaults(run=_check)

    chats = commands.add_parser(
        "chats",
        help="list the chats and forum topics the bot has seen, with the ids to set "
        "(needs only TELEGRAM_BOT_TOKEN)",
    )
    chats.set_defaults(run=_chats)

    ready = commands.add_parser(
        "ready",
        help="ask the relay running on this host whether it is ready (GET /readyz on "
        "RELAY_ADMIN_BIND, or RELAY_BIND); exit 0 if so: a container health check",
    )
    ready.set_defaults(run=_ready)

    preview = commands.add_parser(
        "preview",
        help="print the HTML the relay would send for a webhook's body (GlitchTip's, or a "
        "source's the relay takes: Sentry's)",
    )
    preview.add_argument(
        "file", nargs="?", default="-", metavar="FILE.json", help="the payload; '-' or none: stdin"
    )
    preview.set_defaults(run=_preview)

    webhook = commands.add_parser(
        "telegram-webhook",
        help="have Telegram post presses on the alerts' buttons to the relay "
        "(TELEGRAM_UPDATES=webhook), or stop it",
    )
    webhook_actions = webhook.add_subparsers(required=True, metavar="ACTION")
    webhook_set = webhook_actions.add_parser(
        "set", help="register https://<relay>/telegram/<RELAY_WEBHOOK_SECRET> with Telegram"
    )
    webhook_set.add_argument(
        "url", metavar="URL", help="the relay's public address, as Telegram reaches it"
    )
    webhook_set.set_defaults(run=_set_telegram_webhook)
    webhook_delete = webhook_actions.add_parser(
        "delete", help="stop Telegram posting updates (polling works again)"
    )
    webhook_delete.set_defaults(run=_delete_telegram_webhook)

    line = CommandLine(
        commands,
        open_spool_from_env,
        parse_duration,
        sources,
        shapes,
        lending=lending or Lending(),
    )
    add_spool_commands(line)
    add_routes_commands(commands, roster_of)
    for add in added:
        add(line)
    return parser


def parse_duration(raw: str) -> float:
    """'7d', '12h', '1d12h', '90s' or plain seconds."""
    text = raw.strip().lower()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not a duration; use seconds or a number with s, m, h, d or w (like 7d)"
        )
    return sum(float(number) * _SECONDS_PER_UNIT[unit] for number, unit in parts)


def _check(args: argparse.Namespace, console: Console) -> int:
    passed = True
    for verdict in run_checks(
        console.environ,
        theirs=console.theirs,
        send=args.send,
        more=args.more_checks,
        said=args.said,
    ):
        passed = passed and verdict.passed
        # Redacted again here: whatever Telegram or a proxy echoes back, never the token.
        print(redact(_verdict_line(verdict)), file=console.out, flush=True)
    return EXIT_OK if passed else EXIT_FAILED


def _verdict_line(verdict: Verdict) -> str:
    line = f"{'ok  ' if verdict.passed else 'FAIL'}  {verdict.check}: {verdict.found}"
    return f"{line} (hint: {verdict.hint})" if verdict.hint else line


# getMe, getUpdates and perhaps getWebhookInfo, each within this.
CHATS_TIMEOUT = 10.0


def _chats(args: argparse.Namespace, console: Console) -> int:
    problems = []
    token = api_url = ""
    try:
        token = bot_token_from_env(console.environ)
    except ConfigError as exc:
        problems.append(str(exc))
    try:
        api_url = api_url_from_env(console.environ)
    except ConfigError as exc:
        problems.append(str(exc))
    if problems:
        raise Usage("; ".join(problems))
    client = TelegramClient(api_url, token)
    try:
        found = find_chats(client, timeout=CHATS_TIMEOUT)
    finally:
        client.close()
    if found.problem is not None:
        hint = f"\nhint: {found.hint}" if found.hint else ""
        raise Failed(redact(f"{found.problem}{hint}"))
    return EXIT_OK if report(found, console.out) else EXIT_FAILED


def _settings(console: Console) -> Settings:
    try:
        settings = console.settings()
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    for secret in settings.secrets:
        register_secret(secret)  # what this command prints is redacted
    return settings


def _set_telegram_webhook(args: argparse.Namespace, console: Console) -> int:
    settings = _settings(console)
    base = args.url.strip().rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise Usage(
            f"{args.url!r} is not the relay's address; for example https://relay.example.com"
        )
    url = base + webhook_path(settings.webhook_secret)
    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
    try:
        client.set_webhook(
            url,
            secret_token=telegram_secret_token(settings.telegram_bot_token),
            deadline=time.monotonic() + CHATS_TIMEOUT,
        )
    except DeliveryError as exc:
        raise Failed(redact(f"Telegram did not set the webhook: {exc}")) from None
    finally:
        client.close()
    print(
        redact(f"Telegram now posts this bot's updates to {shown_webhook_url(url)}.\n")
        + "Run the relay with TELEGRAM_UPDATES=webhook; 'relay-app check' checks it.",
        file=console.out,
    )
    return EXIT_OK


def _delete_telegram_webhook(args: argparse.Namespace, console: Console) -> int:
    settings = _settings(console)
    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
    try:
        client.delete_webhook(deadline=time.monotonic() + CHATS_TIMEOUT)
    except DeliveryError as exc:
        raise Failed(redact(f"Telegram did not delete the webhook: {exc}")) from None
    finally:
        client.close()
    print(
        "Telegram no longer posts this bot's updates anywhere; a relay with "
        "TELEGRAM_UPDATES=poll (the default) reads them.",
        file=console.out,
    )
    return EXIT_OK


# The Dockerfile's HEALTHCHECK gives the command 5 s.
READY_TIMEOUT = 4.0


def _ready(args: argparse.Namespace, console: Console) -> int:
    try:
        bind = admin_bind_from_env(console.environ) or bind_from_env(console.environ)
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    url = local_url(bind, "/readyz")
    try:
        reply = requests.get(url, timeout=READY_TIMEOUT)
    except requests.RequestException as exc:
        raise Failed(f"the relay does not answer at {url}: {type(exc).__name__}") from None
    try:
        body = reply.json()
    except ValueError:
        body = {}
    if reply.status_code == 200:
        print(f"ready ({url})", file=console.out)
        return EXIT_OK
    reason = body.get("reason") if isinstance(body, dict) else None
    raise Failed(f"not ready ({reply.status_code} from {url}): {reason or reply.text[:200]}")


def _preview(args: argparse.Namespace, console: Console) -> int:
    try:
        if args.file == "-":
            stream = console.stdin
            body = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode()
        else:
            with open(args.file, "rb") as payload_file:
                body = payload_file.read()
    except OSError as exc:
        raise Failed(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        words = words_for(language_from_env(console.environ))
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    try:
        found = read_payload(payload_from_json(body), args.readers, console.environ, args.sources)
    except PayloadError as exc:
        raise Failed(str(exc)) from None
    except Unreadable as exc:
        raise Failed(f"the alert cannot be read: {exc}") from None
    if found.alert is None:
        raise Failed(f"a webhook of {found.source}'s that sends no message: {found.said}")
    message = message_for(
        found.alert, words, sources=args.sources, details=details_by_issue(found.details)
    )
    # stdout holds exactly the text field the relay posts; the rest goes to stderr.
    console.out.write(message.html + "\n")
    console.err.write(
        f"visible length: {visible_length(message.text)} of {TELEGRAM_TEXT_LIMIT} characters "
        "(parse_mode HTML, link previews off)\n"
    )
    return EXIT_OK


def open_spool_from_env(environ: Mapping[str, str]) -> Spool:
    try:
        url = spool_url_from_env(environ)
        path = spool_path_from_env(environ)
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    spool = open_spool(path=path, url=url, for_service=False)
    if spool is None:
        raise Usage("RELAY_SPOOL_PATH is 'off': this relay keeps no spool")
    return spool
