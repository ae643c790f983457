"""The in-process tier's stand-ins and steps: a Telegram a test scripts (or one that keeps
Telegram's rate limits on the test's clock), what the view does with a webhook, and numbered
alerts. The relays themselves are `assemble()`d by the `built` fixture (conftest.py) and their
background work run on fake time by `run_background`."""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from relay_app import Relay
from relay_app.cards.card import SentMessage
from relay_app.cards.sent import SentStore
from relay_app.cards.verbs import CALLS
from relay_app.chat.links import LINKS
from relay_app.core.alerts import ALERT_KEY, alert_as_json
from relay_app.core.errors import PermanentDeliveryError, RateLimited
from relay_app.core.outcomes import Outcome
from relay_app.core.routing import Destination
from relay_app.glitchtip.settings import GlitchTipConfig
from relay_app.intake.hold import HELD_NOTED
from relay_app.intake.pages import Page
from relay_app.intake.receive import deadline
from relay_app.message.formatting import Message
from relay_app.oncall.steps import Escalation
from relay_app.summaries.daily import DailySummaries
from relay_app.telegram.courier import Picture, Sent
from relay_app.watch.watcher import WATCHER, Round, Watcher
from relay_app.words import ENGLISH
from tests.conftest import DESTINATION, SOURCES, FakeTime, glitchtip_on, run_background
from tests.payloads import issue, issue_alert, message_for, read
from tests.taking import cards_of
from tests.telegram_rules import RateLimits

PAYLOAD = issue_alert(issue(1))
# Its message as the relay renders it when it sends it.
MESSAGE = message_for(PAYLOAD, ENGLISH, sources=SOURCES)


