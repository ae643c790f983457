"""The in-process tier's stand-ins and steps: a Telegram a test scripts (or one that keeps
Telegram's rate limits on the test's clock), what the view does with a webhook, and numbered
alerts. The relays themselves are `assemble()`d by the `built` fixture (conftest.py) and their
background work run on fake time by `run_background`."""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable, Sequence

from relay_app import Relay
from relay_app.core.errors import RateLimited
from relay_app.core.outcomes import Outcome
from relay_app.core.routing import Destination
from relay_app.glitchtip.webhook import parse_alert
from relay_app.message.formatting import Message, format_alert
from relay_app.words import ENGLISH
from tests.conftest import DESTINATION, FakeTime
from tests.payloads import issue, issue_alert
from tests.telegram_rules import RateLimits

MESSAGE = format_alert(parse_alert(issue_alert(issue(1))), ENGLISH)


class ScriptedTelegram:
    """Telegram as a test scripts it: sendMessage fails with the given errors, then succeeds
    (or fails `forever`); getMe answers while `answers` says so. Notes when each call came,
    on the test's clock."""

    def __init__(
        self,
        *errors: BaseException,
        forever: BaseException | None = None,
        clock: FakeTime | None = None,
        answers: bool | Callable[[], bool] = True,
        takes: Sequence[float] = (),
    ) -> None:
        """`takes`: how long after each send is begun (the first, the second, ...) it reaches
        Telegram and is answered (a busy host, a slow network), on `clock`; 0 for the rest."""
        self.takes = list(takes)
        self.errors = list(errors)
        self.forever = forever
        self.clock = clock
        self.answers = answers
        self.delivered: list[Message] = []
        # Where each delivered message went, and when Telegram had it (with a `clock`).
        self.accepted_to: list[Destination] = []
        self.accepted_at: list[float] = []
        self.destinations: list[Destination] = []
        self.times: list[float] = []
        self.probe_times: list[float] = []
        self.calls = 0
        self._lock = threading.Lock()

    def deliver(self, message: Message, destination: Destination, extras: object = None) -> None:
        with self._lock:
            self.calls += 1
            self.destinations.append(destination)
            if self.clock is not None:
                self.clock.now += self.takes.pop(0) if self.takes else 0.0
                self.times.append(self.clock.now)  # when it reached Telegram
            if self.errors:
                raise self.errors.pop(0)
            if self.forever is not None:
                raise self.forever
            self.delivered.append(message)
            self.accepted_to.append(destination)
            if self.clock is not None:
                self.accepted_at.append(self.clock.now)

    def probe(self) -> bool:
        with self._lock:
            if self.clock is not None:
                self.probe_times.append(self.clock.now)
        return self.answers() if callable(self.answers) else self.answers

    def edit(self, chat: str, message_id: int, html_text: str, keyboard: object) -> None:
        raise AssertionError("these tests send nothing that is edited later")

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None:
        raise AssertionError("these tests have no buttons to press")


class LimitedTelegram(ScriptedTelegram):
    """Telegram keeping its rate limits on the test's clock (tests/telegram_rules.py, as the
    fake Telegram server does on real time): a message that would break one is refused with a
    429 and Telegram's retry_after, and noted in `refused`."""

    def __init__(self, clock: FakeTime) -> None:
        super().__init__(clock=clock)
        self.limits = RateLimits(clock)
        self.refused: list[tuple[float, Destination]] = []

    def deliver(self, message: Message, destination: Destination, extras: object = None) -> None:
        with self._lock:
            wait = self.limits.wait(str(destination.chat))
            if wait is not None:
                assert self.clock is not None
                self.refused.append((self.clock.now, destination))
                raise RateLimited(f"Too Many Requests: retry after {wait}", retry_after=wait)
        super().deliver(message, destination, extras)


def webhook(
    relay: Relay, message: Message = MESSAGE, to: Destination = DESTINATION
) -> Outcome | None:
    """What the view does: admit, and attempt when the alert may go now. None: it waits."""
    started = time.monotonic()
    admission = relay.intake.admit(message, to, started=started)
    assert admission is not None
    if admission.claim is None:
        return None
    return relay.intake.attempt(admission, started=started).outcome


def waits(telegram: ScriptedTelegram, since: float) -> list[float]:
    """The pauses before each attempt, the first counted from `since`."""
    times = [since, *telegram.times]
    return [round(later - earlier, 3) for earlier, later in itertools.pairwise(times)]


def numbered(count: int, *, title_length: int = 0) -> list[Message]:
    return [
        format_alert(
            parse_alert(issue_alert(issue(n, title=f"Error {n} " + "x" * title_length))), ENGLISH
        )
        for n in range(1, count + 1)
    ]


def title_numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Error (\d+)\b", text)]
