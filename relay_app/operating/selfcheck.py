"""`relay-app check`: is this relay's configuration one that delivers?

Run with the service's environment before trusting a new token or chat. Each check is one
`Verdict`, printed as one line; a failure says what Telegram (or the disk) said and what to do.
Telegram is asked, never guessed at: `getMe` for the token, `getChat` and `getChatMember` for
each chat the relay may post to, `sendChatAction` for the forum topic (the one call that names
a topic without posting in it), and with `--send`, `sendMessage`. With GLITCHTIP_API_TOKEN set,
GlitchTip is asked whether it accepts the token, and Telegram how presses will reach the relay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from ..cards.notices import operator_fix, tracker_notice
from ..core.errors import (
    ChatMigrated,
    DeliveryError,
    SpoolError,
    SpoolMissing,
    SpoolOutdated,
    ThreadNotFound,
    TrackerError,
    TrackerUnreachable,
)
from ..core.logs import register_secret
from ..core.routing import ChatId, Destination, chat_key, parse_chat_id
from ..spool import Spool, open_spool
from ..telegram.client import TelegramClient
from ..telegram.updates_webhook import shown_webhook_url, webhook_path
from ..words import ENGLISH, Words, words_for
from .config import ConfigError, Settings
from .routes_file import last_good_path
from .settings_of import SettingsOf
from .sources import SaysState, sources

# getChatMember's statuses, said plainly; the first four may post in a group (a restricted
# member only if allowed to send).
_STATUSES = {
    "creator": "the bot created it",
    "administrator": "the bot is an administrator",
    "member": "the bot is a member",
    "restricted": "the bot is a restricted member",
    "left": "the bot is not a member",
    "kicked": "the bot was removed from it",
}
_POSTING_STATUSES = {"creator", "administrator", "member", "restricted"}


@dataclass(frozen=True)
class Verdict:
    check: str  # what was checked: "token", "chat -1001234567890", ...
    passed: bool
    found: str  # what was found, or what went wrong
    hint: str | None = None  # for a failure: what to do about it
    # A failure because Telegram (or GlitchTip) could not be reached: no answer about the setup.
    unreached: bool = False


# A capability's checks of its own settings (Sentry's: sentry/check.py), run after the core's.
MoreChecks = Callable[[Settings], Iterator[Verdict]]


def run_checks(
    environ: Mapping[str, str],
    *,
    theirs: Sequence[SettingsOf[Any]],
    send: bool,
    more: Sequence[MoreChecks] = (),
    said: Sequence[SaysState] = (),
) -> Iterator[Verdict]:
    """Every check, in order; those that need something that failed say so and fail too."""
    try:
        settings = Settings.from_env(environ, theirs)
    except ConfigError as exc:
        for variable, problem in exc.problems:
            hint = "fix it and run this again"
            if variable == "RELAY_ROUTES" and (kept := _last_good_routes(environ)) is not None:
                hint += f"; meanwhile {kept}"
            yield Verdict("configuration", False, f"{variable}: {problem}", hint)
        return
    for secret in settings.secrets:
        register_secret(secret)  # nothing this command prints shows them
    yield Verdict("configuration", True, "every variable is set and well-formed")
    # Each source's state, as the relay's start-up line says it: what its variables enable.
    yield Verdict("sources", True, sources(settings, said))
    if settings.spool_url is not None:
        yield _database_verdict(settings.spool_url)
        if settings.local_spool_path is not None:
            yield _local_spool_verdict(settings.local_spool_path)
    else:
        yield _spool_verdict(settings.spool_path)

    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
    try:
        yield from telegram_verdicts(client, settings, send=send)
        yield from _source_verdicts(client, settings, more)
    finally:
        client.close()


def _source_verdicts(
    client: TelegramClient, settings: Settings, more: Sequence[MoreChecks]
) -> Iterator[Verdict]:
    """The capabilities' checks (the sources' tokens first: GlitchTip's, Sentry's), and the
    presses when a source has a token."""
    for checks in more:
        yield from checks(settings)
    if settings.acts_on_issues:
        yield _presses_verdict(client, settings)


def _last_good_routes(environ: Mapping[str, str]) -> str | None:
    """What the relay routes by while the routes file is refused: the last good copy kept
    beside the spool, when there is one."""
    kept = last_good_path(environ)
    if kept is None or not os.path.exists(kept):
        return None
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.path.getmtime(kept)))
    return (
        f"the relay routes by the last good routes, accepted at {at} UTC and kept in {kept} "
        "(a relay started now starts on them)"
    )


def refused_verdict(name: str, exc: TrackerError, where: str) -> Verdict:
    """A source's API that did not answer the check (check `where`: its variable and value),
    or refused it (the operator's fix)."""
    if isinstance(exc, TrackerUnreachable):
        return Verdict(name, False, str(exc), f"check {where}")
    return Verdict(name, False, str(exc), operator_fix(exc) or tracker_notice(exc).text(ENGLISH))


def _presses_verdict(client: TelegramClient, settings: Settings) -> Verdict:
    """Whether Telegram will hand the presses on the buttons to the relay the way it reads them."""
    name = "button presses"
    if settings.telegram_updates == "off":
        return Verdict(name, True, "off (TELEGRAM_UPDATES=off): buttons are sent, presses unread")
    try:
        info = client.get_webhook_info(deadline=time.monotonic() + settings.send_timeout)
    except DeliveryError as exc:
        return Verdict(name, False, str(exc), _hint(exc, settings.telegram_api_url, "updates"))
    url = str(info.get("url") or "")
    expected = webhook_path(settings.webhook_secret)
    if settings.telegram_updates == "poll":
        if url:
            return Verdict(
                name,
                False,
                "TELEGRAM_UPDATES=poll, but Telegram posts this bot's updates to a webhook",
                "run 'relay-app telegram-webhook delete', or set TELEGRAM_UPDATES=webhook",
            )
        return Verdict(name, True, "read by polling (getUpdates), one relay process at a time")
    if not url.endswith(expected):
        shown = shown_webhook_url(url)
        return Verdict(
            name,
            False,
            "TELEGRAM_UPDATES=webhook, but Telegram does not post this bot's updates to the relay"
            + (
                f" (it posts them to {shown}; the relay expects …{shown_webhook_url(expected)})"
                if url
                else ""
            ),
            "run 'relay-app telegram-webhook set https://<the relay's public address>'",
        )
    return Verdict(name, True, f"Telegram posts them to {shown_webhook_url(url)}")


def telegram_verdicts(
    client: TelegramClient, settings: Settings, *, send: bool
) -> Iterator[Verdict]:
    """Telegram's word on the token, each configured chat and the default topic (and with
    `send`, a test message); also asked by each worker at start (setup_watch.py)."""

    def deadline() -> float:
        return time.monotonic() + settings.send_timeout

    api = settings.telegram_api_url
    try:
        me = client.get_me(deadline=deadline())
    except DeliveryError as exc:
        yield Verdict("token", False, str(exc), _hint(exc, api, "token"), _unreached(exc))
        why = (
            "Telegram could not be reached"
            if exc.error_code is None
            else "Telegram did not accept the token"
        )
        yield Verdict("chats", False, f"not checked: {why}")
        return
    bot_id = int(me.get("id", 0))
    proxy = proxy_for(api)
    through = f", through the proxy {proxy}" if proxy else ""
    yield Verdict("token", True, f"the bot is @{me.get('username')} (id {bot_id}){through}")
    default_works = yield from _chat_verdicts(client, settings, bot_id, deadline)
    if not send:
        return
    if not default_works:
        yield Verdict("test message", False, "not sent: the default chat failed its check")
        return
    words = words_for(settings.language)
    yield _test_message_verdict(client, settings.default_destination, deadline, api, words)


@dataclass(frozen=True)
class BotInChat:
    """What Telegram says of a chat (getChat) and of the bot there (getChatMember): what a
    capability's check reads the rights it needs from (`can_manage_topics`, ...)."""

    chat: ChatId
    info: Mapping[str, Any]
    member: Mapping[str, Any]

    def may(self, right: str) -> bool:
        """Whether the bot has an administrator's right here (its creator has every one)."""
        status = self.member.get("status")
        return status == "creator" or (status == "administrator" and self.member.get(right) is True)


def bot_in_chats(
    settings: Settings, places: Iterable[Destination], check: str
) -> Iterator[BotInChat | Verdict]:
    """Telegram's word on each chat of these places (once each) and the bot in it, or a failed
    `check` naming why it could not be asked."""
    chats = list({place.chat_key: place.chat for place in places}.values())
    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)

    def deadline() -> float:
        return time.monotonic() + settings.send_timeout

    api = settings.telegram_api_url
    try:
        try:
            bot_id = int(client.get_me(deadline=deadline()).get("id", 0))
        except DeliveryError as exc:
            yield Verdict(check, False, str(exc), _hint(exc, api, "token"), _unreached(exc))
            return
        for chat in chats:
            try:
                info = client.get_chat(chat, deadline=deadline())
                member = client.get_chat_member(chat, bot_id, deadline=deadline())
            except DeliveryError as exc:
                name = f"{check} in chat {chat}"
                yield Verdict(name, False, str(exc), _hint(exc, api, "chat"), _unreached(exc))
                continue
            yield BotInChat(chat, info, member)
    finally:
        client.close()