class ScriptedTelegram:
    """Telegram as a test scripts it, the one stand-in of the in-process tier: each write
    (sendMessage, editMessageText, a reply, a reaction) fails with the given errors in turn,
    then succeeds (or fails `forever`); getMe answers while `answers` says so; a press's
    answer is noted. Notes when each write came, on the test's clock."""

    def __init__(
        self,
        *errors: BaseException,
        forever: BaseException | None = None,
        clock: FakeTime | None = None,
        answers: bool | Callable[[], bool] = True,
        takes: Sequence[float] = (),
        reactions: bool = True,
    ) -> None:
        """`takes`: how long after each write is begun (the first, the second, ...) it reaches
        Telegram and is answered (a busy host, a slow network), on `clock`; 0 for the rest.
        `reactions` False: the chat takes none (Telegram refuses them, 400)."""
        self.takes = list(takes)
        self.errors = list(errors)
        self.forever = forever
        self.clock = clock
        self.answers = answers
        self.reactions_on = reactions
        self.delivered: list[Message] = []
        self.extras: list[object] = []  # each delivered message's (its buttons, its sound)
        # Where each delivered message went, and when Telegram had it (with a `clock`).
        self.accepted_to: list[Destination] = []
        self.accepted_at: list[float] = []
        self.destinations: list[Destination] = []
        # Every write's method, as it was tried, in order.
        self.writes: list[str] = []
        self.edits: list[tuple[str, int, str, Any]] = []
        self.replies: list[tuple[str, int | None, int, str]] = []
        self.replies_silent: list[bool] = []  # each reply's: sent without sound
        self.replies_html: list[str | None] = []  # each reply's HTML, when it calls by link
        self.reactions: list[tuple[str, int, str]] = []
        self.answered: list[tuple[str, str, bool]] = []
        self.times: list[float] = []
        self.probe_times: list[float] = []
        self.calls = 0  # sendMessage's
        # The Bot API's other writes (forum topics, pins), as (chat, method, parameters); a
        # method in `refusing` is refused with its error, whatever it is asked.
        self.other_calls: list[tuple[str, str, dict[str, Any]]] = []
        self.refusing: dict[str, BaseException] = {}
        self.pinned: dict[str, int] = {}  # by chat, the message pinned last
        # Photos sent, where; those refused (their text went instead); captions edited.
        self.photos: list[tuple[Destination, Picture]] = []
        self.photos_refused: list[Picture] = []
        self.caption_edits: list[tuple[str, int, str, Any]] = []
        self._lock = threading.Lock()
        self._message_ids = itertools.count(1)
        self._thread_ids = itertools.count(1000)

    def _write(self, method: str, chat: str) -> None:
        """A write begun: it takes its time, then fails as scripted. Called under the lock."""
        self.writes.append(method)
        if self.clock is not None:
            self.clock.now += self.takes.pop(0) if self.takes else 0.0
            self.times.append(self.clock.now)  # when it reached Telegram
        self._gate(chat)
        if self.errors:
            raise self.errors.pop(0)
        if self.forever is not None:
            raise self.forever

    def _gate(self, chat: str) -> None:
        """What Telegram's limits say of a write to `chat` now (nothing: no limits)."""

    def deliver(self, message: Message, destination: Destination, extras: object = None) -> Sent:
        with self._lock:
            self.calls += 1
            self.destinations.append(destination)
            self._write("sendMessage", str(destination.chat))
            self.delivered.append(message)
            self.extras.append(extras)
            self.accepted_to.append(destination)
            if self.clock is not None:
                self.accepted_at.append(self.clock.now)
            return Sent(str(destination.chat), next(self._message_ids), message.html)

    def edit(
        self,
        chat: str,
        message_id: int,
        html_text: str,
        keyboard: object,
        *,
        caption: bool = False,
    ) -> None:
        with self._lock:
            self._write("editMessageCaption" if caption else "editMessageText", chat)
            self.edits.append((chat, message_id, html_text, keyboard))
            if caption:
                self.caption_edits.append((chat, message_id, html_text, keyboard))

    def send_photo(self, photo: Picture, destination: Destination) -> tuple[Sent, str | None]:
        """A photo kept as sent, its file_id 'file-N'; with sendPhoto in `refusing`, its text
        as a message instead (as the courier does)."""
        with self._lock:
            self._write("sendPhoto", str(destination.chat))
            message_id = next(self._message_ids)
            if "sendPhoto" in self.refusing:
                self.photos_refused.append(photo)
                self.other_calls.append((str(destination.chat), "sendMessage", {}))
                return Sent(str(destination.chat), message_id, photo.instead), None
            self.photos.append((destination, photo))
            return Sent(str(destination.chat), message_id, photo.caption), f"file-{message_id}"

    def reply(
        self,
        chat: str,
        thread: int | None,
        message_id: int,
        text: str,
        *,
        silent: bool = False,
        html: str | None = None,
    ) -> None:
        with self._lock:
            self._write("sendMessage (reply)", chat)
            self.replies.append((chat, thread, message_id, text))
            self.replies_silent.append(silent)
            self.replies_html.append(html)

    def react(self, chat: str, message_id: int, emoji: str) -> None:
        with self._lock:
            self._write("setMessageReaction", chat)
            if not self.reactions_on:
                raise PermanentDeliveryError(
                    "Telegram refused setMessageReaction (400): REACTION_INVALID",
                    error_code=400,
                    description="Bad Request: REACTION_INVALID",
                )
            self.reactions.append((chat, message_id, emoji))

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None:
        with self._lock:
            self.answered.append((callback_query_id, text, alert))

    def call(self, chat: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """A forum topic made answers its new id; a message sent, its id; getChat, the message
        pinned last; the rest, true."""
        with self._lock:
            self._write(method, chat)
            if method in self.refusing:
                raise self.refusing[method]
            self.other_calls.append((chat, method, dict(params)))
            if method == "createForumTopic":
                return {"message_thread_id": next(self._thread_ids), "name": params["name"]}
            if method == "pinChatMessage":
                self.pinned[chat] = int(params["message_id"])
            if method == "getChat" and chat in self.pinned:
                return {"pinned_message": {"message_id": self.pinned[chat]}}
            if method == "sendMessage":
                return {"message_id": next(self._message_ids)}
            return {}

    def probe(self) -> bool:
        with self._lock:
            if self.clock is not None:
                self.probe_times.append(self.clock.now)
        return self.answers() if callable(self.answers) else self.answers


def refused(
    method: str, description: str, kind: type[PermanentDeliveryError] = PermanentDeliveryError
) -> PermanentDeliveryError:
    """Telegram's 400 to `method`, as the client makes it of the answer's description."""
    return kind(
        f"Telegram refused {method} (400): {description.removeprefix('Bad Request: ')}",
        error_code=400,
        description=description,
    )


class LimitedTelegram(ScriptedTelegram):
    """Telegram keeping its rate limits on the test's clock (tests/telegram_rules.py, as the
    fake Telegram server does on real time), for sends and edits alike: a write that would
    break one is refused with a 429 and Telegram's retry_after, and noted in `refused`."""

    def __init__(self, clock: FakeTime) -> None:
        super().__init__(clock=clock)
        self.limits = RateLimits(clock)
        self.refused: list[tuple[float, str]] = []

    def _gate(self, chat: str) -> None:
        wait = self.limits.wait(chat)
        if wait is not None:
            assert self.clock is not None
            self.refused.append((self.clock.now, chat))
            raise RateLimited(f"Too Many Requests: retry after {wait}", retry_after=wait)


def webhook(
    relay: Relay, payload: dict[str, Any] = PAYLOAD, to: Destination = DESTINATION
) -> Outcome | None:
    """What the view does: queue the alert, and wait for its first attempt when it may go
    now. None: it waits."""
    started = time.monotonic()
    job = relay.alert_queue.admit(
        {ALERT_KEY: alert_as_json(read(payload))}, to, by=deadline(started), text=text_of(payload)
    )
    assert job is not None
    return relay.attempts.first_attempt(job, by=deadline(started)).outcome


def text_of(payload: dict[str, Any]) -> str:
    """A webhook's alert's text, as the relay renders it in English."""
    return message_for(payload, ENGLISH, sources=SOURCES).text


def waits(telegram: ScriptedTelegram, since: float) -> list[float]:
    """The pauses before each attempt, the first counted from `since`."""
    times = [since, *telegram.times]
    return [round(later - earlier, 3) for earlier, later in itertools.pairwise(times)]


def numbered(count: int, *, title_length: int = 0) -> list[dict[str, Any]]:
    """Webhooks of one issue each, numbered from 1 in their titles (`title_numbers`)."""
    return [
        issue_alert(issue(n, title=f"Error {n} " + "x" * title_length)) for n in range(1, count + 1)
    ]


def title_numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Error (\d+)\b", text)]


# --- acting from the chat ------------------------------------------------------------------------

GLITCHTIP = "https://gt.example.org"


def alone(number: int, title: str) -> dict[str, object]:
    """An issue alone, as the watcher keeps it: its attachment and its section."""
    link = f"{GLITCHTIP}/acme/issues/{number}"
    payload = issue_alert(issue(number, title=title, link=link))
    payload["sections"][0]["activitySubtitle"] = f"[View Issue BACKEND-{number}A]({link})"
    return {"attachments": payload["attachments"], "sections": payload["sections"]}


GT_TOKEN = "a1" * 32
# GlitchTip's variables as an in-process relay's tests set them: its token, and where its API is.
GLITCHTIP_ON = GlitchTipConfig(GT_TOKEN, GLITCHTIP)


def press_by_ada(data: str, update_id: int, *, message_id: int = 41) -> dict[str, object]:
    """Ada's press on a button (its callback `data`) under the default chat's message."""
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"press-{update_id}",
            "from": {"id": 7, "is_bot": False, "first_name": "Ada", "username": "ada"},
            "message": {"message_id": message_id, "chat": {"id": -1001234567890}},
            "data": data,
        },
    }


