"""`relay-app sentry send FILE.json [--relay-url URL]`: a Sentry webhook's body (one saved from
Sentry, or examples/sentry-issue-alert.json) signed with SENTRY_CLIENT_SECRET as Sentry signs
it, and posted to the relay's `/sentry/webhook` with Sentry's headers: how to see a Sentry card
in the chat without Sentry (docs/sentry.md). Exit codes as the other commands: 0 the relay took
it, 1 it refused it or could not be reached, 2 wrong usage."""

from __future__ import annotations

import argparse
import contextlib
import json

import requests

from ..core.json_body import PayloadError, payload_from_json
from ..operating.config import ConfigError
from ..operating.console import CommandLine, Console, Failed, Usage
from .reading import resource_of
from .settings import sentry_from_env
from .webhook import PATH, signed_headers

# Where the README's quick start runs the relay.
LOCAL_RELAY = "http://127.0.0.1:8780"


def add_sentry_commands(line: CommandLine) -> None:
    sentry = line.commands.add_parser("sentry", help="Sentry's webhooks, without Sentry")
    actions = sentry.add_subparsers(required=True, metavar="ACTION")
    send = actions.add_parser(
        "send",
        help="sign a Sentry webhook's body with SENTRY_CLIENT_SECRET and post it to the relay",
    )
    send.add_argument("file", metavar="FILE.json", help="the body, as Sentry sends it")
    send.add_argument(
        "--relay-url", default=LOCAL_RELAY, help=f"the relay's address ({LOCAL_RELAY})"
    )
    send.set_defaults(run=_send)


def _send(args: argparse.Namespace, console: Console) -> int:
    try:
        config = sentry_from_env(console.environ)
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    if config is None:
        raise Usage("set SENTRY_CLIENT_SECRET: the relay refuses a body Sentry did not sign")
    try:
        with open(args.file, "rb") as saved:
            body = saved.read()
        resource = resource_of(payload_from_json(body))
    except OSError as exc:
        raise Failed(f"cannot read {args.file}: {exc.strerror or exc}") from None
    except PayloadError as exc:
        raise Failed(f"{args.file}: {exc}") from None
    if resource is None:
        raise Failed(f"{args.file} is not a Sentry webhook's body (action, installation, data)")
    url = args.relay_url.rstrip("/") + PATH
    headers = signed_headers(body, config.client_secret, resource or "installation")
    try:
        reply = requests.post(url, data=body, headers=headers, timeout=10)
    except requests.RequestException as exc:
        raise Failed(f"the relay at {url} could not be reached: {type(exc).__name__}") from None
    answer = reply.text[:300]
    with contextlib.suppress(ValueError):  # the relay's JSON, written on one line
        answer = json.dumps(reply.json(), ensure_ascii=False)
    print(f"{url}: {reply.status_code} {answer}", file=console.out)
    if reply.status_code >= 400:
        raise Failed(f"the relay refused it ({reply.status_code})")
    return 0