def _chats(settings: Settings) -> list[ChatId]:
    """Every chat the relay may write to, each once: the default, the allowed, the routes'."""
    chats: list[ChatId] = [settings.default_destination.chat]
    chats += sorted(
        (chat for key in settings.allowed_chat_ids if (chat := parse_chat_id(key)) is not None),
        key=str,
    )
    known = {chat_key(chat) for chat in chats}
    return chats + [chat for chat in settings.routes.chats if chat_key(chat) not in known]


def _chat_verdicts(
    client: TelegramClient, settings: Settings, bot_id: int, deadline: Callable[[], float]
) -> Generator[Verdict, None, bool]:
    """Each configured chat's verdict (and the default topic's); whether the default chat
    works."""
    default = settings.default_destination
    topics = _topics(settings)
    default_works = False
    for chat in _chats(settings):
        verdict, info = _chat_verdict(client, chat, bot_id, deadline, settings.telegram_api_url)
        yield verdict
        if chat == default.chat:
            default_works = verdict.passed
        if not verdict.passed:
            continue
        for thread, named_by in topics.get(chat_key(chat), {}).items():
            where = Destination(chat, thread)
            yield _topic_verdict(client, where, info, deadline, settings.telegram_api_url, named_by)
    return default_works


def _topics(settings: Settings) -> dict[str, dict[int, str]]:
    """The forum topics the relay posts to, by chat: each with what names it (the variable,
    or the first route that does), for the fix."""
    default = settings.default_destination
    topics: dict[str, dict[int, str]] = {}
    if default.thread is not None:
        topics[chat_key(default.chat)] = {default.thread: "TELEGRAM_THREAD_ID"}
    for route in settings.routes.routes:
        if route.thread is None or route.drop:
            continue
        chat = route.chat if route.chat is not None else default.chat
        named_by = f"route {route.name!r}'s thread in RELAY_ROUTES"
        topics.setdefault(chat_key(chat), {}).setdefault(route.thread, named_by)
    return topics