@dataclass
class Chat:
    """One chat as a test sees it: the relay with its buttons (a GlitchTip token at GLITCHTIP)
    acting on the updates the test gives it, presses and replies, and the scripted Telegram
    that every write goes to, once the relay's dispatcher has sent what was queued."""

    relay: Relay
    telegram: ScriptedTelegram
    clock: FakeTime

    @classmethod
    def of(
        cls,
        built: Callable[..., Relay],
        clock: FakeTime,
        *cards: SentMessage,
        telegram: ScriptedTelegram | None = None,
        glitchtip: GlitchTipConfig | None = GLITCHTIP_ON,
        **overrides: Any,
    ) -> Chat:
        """`cards`: the messages with buttons the relay sent before, kept in its spool;
        `glitchtip`: GlitchTip's variables (GLITCHTIP_ON unless given; None: none set), beside
        the other capabilities' (`theirs`)."""
        telegram = telegram or ScriptedTelegram(clock=clock)
        theirs = (*glitchtip_on(glitchtip), *overrides.pop("theirs", ()))
        relay = built(telegram, **{"details_budget": None, "theirs": theirs, **overrides})
        assert relay.spool is not None
        for card in cards:
            relay.spool.of(SentStore).keep(card, [])
        return cls(relay, telegram, clock)

    @property
    def store(self) -> SentStore:
        """The cards, as the relay reads them (with the capabilities' marks: who is on it)."""
        assert self.relay.spool is not None
        return cards_of(self.relay.spool)

    def update(self, update: dict[str, Any]) -> None:
        """One of Telegram's updates, as the poller or the webhook hands it on."""
        assert self.relay.updates is not None
        self.relay.updates(update)

    def settle(self) -> None:
        """The links' look-ups under way ended, then every write queued so far sent, each when
        its turn comes (on the test's clock)."""
        if (links := self.relay.services.find(LINKS)) is not None:
            assert links.look_ups.wait_idle(timeout=10)
        run_background(self.relay.dispatcher, self.clock)

    def watcher_round(self, at: float) -> Round:
        """The watcher's round at `at` (one process's for the fleet), then what it queued sent."""
        self.clock.now = at
        done = watcher_of(self.relay).round()
        self.settle()
        return done

    def answered(self) -> list[tuple[str, bool]]:
        return [(text, alert) for _, text, alert in self.telegram.answered]


def escalation_of(relay: Relay) -> Escalation:
    """On call's escalation, as the relay started it (the calls it provides)."""
    found = relay.services.find(CALLS)
    assert isinstance(found, Escalation)
    return found


def summaries_of(relay: Relay) -> DailySummaries:
    """The daily summaries, as the relay started them (they count what silences hold)."""
    found = relay.services.find(HELD_NOTED)
    assert isinstance(found, DailySummaries)
    return found


def watcher_of(relay: Relay) -> Watcher:
    """The watcher, as the relay started it (with a source's token and a spool)."""
    found = relay.services.find(WATCHER)
    assert found is not None
    return found


def sentry_page_of(relay: Relay) -> Page | None:
    """Sentry's page, as its capability makes it once the relay is assembled (None without
    SENTRY_CLIENT_SECRET)."""
    made = [page for make in relay.running.pages if (page := make()) is not None]
    return made[0] if made else None
