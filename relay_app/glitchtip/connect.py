"""`relay-app glitchtip connect`: the one step of the set-up no other command helped with, adding
the relay as a webhook recipient of a project's alert rule in GlitchTip, done through GlitchTip's
API (../shared/reference/glitchtip-api.md), and, with `--test`, the whole path proved: a test
event into the project through its DSN, GlitchTip's alert rule firing, its webhook reaching the
relay, and the alert reaching the chat, or which of those hops failed and what fixes it.

Idempotent: run again, it changes nothing, or rewrites the rule it made (a new secret), saying
where it sent before; it never adds a second rule that would send each alert twice. A rule is
the relay's when it has the name given (`--name`, RULE_NAME by default) or a webhook recipient at
this relay's address; a rule someone made in GlitchTip's UI with exactly this webhook URL is
left as it is. A rule of that name that sends to another relay's address (a second relay, or
this one before it moved) is not taken without `--force`.

Before GlitchTip is asked, `--relay-url` is asked from here: a relay that does not answer is
said at once (with --test, nothing is sent: the webhook would be waited for in vain), and again
in the last line when the rule was left pointing at it. The test event's issue is resolved
afterwards when the token may, or named for the operator to resolve.

The token needs `project:write` (creating and changing alert rules; `project:read` for the keys):
GLITCHTIP_SETUP_TOKEN, which the relay itself never reads, or else GLITCHTIP_API_TOKEN.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import requests

from ..core.errors import TrackerError
from ..core.http_deadline import Deadline, DeadlineAdapter
from ..core.logs import register_secret
from ..operating.config import ConfigError, Settings
from ..operating.console import CommandLine, Console, Failed, OpenSpool, Usage
from ..telegram.updates_webhook import shown_webhook_url
from .api import GlitchTipApi, ProjectPath
from .connect_proof import (
    LOOPBACK_FIX,
    REQUEST_TIMEOUT,
    SETUP_TOKEN,
    loopback,
    prove_path,
    scope_hint,
)
from .settings import GLITCHTIP_SETTINGS

RULE_NAME = "relay_app: Telegram"
# GlitchTip checks its alert rules every so often (a new issue's webhook came tens of seconds
# after its event on a real one): how long --test waits for each hop by default.
TEST_WAIT = 180.0
# How long the relay's address has to answer this host before GlitchTip is asked.
RELAY_ANSWERS_WITHIN = 5.0


def add_glitchtip_commands(line: CommandLine) -> None:
    open_spool = line.open_spool
    glitchtip = line.commands.add_parser(
        "glitchtip", help="connect a GlitchTip project to the relay"
    )
    actions = glitchtip.add_subparsers(required=True, metavar="ACTION")
    connect = actions.add_parser(
        "connect",
        help="create or update the project's alert rule that sends its alerts to this relay "
        "(with --test: prove the whole path into the chat)",
    )
    connect.add_argument(
        "--project", required=True, metavar="ORG/PROJECT", help="the project's slugs: acme/backend"
    )
    connect.add_argument(
        "--relay-url",
        required=True,
        metavar="URL",
        help="the relay's base address as GlitchTip must reach it (http://relay:8780); "
        "/webhook/<RELAY_WEBHOOK_SECRET> is added to it",
    )
    connect.add_argument("--name", default=RULE_NAME, help=f"the rule's name ({RULE_NAME!r})")
    connect.add_argument(
        "--uptime", action="store_true", help="also a rule for the project's uptime monitors"
    )
    connect.add_argument(
        "--test",
        action="store_true",
        help="then send a test event through the project's DSN and wait until its alert is "
        "in the chat, or say which hop failed",
    )
    connect.add_argument(
        "--force",
        action="store_true",
        help="take the rule of this name even when it sends to another relay's address",
    )
    connect.add_argument(
        "--wait",
        type=float,
        default=TEST_WAIT,
        metavar="SECONDS",
        help=f"how long --test waits for GlitchTip's webhook (default {TEST_WAIT:.0f})",
    )
    connect.set_defaults(run=lambda args, console: _connect(args, console, open_spool))


@dataclass(frozen=True)
class RulePlan:
    action: Literal["create", "update", "keep", "refuse"]
    body: dict[str, Any]
    rule_id: int | None = None
    # Why a rule is kept: it is already the one wanted, or someone else's with this URL.
    why: str = ""
    # Where the rule sent before it is changed (or, refused, where it sends).
    sent_to: tuple[str, ...] = ()


def webhook_url(relay_url: str, secret: str) -> str:
    """The URL GlitchTip posts to: the relay's base address, then /webhook/<secret>."""
    parts = urlsplit(relay_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Usage(f"--relay-url {relay_url!r}: give the relay's address, http(s)://HOST[:PORT]")
    if parts.query or parts.fragment or "/webhook/" in parts.path:
        raise Usage(
            f"--relay-url {relay_url!r}: give the relay's base address only; the command adds "
            "/webhook/<RELAY_WEBHOOK_SECRET> itself"
        )
    return f"{relay_url.rstrip('/')}/webhook/{secret}"


def plan_rule(
    rules: list[dict[str, Any]],
    *,
    name: str,
    uptime: bool,
    url: str,
    relay_url: str,
    force: bool = False,
) -> RulePlan:
    """What to do so that one rule of this kind (issue or uptime) sends to `url`, and no two.
    The rule of this name that sends to another relay's address is refused unless `force`."""
    webhook: list[dict[str, Any]] = [{"recipientType": "webhook", "url": url}]
    wanted: dict[str, Any] = {
        "name": name,
        "timespanMinutes": 1,
        "quantity": 1,
        "uptime": uptime,
        "alertRecipients": webhook,
    }
    kind = [rule for rule in rules if bool(rule.get("uptime")) == uptime]
    if (kept := _already_sending(kind, name, url)) is not None:
        return kept
    relay_prefix = f"{relay_url.rstrip('/')}/webhook/"
    for rule in kind:
        ours = rule.get("name") == name
        if ours or any(u.startswith(relay_prefix) for u in _webhook_urls(rule)):
            return _rewrite(rule, wanted, ours=ours, relay_prefix=relay_prefix, force=force)
    return RulePlan("create", wanted)


def _rewrite(
    rule: dict[str, Any], wanted: dict[str, Any], *, ours: bool, relay_prefix: str, force: bool
) -> RulePlan:
    """The relay's own rule, with an old secret or address: rewritten, keeping whatever else it
    sends to; refused, unless `force`, when its name says it is a relay's and it sends to a
    relay's path elsewhere (another relay's, or this one's before it moved)."""
    urls = _webhook_urls(rule)
    elsewhere = _at_other_relays(urls, relay_prefix)
    if ours and elsewhere and not force:
        return RulePlan("refuse", rule, _rule_id(rule), sent_to=elsewhere)
    others = [r for r in _recipients(rule) if not _to_relay(r, ours, relay_prefix)]
    body = {**wanted, "alertRecipients": [*others, *wanted["alertRecipients"]]}
    kept = {str(r.get("url")) for r in others}
    return RulePlan("update", body, _rule_id(rule), sent_to=_without(urls, kept))


def _at_other_relays(urls: list[str], relay_prefix: str) -> tuple[str, ...]:
    return tuple(u for u in urls if "/webhook/" in u and not u.startswith(relay_prefix))


def _without(urls: list[str], kept: set[str]) -> tuple[str, ...]:
    return tuple(u for u in urls if u not in kept)


def _already_sending(kind: list[dict[str, Any]], name: str, url: str) -> RulePlan | None:
    sending = next((rule for rule in kind if url in _webhook_urls(rule)), None)
    if sending is None:
        return None
    why = "already sends to this relay"
    if sending.get("name") != name:
        why = "made elsewhere, already sends to this relay"
    return RulePlan("keep", sending, _rule_id(sending), why)


def _recipients(rule: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in rule.get("alertRecipients") or [] if isinstance(r, dict)]


def _to_relay(recipient: dict[str, Any], ours: bool, relay_prefix: str) -> bool:
    """Whether a recipient of a rule being rewritten is the relay's (replaced by the new URL):
    any webhook of the relay's own rule, or one at this relay's address."""
    if recipient.get("recipientType") != "webhook":
        return False
    return ours or str(recipient.get("url", "")).startswith(relay_prefix)


def _webhook_urls(rule: dict[str, Any]) -> list[str]:
    return [str(r.get("url")) for r in _recipients(rule) if r.get("recipientType") == "webhook"]


def _rule_id(rule: dict[str, Any]) -> int:
    return int(str(rule.get("id")))


def _settings_and_token(console: Console) -> tuple[Settings, str, str]:
    """The relay's settings, GLITCHTIP_URL, and the token that may change its project's alert
    rules."""
    try:
        settings = console.settings()
    except ConfigError as exc:
        raise Usage(str(exc)) from None
    config = settings.of(GLITCHTIP_SETTINGS)
    api_token = config.api_token if config is not None else None
    glitchtip_url = config.url if config is not None else None
    token = console.environ.get(SETUP_TOKEN, "").strip() or api_token
    if not token or glitchtip_url is None:
        raise Usage(
            f"set GLITCHTIP_URL, and {SETUP_TOKEN} (or GLITCHTIP_API_TOKEN) to a GlitchTip token "
            "with the project:write scope (Profile → Auth Tokens in GlitchTip)"
        )
    register_secret(token)
    return settings, glitchtip_url, token


def _connect(args: argparse.Namespace, console: Console, open_spool: OpenSpool) -> int:
    settings, glitchtip_url, token = _settings_and_token(console)
    try:
        project = ProjectPath.parse(args.project)
    except ValueError as exc:
        raise Usage(f"--project: {exc}") from None
    url = webhook_url(args.relay_url, settings.webhook_secret)
    api = GlitchTipApi(token, glitchtip_url, timeout=REQUEST_TIMEOUT)
    out = console.out
    relay = args.relay_url.rstrip("/")
    silent = _relay_silent(relay)
    if silent is not None:
        print(f"hop 0: the relay at {relay} did not answer from here: {silent}", file=out)
    if _rules_made(api, project, args, url, out):
        raise Failed(
            "a rule of this name sends to another relay: pass --force to point it at this one "
            "(the other stops getting alerts), or --name to give this relay a rule of its own"
        )
    if silent is not None:
        raise Failed(_left_at_silent_relay(relay, silent, tested=args.test))
    if not args.test:
        return 0
    return prove_path(api, project, settings, args, console, open_spool)


def _rules_made(
    api: GlitchTipApi, project: ProjectPath, args: argparse.Namespace, url: str, out: Any
) -> bool:
    """The project's rules (issue alerts, and with --uptime uptime alerts) made to send to
    `url`, each said; whether one was refused (another relay's)."""
    refused = False
    try:
        rules = api.alert_rules(project)
        for uptime in (False, True) if args.uptime else (False,):
            plan = plan_rule(
                rules,
                name=args.name,
                uptime=uptime,
                url=url,
                relay_url=args.relay_url,
                force=args.force,
            )
            refused |= plan.action == "refuse"
            print(_done(api, project, plan, uptime, url), file=out)
    except TrackerError as exc:
        raise Failed(f"{exc}{scope_hint(exc)}") from None
    return refused


def _done(api: GlitchTipApi, project: ProjectPath, plan: RulePlan, uptime: bool, url: str) -> str:
    kind = "uptime alerts" if uptime else "issue alerts (each new issue's first event)"
    what = f"in {project}: {kind} to {shown_webhook_url(url)}"
    before = ", ".join(shown_webhook_url(sent) for sent in plan.sent_to)
    if plan.action == "keep":
        return f"unchanged: alert rule {plan.rule_id} “{plan.body.get('name')}” ({plan.why}) {what}"
    if plan.action == "refuse":
        return (
            f"refused: alert rule {plan.rule_id} “{plan.body.get('name')}” in {project} sends to "
            f"{before}, not this relay's address: left as it is"
        )
    if plan.action == "update":
        assert plan.rule_id is not None
        api.update_alert_rule(project, plan.rule_id, plan.body)
        was = f" (it sent to {before})" if before else ""
        return f"updated: alert rule {plan.rule_id} “{plan.body['name']}” {what}{was}"
    made = api.create_alert_rule(project, plan.body)
    return f"created: alert rule {made.get('id')} “{plan.body['name']}” {what}"


def _relay_silent(relay: str) -> str | None:
    """Why the relay's address gave no HTTP answer from here (any answer will do: /healthz may
    live on the admin listener); None when it answered."""
    try:
        with requests.Session() as session:
            session.mount("http://", DeadlineAdapter(max_retries=0))
            session.mount("https://", DeadlineAdapter(max_retries=0))
            with Deadline(RELAY_ANSWERS_WITHIN):
                session.get(
                    f"{relay}/healthz", timeout=RELAY_ANSWERS_WITHIN, allow_redirects=False
                ).close()
    except requests.RequestException as exc:
        return exc.__class__.__name__
    return None


def _left_at_silent_relay(relay: str, why: str, *, tested: bool) -> str:
    said = (
        f"the alert rule points at {relay}, which did not answer from here ({why})"
        + (": no test event was sent, its webhook would be waited for in vain" if tested else "")
        + ". If GlitchTip reaches the relay at another address than this host does, that is "
        "fine; otherwise fix --relay-url and run this again."
    )
    if loopback(urlsplit(relay).hostname or ""):
        said += f" {LOOPBACK_FIX}"
    return said