def _test_message_verdict(
    client: TelegramClient,
    default: Destination,
    deadline: Callable[[], float],
    api: str,
    words: Words,
) -> Verdict:
    try:
        sent = client.send_message(
            default.chat,
            words.test_message,
            html=True,
            thread_id=default.thread,
            deadline=deadline(),
        )
    except DeliveryError as exc:
        return Verdict("test message", False, str(exc), _hint(exc, api, "send"))
    where = default.describe()
    return Verdict("test message", True, f"posted to {where} (message {sent.get('message_id')})")


def _chat_verdict(
    client: TelegramClient,
    chat: ChatId,
    bot_id: int,
    deadline: Callable[[], float],
    api: str,
) -> tuple[Verdict, dict[str, Any]]:
    name = f"chat {chat}"
    try:
        info = client.get_chat(chat, deadline=deadline())
        member = client.get_chat_member(chat, bot_id, deadline=deadline())
    except DeliveryError as exc:
        return Verdict(name, False, str(exc), _hint(exc, api, "chat"), _unreached(exc)), {}
    kind = str(info.get("type", "chat"))
    title = info.get("title") or info.get("username") or info.get("first_name") or ""
    described = f"{kind} {title!r}" + (" (forum)" if info.get("is_forum") else "")
    status = str(member.get("status", "unknown"))
    standing = _STATUSES.get(status, f"the bot's status is {status!r}")
    cannot = _cannot_post(kind, status, member)
    if cannot is not None:
        where, fix = cannot
        return Verdict(name, False, f"{described}: {standing}, and cannot post {where}", fix), info
    return Verdict(name, True, f"{described}; {standing}"), info


