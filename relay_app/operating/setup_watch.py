"""The fleet's leader (delivery/leadership.py) asks Telegram whether the relay's setup works: the
token, every chat it may post to, the default topic (the questions `relay-app check` asks,
selfcheck.py), on a thread of its own, off the webhook's path, each question within
RELAY_SEND_TIMEOUT. What it finds is kept in the spool (spool/setup_found.py), so every
process's /readyz and gauges say the same. The other processes wait; one asks for itself only
when the spool cannot say what was found (it cannot be used: nobody can lead).

A refusal (a wrong token, a chat that does not exist or has no room for the bot, a missing
topic) would otherwise show only when the first real alert dies. It is an ERROR naming the
variable and its fix, `relay_telegram_setup_ok` 0 (a rule alerts on it), and a line in /readyz's
body. Readiness stays 200: alerts are still taken and kept in the spool, and a retry sends them
once the setup is fixed. While refused it asks again every RECHECK_EVERY seconds, so a bot added
to the group later is noticed without a restart.

A Telegram that cannot be reached at all (no route, a proxy that is missing or down, DNS) is
the other silent failure: the relay would start, say it is ready, and the team learn of it from
the first alert that fails. Until Telegram first answers in the leader's term, it is an ERROR
naming where the relay tried (the API URL, the proxy) and what to check,
`relay_telegram_reachable` 0, and /readyz 503 with the reason. Meanwhile the leader does not ask
again itself: it tells the relay's health that Telegram is failing, and the relay's one prober
(delivery/health.py: one question every 2 s, whatever the number of workers) says when it
answers; then it asks its questions again (`telegram_answers`, looked at every
Timing.reach_again). Unreachable is getMe's: a later question left unanswered in a round where
getMe was answered is a WARNING, asked again later.

Each ERROR is said once a leader's term, by the leader: once per relay, and again when another
process comes to lead (a restart, a handover), as a restart said it before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..core.errors import DeliveryError, SpoolError
from ..core.process import OwnThread
from ..core.timing import PRODUCTION
from ..spool.database import MEMORY, Database
from ..spool.setup_found import Found, SetupFound
from ..telegram.client import TelegramClient
from .config import Settings
from .selfcheck import Verdict, telegram_verdicts

if TYPE_CHECKING:
    from prometheus_client.core import Metric

log = logging.getLogger(__name__)

RECHECK_EVERY = 60.0
REACH_AGAIN_EVERY = PRODUCTION.reach_again
# How its requests name themselves (a proxy's log, the tests' fake Telegram tell them apart).
USER_AGENT = "relay_app start-up check"

# How a round of questions ended (SetupWatch._ask).
Round = Literal["settled", "again", "unreached"]


@dataclass(frozen=True)
class AskAgain:
    """When the check asks again: while Telegram refuses something or left a question
    unanswered (`refused`), and, while it could not be reached, how often it looks whether
    the relay's prober heard Telegram since (`unreached`); how often a process that does not
    lead looks whether the spool can say what the leader found (`spool`: coming to lead wakes
    it at once, so this is only for a spool that cannot be used, which nobody leads)."""

    refused: float = RECHECK_EVERY
    unreached: float = REACH_AGAIN_EVERY
    spool: float = REACH_AGAIN_EVERY


@dataclass(frozen=True)
class Fleet:
    """Where what the check finds is kept for every process (the spool; this process's memory
    without one), and whether this process leads the fleet, and so asks for it."""

    found: SetupFound
    leads: Callable[[], bool] = lambda: True


@dataclass(frozen=True)
class Reach:
    """What the check tells the relay's health, and reads of it: that Telegram cannot be
    reached (the prober asks from then on), and whether the prober heard it since."""

    failing: Callable[[], None] = lambda: None
    answers: Callable[[], bool] = lambda: True


def variable_for(check: str, settings: Settings) -> str:
    """The variable a check's result depends on: 'chat -100…' is TELEGRAM_CHAT_ID's when it
    is the default chat, one of TELEGRAM_ALLOWED_CHAT_IDS', or else a route's (RELAY_ROUTES)."""
    if check == "token":
        return "TELEGRAM_BOT_TOKEN"
    if check.startswith("topic "):
        return "TELEGRAM_THREAD_ID"
    if check == f"chat {settings.default_destination.chat}":
        return "TELEGRAM_CHAT_ID"
    allowed = {f"chat {chat}" for chat in settings.allowed_chat_ids}
    return "TELEGRAM_ALLOWED_CHAT_IDS" if check in allowed else "RELAY_ROUTES"


class SetupWatch(OwnThread):
    thread_name = "relay-setup"

    def __init__(
        self,
        settings: Settings,
        fleet: Fleet | None = None,
        *,
        client: Callable[[], TelegramClient] | None = None,
        ask_again: AskAgain = AskAgain(),
        reach: Reach = Reach(),
        commands: Callable[[], Sequence[Mapping[str, str]]] = lambda: (),
    ) -> None:
        """`commands`: the chat's commands, with their descriptions, registered (setMyCommands)
        once Telegram answers (asked then: the capabilities that answer them start after this
        watch is made)."""
        self._settings = settings
        fleet = fleet or Fleet(SetupFound(Database(MEMORY)))
        self._found, self._leads = fleet.found, fleet.leads
        self._look_every = ask_again.spool
        self._client = client or (
            lambda: TelegramClient(
                settings.telegram_api_url, settings.telegram_bot_token, user_agent=USER_AGENT
            )
        )
        self._recheck_every = ask_again.refused
        self._reach_again_every = ask_again.unreached
        self._failing = reach.failing
        self._telegram_answers = reach.answers
        self._commands = commands
        self._start_in_this_process()

    def _start_over(self) -> None:
        super()._start_over()
        self._refused: list[str] | None = None  # None: not answered yet
        # Why Telegram could not be reached at the last try, until it first answers.
        self._unreached: str | None = None
        self._commands_registered = False
        # Set when this process comes to lead (`came_to_lead`): it asks at once, not at its
        # next look.
        self._led = threading.Event()

    def came_to_lead(self) -> None:
        """This process leads the fleet's chores now (delivery/leadership.py tells it)."""
        self._here()
        self._led.set()

    def _stopping(self) -> None:
        self._led.set()

    def _shared(self) -> Found:
        """What the leader found (this process's own finding when the spool cannot say)."""
        self._here()
        try:
            return self._found.read()
        except SpoolError:
            with self._lock:
                return Found(
                    tuple(self._refused) if self._refused is not None else None, self._unreached
                )

    def problems(self) -> list[str]:
        """What Telegram refuses, one line each ('TELEGRAM_CHAT_ID: …'); empty when it
        accepts everything or has not answered yet."""
        return list(self._shared().refused or [])

    def unreachable(self) -> str | None:
        """Why Telegram cannot be reached (where the relay tried, and what to check), while it
        has not answered in the leader's term; else None."""
        return self._shared().unreached

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        found = self._shared()
        refused, unreached = found.refused, found.unreached
        gauge = GaugeMetricFamily(
            "relay_telegram_setup_ok",
            "1 when Telegram accepts the relay's token, chats and topic (asked at start, and "
            "again each minute while it refuses); 0 while it refuses one: /readyz and the log "
            "say which variable to fix",
        )
        if refused is not None:  # not answered yet: neither ok nor refused, so no sample
            gauge.add_metric([], 0 if refused else 1)
        yield gauge
        reachable = GaugeMetricFamily(
            "relay_telegram_reachable",
            "0 while Telegram has not answered the start-up check since this process started "
            "(no route, proxy, DNS: the log and /readyz say where the relay tried); 1 once it has",
        )
        if refused is not None or unreached is not None:
            reachable.add_metric([], 0 if refused is None else 1)
        yield reachable

    def _asks(self) -> bool:
        """Whether this process asks for the fleet now: it leads, or the spool cannot say what
        the leader found (nobody leads a spool that cannot be used)."""
        if self._leads():
            return True
        try:
            self._found.read()
        except SpoolError:
            return True
        return False

    def _loop(self) -> None:
        while not self._asks():
            self._led.wait(self._look_every)
            self._led.clear()
            if self._stop.is_set():
                return
        with self._lock:  # a term of its own: what it finds is said again, as at a start
            self._refused, self._unreached = None, None
        while not self._stop.is_set():
            try:
                round_ = self._ask()
            except Exception:  # a bug here must not end the checks for good
                log.exception("asking Telegram about the relay's setup failed")
                round_ = "unreached"
            if round_ == "settled":
                return
            if round_ == "again":
                self._stop.wait(self._recheck_every)
                continue
            while not self._stop.wait(self._reach_again_every) and not self._telegram_answers():
                pass

    def _ask(self) -> Round:
        """One round of questions: settled when Telegram accepts everything, again when it
        refuses something or left a question unanswered, unreached when getMe went unanswered."""
        client = self._client()
        try:
            verdicts = list(telegram_verdicts(client, self._settings, send=False))
            token = verdicts[0]
            if token.unreached:
                self._record_unreached(token)
                # From now on the relay's one prober asks. Told before the round's connection
                # closes: whoever sees the round end (a proxy's log, the tests' fake) sees the
                # relay already holding its alerts, never about to.
                self._failing()
                return "unreached"
        finally:
            client.close()
        self._record_reached()
        self._register_commands()
        refused, unanswered = _refused_and_unanswered(verdicts)
        for verdict in unanswered:
            log.warning(
                "Telegram did not answer the start-up check's question about %s (%s): asked "
                "again in %g s",
                verdict.check,
                verdict.found,
                self._recheck_every,
            )
        self._record(refused)
        return "again" if refused or unanswered else "settled"

    def _register_commands(self) -> None:
        """The chat's commands, so that Telegram offers them as people type `/`: once a process,
        the first time Telegram answers (the same list from every worker)."""
        commands = [dict(command) for command in self._commands()]
        if not commands or self._commands_registered:
            return
        client = self._client()
        try:
            client.call(
                "setMyCommands",
                {"commands": commands},
                deadline=time.monotonic() + self._settings.send_timeout,
            )
            self._commands_registered = True
        except DeliveryError as exc:
            log.warning("the chat's commands could not be registered with Telegram: %s", exc)
        finally:
            client.close()

    def _record_unreached(self, verdict: Verdict) -> None:
        with self._lock:
            if self._refused is not None:
                return  # it answered once: an outage since is the delivery's to report
            was, self._unreached = self._unreached, f"{verdict.found}; {verdict.hint}"
        self._share()
        if was is None:  # said once, not at each try
            log.error(
                "TELEGRAM UNREACHABLE: %s. Alerts are kept in the spool meanwhile and sent once "
                "it answers; /readyz says not ready until then",
                self._unreached,
            )

    def _record_reached(self) -> None:
        with self._lock:
            was, self._unreached = self._unreached, None
        self._share()
        if was is not None:
            log.info("Telegram answers the start-up check now: the relay is ready")

    def _record(self, refused: list[Verdict]) -> None:
        lines = [f"{variable_for(v.check, self._settings)}: {v.check}: {v.found}" for v in refused]
        with self._lock:
            was, self._refused = self._refused, lines
        self._share()
        if lines != (was or []):  # said once, not each minute
            for line, verdict in zip(lines, refused, strict=True):
                _report(line, verdict)
        if not lines and was:
            log.info("Telegram now accepts the relay's setup (token, chats and topic)")

    def _share(self) -> None:
        """What this term found, for every process's /readyz and gauges."""
        with self._lock:
            refused = tuple(self._refused) if self._refused is not None else None
            found = Found(refused, self._unreached)
        try:
            self._found.record(found)
        except SpoolError as exc:  # the spool says why; the next round records it again
            log.debug("what the start-up check found could not be kept now: %s", exc)


def _refused_and_unanswered(verdicts: list[Verdict]) -> tuple[list[Verdict], list[Verdict]]:
    """What Telegram refused, and what it left unanswered, in a round where it answered getMe:
    the latter (slow, a 429, a 5xx) says nothing against the route to it, nor the setup."""
    unanswered = [v for v in verdicts if v.unreached]
    refused = [v for v in verdicts if not v.passed and v not in unanswered]
    return [v for v in refused if not v.found.startswith("not checked")], unanswered


def _report(line: str, verdict: Verdict) -> None:
    log.error(
        "TELEGRAM REFUSES THE SETUP: %s%s. Alerts are kept in the spool meanwhile and sent once "
        "it is fixed (relay-app spool retry for those that died); relay-app check shows the "
        "whole setup",
        line,
        f"; fix: {verdict.hint}" if verdict.hint else "",
    )
