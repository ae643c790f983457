"""The boards kept: the fleet's leader looks at each every LOOK_EVERY seconds and, when its text
would change, queues one write of it (one waits at most: those asked for while it waits are
that one), at most one every EVERY seconds, after the chat's alerts, calls and edits. So a
storm costs a board at most 60 / EVERY edits a minute, whatever the alerts.

The write is made when it goes, from the board as it stands then: an edit of the board's
message, or, where there is none yet, or it was deleted, or (where the chat keeps one board)
it is no longer the chat's pinned message, a new one, pinned silently after. A right to pin
that the bot lacks is said once at ERROR, and the board still goes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import tzinfo
from typing import Any

from ..core.errors import DeliveryError, PermanentDeliveryError, SpoolError, Unreadable
from ..core.issue_details import Hourly
from ..core.json_values import json_int, json_object
from ..core.routing import Destination
from ..core.sources import Sources
from ..delivery.job import Delivery
from ..delivery.outbox import Outbox, chat_lane
from ..delivery.render import Call, Renderer
from ..message.subjects import Alerted, alerted_in
from ..spool.model import Job, Precedence
from ..spool.store import Tx
from ..telegram.courier import Telegram
from ..words import Words
from .store import Board, BoardStore
from .text import board_text, digest_of

log = logging.getLogger(__name__)

Clock = Callable[[], float]
KIND = "board"
EVERY = 15.0  # at most one write of a board this often
LOOK_EVERY = 5.0
HELD_FOR = 900.0  # after Telegram refused a board's write, the next one


def left_behind(job: Job, renderer: Renderer) -> None:
    """A board's write left in the spool while boards are off: nothing to do."""
    return None