def _cannot_post(kind: str, status: str, member: dict[str, Any]) -> tuple[str, str] | None:
    """Where the bot cannot post, and the fix; None when it can."""
    if kind == "channel" and not (status == "creator" or member.get("can_post_messages")):
        return (
            "in the channel",
            "make the bot an administrator of the channel with the right to post messages",
        )
    if status not in _POSTING_STATUSES or member.get("can_send_messages") is False:
        return (
            "there",
            "add the bot to the group again (Group info → Add members), or lift its "
            "restriction on sending messages",
        )
    return None


def _topic_verdict(
    client: TelegramClient,
    destination: Destination,
    chat_info: dict[str, Any],
    deadline: Callable[[], float],
    api: str,
    named_by: str,
) -> Verdict:
    """`named_by`: where the topic is set (TELEGRAM_THREAD_ID, or a route), which the fix names."""
    name = f"topic {destination.thread} of chat {destination.chat}"
    if not chat_info.get("is_forum"):
        return Verdict(
            name,
            False,
            "the chat is not a forum, so it has no topics",
            f"turn on Topics in the group's settings, or unset {named_by}",
        )
    try:
        client.send_chat_action(destination.chat, thread_id=destination.thread, deadline=deadline())
    except DeliveryError as exc:
        hint = _hint(exc, api, "topic").replace("TELEGRAM_THREAD_ID", named_by)
        return Verdict(name, False, str(exc), hint, _unreached(exc))
    return Verdict(name, True, "the topic exists")


def _spool_verdict(path: str | None) -> Verdict:
    if path is None:
        return Verdict(
            "spool",
            True,
            "off (RELAY_SPOOL_PATH=off): alerts waiting for a retry are lost if the relay stops",
        )
    if not os.path.exists(path):
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            return Verdict(
                "spool",
                False,
                f"{path} cannot be created: the directory {directory} does not exist",
                f"create it (mkdir -p {directory}) and let the relay's user write there, or set "
                "RELAY_SPOOL_PATH to a file in a directory that exists",
            )
        if os.access(directory, os.W_OK):
            return Verdict("spool", True, f"{path} does not exist yet; the relay creates it")
        return Verdict(
            "spool",
            False,
            f"{path} does not exist, and {directory} is not writable by this user",
            "run the relay as a user who may write there, or set RELAY_SPOOL_PATH to a "
            "file in a writable directory",
        )
    return _counts_verdict(
        _admin(path=path),
        "fix the file's permissions, or set RELAY_SPOOL_PATH to a file in a writable directory",
    )


def _local_spool_verdict(path: str) -> Verdict:
    """This host's own file beside the spool in PostgreSQL: what waits there, which only the
    spool's failing to take alerts in time puts there."""
    name = "local spool"
    if not os.path.exists(path):
        return Verdict(name, True, f"{path}: nothing has waited here (the relay creates it)")
    local = open_spool(path=path, for_service=False)
    assert local is not None
    try:
        waiting = local.admin.counts()["pending"]
    except SpoolMissing:
        waiting = 0
    except SpoolError as exc:
        return Verdict(name, False, str(exc), "let the relay's user read and write the file")
    finally:
        local.close()
    if not waiting:
        return Verdict(name, True, f"{path}: no alert waits here")
    return Verdict(
        name,
        True,
        f"{path}: {waiting} alert(s) wait here, which the spool could not take in time; the "
        "relay sends them from here, and moves them into the spool when it answers again",
    )


def _database_verdict(url: str) -> Verdict:
    return _counts_verdict(
        _admin(url=url),
        "check RELAY_SPOOL_URL (host, port, user, password, database), that the database "
        "exists (CREATE DATABASE), and that PostgreSQL accepts this host (pg_hba.conf)",
    )


def _admin(*, path: str | None = None, url: str | None = None) -> Spool:
    spool = open_spool(path=path, url=url, for_service=False)
    assert spool is not None  # one of the two is given
    return spool


