"""Charts asked for in a chat (📈 under a card, `/chart ISSUE`): the issue's events asked of its
source and drawn off the thread that read the press or the command, on this process's few
drawing threads (at most DRAWS_WAITING asked at once: past that, the person is told to ask again),
then queued as a job like every write to the chat: paced, retried, after the chat's alerts,
counted among the answers waiting for it. A chart drawn here is kept CACHED_FOR per issue and time
zone (its hours are the chat's): asked again meanwhile, it goes at once, by the file_id Telegram
gave it once it was sent.

A chart asked for as this process stops is not drawn: the person asks again (it is an answer,
never an alert). When the source cannot be asked, one short reply says so; when the picture
cannot be drawn within its bounds (drawing.py), its numbers go as text.
"""

from __future__ import annotations

import base64
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any, Literal

from ..cards.card import IssueButton
from ..core.drawing import draw
from ..core.errors import DrawingFailed, SpoolError, TrackerError
from ..core.off_thread import OffThread
from ..core.trackers import IssueHistories
from ..delivery.outbox import Outbox
from ..spool.answers import ANSWERS_WAITING
from ..words import Said, Words
from ..words.catalogue import source_shown
from .figure import spec_of
from .series import Series, series_of

log = logging.getLogger(__name__)

KIND = "chart"
# How long a chart drawn here is sent again as it is, per issue.
CACHED_FOR = 60.0
# Charts drawn at once in a process, and asked for at most (drawing or waiting to).
DRAW_THREADS = 2
DRAWS_WAITING = 8
# Answers waiting for a chat past which a chart drawn is not queued. More than a command's
# answer may find (spool/answers.py): the person was told it is on its way when it was asked
# for, and the chat's alerts, which go first, may keep the answers waiting meanwhile.
QUEUED_UNDER = ANSWERS_WAITING + DRAWS_WAITING

Asking = Literal["queued", "drawing", "busy"]


@dataclass(frozen=True)
class ChartAsked:
    """A chart asked for: in which chat and topic, under which message, and of which issue's
    row of which card (the row it shows, with its buttons)."""

    chat: str
    thread: int | None
    reply_to: int
    like: str  # the key of the card's row it copies
    issue: IssueButton


@dataclass(frozen=True)
class Drawn:
    series: Series
    png: bytes | None  # None: it could not be drawn; its numbers go as text
    at: float
    file_id: str | None = None