class Boards:
    def __init__(
        self,
        store: BoardStore,
        outbox: Outbox,
        telegram: Telegram,
        places: Sequence[Destination],
        *,
        sources: Sources,
        zone_of: Callable[[str], tzinfo],
        hourly: Hourly | None,
        count: Callable[[str], None],
        clock: Clock,
        every: float = EVERY,
        look_every: float = LOOK_EVERY,
        held_for: float = HELD_FOR,
    ) -> None:
        """`every`: at most one write of a board this often; `look_every`: how often the
        boards are looked at; `held_for`: how long after Telegram refused one none is
        queued."""
        self._look_every = look_every
        self._held_for = held_for
        self._store = store
        self._sources = sources
        self._outbox = outbox
        self._telegram = telegram
        self._places = tuple(places)
        self._zone_of = zone_of
        self._hourly = hourly
        self._count = count
        self._clock = clock
        self._every = every
        self._next = 0.0  # on the clock
        chats = [place.chat_key for place in self._places]
        # Where a chat keeps one board, its pinned message tells whether the board still is.
        self._alone = {chat for chat in chats if chats.count(chat) == 1}

    # --- the leader's upkeep --------------------------------------------------------------

    def upkeep(self, words: Words) -> None:
        now = self._clock()
        if self._next - self._look_every <= now < self._next:  # a step back: look now
            return
        self._next = now + self._look_every
        for place in self._places:
            try:
                self._look_at(place, words, now)
            except SpoolError as exc:  # the spool said why; the next look tries again
                log.debug("the board of %s could not be looked at now: %s", place.describe(), exc)

    def _look_at(self, place: Destination, words: Words, now: float) -> None:
        """One write of the board queued, when its text would change and its time has come."""
        board = self._store.board(place, now=now)
        if board.edited_at is not None and now - board.edited_at < self._every:
            return
        if board.held_until is not None and now < board.held_until:
            return
        text, _ = self._text(place, board, words, now)
        if board.message_id is None or digest_of(text) != board.shown:
            self._queue(place)

    def _queue(self, place: Destination, **about: Any) -> None:
        """The board's write (a pin, when `about` names it: never merged with a write of its
        text that waits)."""
        lane = chat_lane(str(place.chat), f"{KIND}:{place.thread or 0}")
        once = not about
        self._outbox.write(
            KIND, str(place.chat), place.thread, 0, about, Precedence.EDIT, lane=lane, once=once
        )

    # --- after a delivery -------------------------------------------------------------------

    def follow_up(self, delivery: Delivery) -> Callable[[Tx], None] | None:
        """The issues of an alert sent where a board lists them (the place its route sends to,
        though it went to a topic of the issue's own)."""
        noted: list[tuple[Destination, list[Alerted]]] = []
        for job in delivery.jobs:
            place = Destination(job.destination.chat, job.destination.thread)
            alerted = alerted_in(job.data, self._sources) if place in self._places else []
            if alerted:
                noted.append((place, alerted))
        if not noted:
            return None

        def note(tx: Tx) -> None:
            for place, alerted in noted:
                self._store.note(tx, place, alerted)

        return note

    # --- the write, when it goes --------------------------------------------------------------

    def write(self, job: Job, renderer: Renderer) -> Call | None:
        place = Destination(job.destination.chat, job.destination.thread)
        pin = job.data.get("pin")
        if pin is not None:
            message_id = json_int(pin)
            if message_id is None:
                raise Unreadable(f"a board's pin of {pin!r}")
            return self._pin(place, message_id)
        now = self._clock()
        board = self._store.board(place, now=now)
        text, clear = self._text(place, board, renderer.words, now)
        pinned = not board.pinned or self._still_pinned(place, board.message_id)
        if board.message_id is not None and pinned:
            return self._edit(place, board.message_id, text, clear)
        return self._post(place, text, clear)

    def _text(self, place: Destination, board: Board, words: Words, now: float) -> tuple[str, bool]:
        """The board's text as it stands now (its message as kept: `board`), and whether no
        issue is open."""
        issues = self._store.open_issues(place, now=now)
        text = board_text(
            issues,
            self._events([issue.issue_id for issue in issues]),
            clear_since=board.clear_since if board.clear_since is not None else now,
            now=now,
            zone=self._zone_of(str(place.chat)),
            words=words,
        )
        return text, not issues

    def _events(self, issue_ids: Sequence[str]) -> Mapping[str, int]:
        """Each issue's events in the last hour, as the watcher last read them."""
        if self._hourly is None:
            return {}
        found = {}
        for issue_id in issue_ids:
            hours = self._hourly(issue_id)
            if hours:
                found[issue_id] = int(hours[-1])
        return found

    def _still_pinned(self, place: Destination, message_id: int | None) -> bool:
        """Whether the board the relay pinned is still its chat's pinned message (asked only
        where the chat keeps one board; when Telegram cannot say, it is taken to be)."""
        if message_id is None or place.chat_key not in self._alone:
            return True
        try:
            chat = self._telegram.call(str(place.chat), "getChat", {})
        except DeliveryError:
            return True
        pinned = json_int(json_object(chat.get("pinned_message")).get("message_id"))
        if pinned == message_id:
            return True
        log.warning(
            "the board in %s is no longer its pinned message (unpinned, or another pinned "
            "since): posting and pinning a new one",
            place.describe(),
        )
        self._count("unpinned")
        return False

    def _edit(self, place: Destination, message_id: int, text: str, clear: bool) -> Call:
        chat = str(place.chat)

        def done(result: Mapping[str, Any]) -> None:
            self._store.shown(place, message_id, digest_of(text), clear=clear, now=self._clock())
            self._count("edited")

        def refused(error: PermanentDeliveryError) -> bool:
            said = error.description.lower()
            if "not modified" in said:
                done({})
                return True
            if "message to edit not found" in said:
                log.warning("the board in %s was deleted: posting a new one", place.describe())
                self._count("deleted")
                self._store.lost(place, now=self._clock())
                self._queue(place)
                return True
            return self._held(place, error)

        params = {
            "message_id": message_id,
            "text": text,
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": True},
        }
        return Call(
            chat, "editMessageText", params, done, refused, f"the board of {place.describe()}"
        )

    def _post(self, place: Destination, text: str, clear: bool) -> Call:
        chat = str(place.chat)

        def done(result: Mapping[str, Any]) -> None:
            message_id = json_int(result.get("message_id"))
            if message_id is None:
                return
            self._store.shown(place, message_id, digest_of(text), clear=clear, now=self._clock())
            self._count("posted")
            self._queue(place, pin=message_id)

        params: dict[str, Any] = {
            "text": text,
            "parse_mode": "HTML",
            "disable_notification": True,
            "link_preview_options": {"is_disabled": True},
        }
        if place.thread is not None:
            params["message_thread_id"] = place.thread
        return Call(
            chat,
            "sendMessage",
            params,
            done,
            lambda error: self._held(place, error),
            f"the board of {place.describe()}",
        )

    def _held(self, place: Destination, error: PermanentDeliveryError) -> bool:
        """Telegram refused the board's write: said at ERROR, and none is queued for a while
        (the chat's alerts are not the board's to crowd out with refusals)."""
        self._count("refused")
        self._store.hold(place, self._held_for, now=self._clock())
        log.error(
            "BOARD NOT UPDATED in %s (%s): the relay writes it again in %d minutes",
            place.describe(),
            error,
            max(1, round(self._held_for / 60)),
        )
        return True

    def _pin(self, place: Destination, message_id: int) -> Call:
        chat = str(place.chat)

        def done(result: Mapping[str, Any]) -> None:
            self._store.pinned(place, message_id, now=self._clock())
            self._count("pinned")

        def refused(error: PermanentDeliveryError) -> bool:
            self._count("not_pinned")
            log.error(
                "BOARD NOT PINNED in chat %s (%s): it is kept up to date where it is; to pin "
                "it, make the bot an administrator with the right to pin messages "
                "(can_pin_messages)",
                chat,
                error,
            )
            return True

        params = {"message_id": message_id, "disable_notification": True}
        return Call(chat, "pinChatMessage", params, done, refused, "the board's pin")