def _counts_verdict(opened: Spool, hint: str) -> Verdict:
    """What the spool holds, either kind, and when GlitchTip last reached a relay on it; `hint`
    for when it cannot be read."""
    spool = opened.admin
    try:
        counts = opened.admin.counts()
        last_webhook = opened.arrivals.last()
    except SpoolMissing:
        return Verdict(
            "spool", True, f"{spool.path}: no spool yet; the relay creates it when it starts"
        )
    except SpoolOutdated:
        return Verdict("spool", True, f"{spool.path}: the relay upgrades it when it next starts")
    except SpoolError as exc:
        return Verdict("spool", False, str(exc), hint)
    finally:
        opened.close()
    found = f"{spool.path}: {counts['pending']} pending, {counts['dead']} dead"
    if counts["dead"]:
        found += "; see them with: relay-app spool list --dead"
    found += f"; {webhook_seen(last_webhook, time.time())}"
    return Verdict("spool", True, found)


def webhook_seen(last: float | None, now: float) -> str:
    """When GlitchTip last reached the relay, as `relay-app check` says it."""
    if last is None:
        return (
            "no webhook accepted yet: if GlitchTip has sent alerts, they did not reach the relay "
            "(relay-app glitchtip connect --test proves the whole path)"
        )
    when = datetime.fromtimestamp(last, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"last webhook accepted {when} UTC ({ENGLISH.duration(max(0.0, now - last))} ago)"


def proxy_for(url: str) -> str | None:
    """The proxy requests takes for `url` from the environment (HTTPS_PROXY, ALL_PROXY, less
    NO_PROXY), without its user and password; None when it goes direct."""
    proxy = requests.utils.select_proxy(url, requests.utils.get_environ_proxies(url))
    if not proxy:
        return None
    parts = urlsplit(proxy)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def _unreached(error: DeliveryError) -> bool:
    return error.error_code is None or error.error_code >= 500 or error.error_code == 429


def _unreachable_hint(api: str, doing: str) -> str:
    """Telegram did not answer (through this host's proxy or not), or, after getMe, not this."""
    if doing != "token":
        return (
            "Telegram answered getMe just before but not this in time (slow, or the answer "
            "was lost): run the check again"
        )
    proxy = proxy_for(api)
    if proxy is not None:
        return (
            f"Telegram is unreachable at {api} through the proxy {proxy} (HTTPS_PROXY or "
            "ALL_PROXY): check that the proxy runs and reaches Telegram, or point "
            "TELEGRAM_API_URL at a Bot API server or reverse proxy this host can reach"
        )
    return (
        f"Telegram is unreachable at {api} from this host: if it reaches the internet "
        "through a proxy, set HTTPS_PROXY (http:// or socks5h://); or point "
        "TELEGRAM_API_URL at a Bot API server or reverse proxy it can reach"
    )


def _hint(error: DeliveryError, api: str, doing: str) -> str:
    """What to do about the known failures; for the rest, Telegram's own words must do."""
    description = str(getattr(error, "description", "")).lower()
    code = error.error_code
    if code is None:
        return _unreachable_hint(api, doing)
    if isinstance(error, ChatMigrated):
        return (
            f"the group became a supergroup with id {error.new_chat_id}: set TELEGRAM_CHAT_ID "
            f"(or TELEGRAM_ALLOWED_CHAT_IDS and GlitchTip's ?chat_id=) to {error.new_chat_id}"
        )
    if code in (401, 404) and doing == "token":
        return (
            "Telegram does not know this token: copy it again from @BotFather (/mybots → your "
            "bot → API Token) into TELEGRAM_BOT_TOKEN; a revoked token stops working"
        )
    if isinstance(error, ThreadNotFound):
        return (
            "the forum topic does not exist: open it in Telegram, copy a message link "
            "(t.me/c/<chat>/<topic>/<message>) and set TELEGRAM_THREAD_ID to its <topic> number"
        )
    if "chat not found" in description:
        return (
            "the bot cannot see this chat: add the bot to the group (or make it an admin of "
            "the channel), and check the id (groups are negative; supergroups start with -100;"
            " relay-app chats lists the chats the bot has seen)"
        )
    if code == 403:
        return (
            "the bot was removed from the group or blocked: add it to the group again (or "
            "unblock it in the private chat)"
        )
    if code == 429:
        return "Telegram asks this bot to slow down: run the check again in a minute"
    return "Telegram's own description above says what it refused"