class Charts:
    def __init__(
        self,
        histories: IssueHistories,
        outbox: Outbox,
        words: Words,
        *,
        zone_of: Callable[[str], tzinfo],
        count: Callable[[str], None] = lambda outcome: None,
        clock: Callable[[], float] = time.time,
        drawing: Callable[[dict[str, Any]], bytes] = draw,
        cached_for: float = CACHED_FOR,
    ) -> None:
        """`words`: the relay's, which the picture's titles are in; `zone_of`: the zone a
        chat reads times in; `drawing`: a spec to PNG bytes (drawing.py's process)."""
        self._histories = histories
        self._outbox = outbox
        self._words = words
        self._zone_of = zone_of
        self._count = count
        self._clock = clock
        self._draw = drawing
        self._cached_for = cached_for
        self._lock = threading.Lock()
        self._drawn: dict[tuple[str, str], Drawn] = {}  # by issue and the zone drawn in
        # The charts being made here, each under its message: asked for again meanwhile (a
        # double tap), it is the same chart.
        self._making: set[tuple[str, int, str]] = set()
        self._worker = OffThread("relay-charts", threads=DRAW_THREADS, most_waiting=DRAWS_WAITING)

    def coming(self, asked: ChartAsked) -> bool:
        """Whether this chart is being made here under that message already."""
        with self._lock:
            return _making(asked) in self._making

    def ask(self, asked: ChartAsked) -> Asking:
        """Queue the chart now when one drawn here is recent; else draw it (off this thread).
        Raises SpoolError (queued now)."""
        drawn = self._recent(self._drawn_key(asked.issue.issue_id, asked.chat))
        if drawn is not None:
            self._count("cached")
            return "queued" if self._queue(asked, drawn) else "busy"
        with self._lock:
            self._making.add(_making(asked))
        if not self._worker.submit(lambda: self._made(asked)):
            with self._lock:
                self._making.discard(_making(asked))
            self._count("busy")
            return "busy"
        return "drawing"

    def sent(self, issue_id: str, chat: str, file_id: str | None) -> None:
        """A chart of the issue reached the chat, Telegram keeping it as `file_id`."""
        self._count("sent" if file_id is not None else "as_text")
        key = self._drawn_key(issue_id, chat)
        with self._lock:
            drawn = self._drawn.get(key)
            if drawn is not None and file_id is not None:
                self._drawn[key] = replace(drawn, file_id=file_id)

    def shutdown(self) -> None:
        self._worker.shutdown()

    def _drawn_key(self, issue_id: str, chat: str) -> tuple[str, str]:
        return issue_id, str(self._zone_of(chat))

    def _recent(self, key: tuple[str, str]) -> Drawn | None:
        now = self._clock()
        with self._lock:
            for old in [k for k, d in self._drawn.items() if now - d.at >= self._cached_for]:
                del self._drawn[old]
            return self._drawn.get(key)

    def _made(self, asked: ChartAsked) -> None:
        """Off the thread that asked: the issue's events asked of its source, drawn, queued."""
        try:
            self._make(asked)
        finally:
            with self._lock:
                self._making.discard(_making(asked))

    def _make(self, asked: ChartAsked) -> None:
        issue = asked.issue
        try:
            history = self._histories.issue_history(issue.org or "", issue.issue_id)
        except (TrackerError, ValueError) as exc:
            log.warning("a chart of %s could not be made: its source said %s", issue.label, exc)
            self._count("unavailable")
            said = Said(
                "chart_unavailable",
                {"label": issue.label, "source": source_shown(self._words, issue.issue_id)},
            )
            self._say(asked, said)
            return
        now = self._clock()
        series = series_of(history, now)
        spec = spec_of(
            series,
            label=issue.label,
            title=issue.title or "",
            words=self._words,
            zone=self._zone_of(asked.chat),
        )
        try:
            png: bytes | None = self._draw(spec)
            self._count("drawn")
        except DrawingFailed as exc:
            log.error("a chart of %s was not drawn (its numbers go as text): %s", issue.label, exc)
            self._count("failed")
            png = None
        drawn = Drawn(series, png, now)
        if png is not None:
            with self._lock:
                self._drawn[self._drawn_key(issue.issue_id, asked.chat)] = drawn
        try:
            self._queue(asked, drawn)
        except SpoolError as exc:
            log.warning("a chart of %s could not be queued: %s", issue.label, exc)

    def _queue(self, asked: ChartAsked, drawn: Drawn) -> bool:
        """The chart's job, under the message it answers. Raises SpoolError."""
        issue = asked.issue
        about: dict[str, object] = {
            "issue": {
                "issue_id": issue.issue_id,
                "origin": issue.origin,
                "label": issue.label,
                "title": issue.title,
                "org": issue.org,
            },
            "like": asked.like,
            "key": secrets.token_urlsafe(9),
            "series": drawn.series.as_json(),
        }
        if drawn.file_id is not None:
            about["file_id"] = drawn.file_id
        elif drawn.png is not None:
            about["png"] = base64.b64encode(drawn.png).decode("ascii")
        queued = self._outbox.answer_with(
            KIND,
            asked.chat,
            asked.thread,
            asked.reply_to,
            {"chart": about},
            most_waiting=QUEUED_UNDER,
        )
        if not queued:
            log.warning(
                "a chart of %s was not queued: %d answers already wait for chat %s",
                issue.label,
                QUEUED_UNDER,
                asked.chat,
            )
            self._count("refused")
        return queued

    def _say(self, asked: ChartAsked, said: Said) -> None:
        """One short reply under the message that asked."""
        try:
            self._outbox.answer(
                asked.chat, asked.thread, asked.reply_to, said, most_waiting=ANSWERS_WAITING
            )
        except SpoolError as exc:
            log.warning("a chart's refusal could not be queued: %s", exc)


def _making(asked: ChartAsked) -> tuple[str, int, str]:
    return (asked.chat, asked.reply_to, asked.issue.issue_id)
