"""What a claim's jobs write to the chat, made when they are sent, from what each is about
(spool/model.py's `Job.data`), in the relay's language, by the code running now: a change of
wording needs no step of the spool's schema, and a tool that queues a job (`relay-app silence
expire`) queues data, never text in its own language.

- An alert is its webhook's alert as its source's page read it (core/alerts.py; a job queued
  before it was kept so keeps its source's body, read by the first source), with its issues'
  details from their source's API when they came before its first attempt, and whom its route
  calls; or, for an alert queued before jobs held data, the message it was rendered into
  then; or a shape a capability registered when the relay was assembled (`Shape`: a silence's
  summary, a daily summary, an on-call handoff, a link's card), told by the key of its data.
  A capability may add a first line to a webhook's message from its data (`Note`: the
  watcher's re-post). Several go as a digest (message/digest.py).
- A card's edit is its record's state when the edit goes, as the cards' capability makes it
  (`Edits`, cards/edits.py): the edits of one card waiting together make one write.
- A reply, and a reaction (with the reply that says the same where reactions are off), are
  words of the catalogue with their values (`Said`).

An alert renders the same at every attempt: its data does not change once one was made, and
its time is the time it arrived. Pure but for the card's record, which it reads.
"""

from __future__ import annotations

import html
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import tzinfo
from itertools import takewhile
from typing import Any

from ..core.alerts import ALERT_KEY, KEPT_BODY_KEY, Alert, IssueAlert
from ..core.errors import PermanentDeliveryError, Unreadable
from ..core.issue_details import IssueDetails, details_by_issue, details_from_json
from ..core.json_values import json_int
from ..core.routing import ChatId
from ..core.sources import Sources
from ..message.digest import compose, how_many_fit
from ..message.formatting import (
    Entry,
    Message,
    linked_people,
    message_for,
    with_first_line,
    with_mentions,
    with_note,
)
from ..message.lines import from_json as lines_from_json
from ..message.spans import visible
from ..message.subjects import NO_HOMES, IssueHomes, Subjects, split_by_origin
from ..routes.sound import Sound, levels_of
from ..spool.model import JOB_KINDS, Job, Precedence
from ..telegram.courier import Picture, Sent
from ..words import Said, Words
from .mentions import Mentioned, OnCall

log = logging.getLogger(__name__)

# What a log line shows of a job that cannot be rendered, at most (characters of its data).
KEPT_SHOWN = 8192
# Alerts rendered, kept for the claims that follow (each claim measures what fits again).
KEPT_RENDERED = 1000


@dataclass(frozen=True)
class Send:
    """A message: one alert, or a digest of several (`alerts`, each as rendered alone, for
    the buttons and threads that go with them)."""

    message: Message
    alerts: tuple[Message, ...]
    silent: bool = False  # without sound: every alert's route says so now (routes/sound.py)

    @property
    def text(self) -> str:
        return self.message.text


@dataclass(frozen=True)
class Edit:
    """A card as its record says it stands now; None in `keyboard`: no buttons. `caption`:
    the card is a photo, whose caption is edited (within Telegram's 1,024 characters)."""

    chat: str
    message_id: int
    html: str
    keyboard: dict[str, Any] | None
    caption: bool = False

    @property
    def text(self) -> str:
        return visible(self.html)


@dataclass(frozen=True)
class ReplyUnder:
    """A short plain-text reply under a message of the chat."""

    chat: str
    thread: int | None
    message_id: int
    text: str
    silent: bool = False  # an answer to what someone typed: it never rings
    # The same as HTML, where it calls people without a username (a link Telegram notifies).
    html: str | None = None


@dataclass(frozen=True)
class Reaction:
    """A reaction on a message; `instead` says the same where the chat takes no reactions."""

    chat: str
    message_id: int
    emoji: str
    instead: ReplyUnder

    @property
    def text(self) -> str:
        return self.emoji


@dataclass(frozen=True)
class Call:
    """One of the Bot API's other writes, as a capability makes it (a forum topic made, closed
    or renamed, a message pinned): the method and its parameters, what to keep of Telegram's
    answer once it came (`done`, given its `result`), and which refusals are its own to
    handle (`refused`: True when it handled one, and the job is done; False: the job's
    ordinary fate, given up named). Either runs on the dispatcher's pool, after the request."""

    chat: str
    method: str
    params: Mapping[str, Any]
    done: Callable[[Mapping[str, Any]], None] = lambda result: None
    refused: Callable[[PermanentDeliveryError], bool] = lambda error: False
    # What a log line says of it (never its parameters, which may hold a person's words).
    said: str = ""

    @property
    def text(self) -> str:
        return self.said or self.method


@dataclass(frozen=True)
class Photo:
    """A picture a capability sends (a chart): a PNG's bytes, or the file_id of one Telegram
    keeps, with its caption (HTML, within 1,024 characters) and buttons, under a message of
    the chat in the job's topic. Where Telegram refuses the photo, its text (`instead`, HTML)
    goes as a message with the same buttons: nothing is lost. `done` is given where it went,
    and the file_id Telegram keeps of the picture (None: it went as text); it runs on the
    dispatcher's pool, after the request."""

    picture: Picture
    done: Callable[[Sent, str | None], None] = lambda sent, file_id: None

    @property
    def text(self) -> str:
        return f"{self.picture.said}: {visible(self.picture.caption)}"


Write = Send | Edit | ReplyUnder | Reaction | Call | Photo
# A card's edit as its record stands now (chat, message id, the relay's words); None when the
# card is no longer kept.
Edits = Callable[[str, int, Words], Edit | None]


@dataclass(frozen=True)
class Shape:
    """An alert that is not a webhook's, as its capability registers it: the key of its data
    that names it, how its message is made (`render` may ask the renderer for a webhook's
    message), and whether it goes alone, never in a digest."""

    key: str
    render: Callable[[Job, Renderer], Message]
    alone: bool = False


@dataclass(frozen=True)
class Note:
    """A first line a capability puts above a webhook's message, from the value its job's data
    holds under `key` (the watcher's re-post of an escalating issue)."""

    key: str
    line: Callable[[object, Words], str | None]


@dataclass(frozen=True)
class Writer:
    """A kind of write to the chat a capability adds: the job kind it queues (never one of
    JOB_KINDS), and what a job of it writes when it goes, one of the Bot API's writes the
    courier makes (None: nothing is left to write). Its jobs go alone, paced and retried as
    every write; raising Unreadable gives the job up, named."""

    kind: str
    write: Callable[[Job, Renderer], Write | None]


@dataclass(frozen=True)
class Added:
    """What the capabilities add to what jobs write, registered when the relay is assembled:
    shapes of alert, notes above a webhook's message, kinds of write, and how a card's edit
    is made."""

    shapes: Sequence[Shape] = ()
    notes: Sequence[Note] = ()
    edits: Edits | None = None
    writers: Sequence[Writer] = ()


class Renderer:
    def __init__(
        self,
        words: Words,
        *,
        sources: Sources,
        late_after: float,
        coalesce: bool = True,
        buttons_at: IssueHomes = NO_HOMES,
        hidden_named_at: str | None = None,
        on_call: OnCall | None = None,
        added: Added | None = None,
        names_sources: bool = False,
    ) -> None:
        """`sources`: whose issues a webhook's links name (core/sources.py); `coalesce` False:
        one alert a message (RELAY_COALESCE=0); `buttons_at`: the sources' origins, when issues
        get buttons (only those whose links are a source's own); `hidden_named_at`: the origin
        whose alerts' issues left out are named in a message of their own (glitchtip/hidden.py);
        `names_sources`: two sources are configured, so a message names its own."""
        added = added or Added()
        on_call = on_call or OnCall()
        self.words = words
        self._shapes = {shape.key: shape for shape in added.shapes}
        self._notes = tuple(added.notes)
        self._writers = {writer.kind: writer for writer in added.writers}
        self._edits = added.edits
        self._zone = on_call.zone
        self._places = on_call.places
        self._mentioned = on_call.mentioned
        self._names = on_call.names
        self._late_after = late_after
        self._coalesce = coalesce
        self._sources = sources
        self._buttons_at = buttons_at
        self._hidden_named_at = hidden_named_at
        self._names_sources = names_sources
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[object, ...], Message] = OrderedDict()

    def alert(self, job: Job) -> Message:
        """The alert's message, as every attempt of it sends it. Raises Unreadable."""
        # What it is about changes only by the details its first attempt may gain; its id is
        # unique in its store (this process's memory, or the spool: a spool started afresh
        # numbers from 1 again, hence its time too).
        key = (job.label, job.received_at, frozenset(job.data.get("details") or ()))
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        message = self._alert(job)
        with self._lock:
            self._kept[key] = message
            while len(self._kept) > KEPT_RENDERED:
                self._kept.popitem(last=False)
        return message

    @property
    def mentioned(self) -> Mentioned:
        """Whom mentions name when a message goes (`oncall:NAME`: who is on duty then)."""
        return self._mentioned

    def card(self, chat: str, message_id: int) -> Edit | None:
        """A card of the chat as its record stands now (its text and buttons); None when it
        is no longer kept, or the relay keeps no cards."""
        return self._edits(chat, message_id, self.words) if self._edits is not None else None

    def zone_of(self, chat: ChatId) -> tzinfo:
        """The zone `chat` reads the times a message says in (routes/zones.py)."""
        return self._places.of(chat)

    def how_many(self, jobs: list[Job]) -> int:
        """How many of these jobs, oldest first, go in one write: a card's edits waiting
        together, as one; alerts, as many as fit one digest (one when an alert must go alone);
        anything else alone."""
        first = jobs[0]
        if first.kind == "card":
            return sum(1 for _ in takewhile(lambda job: job.kind == "card", jobs))
        if first.kind != "alert" or not self._coalesce or self._alone(first):
            return 1
        fresh = list(takewhile(lambda job: job.kind == "alert" and not self._alone(job), jobs))
        try:
            return how_many_fit([self.alert(job) for job in fresh], self.words)
        except Unreadable:
            return 1  # each alone, so the unreadable one fails alone

    def _alone(self, job: Job) -> bool:
        """An alert on its second chance goes alone, with a line saying it may repeat an
        earlier message; so does an uptime monitor's recovery, a reply to the message of its
        outage; a link's card, each the answer to its own link; and one this relay cannot
        read, which fails alone."""
        if job.second_chance or any(
            shape.alone for key, shape in self._shapes.items() if key in job.data
        ):
            return True
        try:
            return self.alert(job).subjects.recovery
        except Unreadable:
            return True

    def write(self, jobs: Sequence[Job], *, now: float) -> Write | None:
        """What these jobs (one claim's) write; None when there is nothing left to write (a
        card no longer kept). Raises Unreadable."""
        first = jobs[0]
        if first.kind == "alert":
            return self._send(jobs, now)
        if first.kind == "card":
            return self._edit(first)
        if (writer := self._writers.get(first.kind)) is not None:
            return writer.write(first, self)
        if first.kind not in JOB_KINDS:
            raise Unreadable(f"a job of kind {first.kind!r}, which this relay does not know")
        try:
            said = Said.from_json(first.data.get("say")).text(self.words)
        except KeyError as exc:
            raise Unreadable(str(exc)) from None
        chat = str(first.destination.chat)
        answer = first.precedence == Precedence.ANSWER
        shown, marked = self._people_in(said, first, now, answer=answer)
        reply = ReplyUnder(
            chat,
            first.destination.thread,
            number(first.data),
            shown,
            answer,
            marked if marked is not None and marked != html.escape(shown, quote=False) else None,
        )
        if first.kind == "reply":
            return reply
        return Reaction(chat, reply.message_id, str(first.data.get("emoji", "")), reply)

    def _people_in(
        self, said: str, job: Job, now: float, *, answer: bool
    ) -> tuple[str, str | None]:
        """A reply's words with the people it calls: each `oncall:NAME` the person on duty,
        and each `tg:<id>` a link to them (a call names people by link; an answer to what
        someone typed never does: its words may be theirs). When the people cannot be worked
        out, the words as they are, said in the log."""
        try:
            said = self._mentioned.named_in(said, now)  # an escalation's people
            return (said, None) if answer else linked_people(said, self._names, self.words)
        except Exception:
            log.exception(
                "whom %s %s calls could not be worked out: it goes as written", job.kind, job.label
            )
            return said, None

    def text_of(self, job: Job, *, now: float) -> str:
        """What the job would write, for a log line that must say it: when that cannot be made,
        the reason and what the job holds, as it is kept (a given-up job's words are in the log
        whatever went wrong)."""
        try:
            write = self.write([job], now=now)
        except Exception as exc:
            kept = json.dumps(job.data, ensure_ascii=False, default=str)[:KEPT_SHOWN]
            return f"(unreadable: {exc}; as kept: {kept})"
        return write.text if write is not None else "(nothing: the card is no longer kept)"

    def about(self, job: Job, *, now: float) -> str:
        """What a job is about, for the operator's table (`relay-app spool list`): an alert's
        first line and its issues' titles (never the note of a second chance, which its write
        begins with); another job's text."""
        if job.kind != "alert":
            return self.text_of(job, now=now)
        try:
            message = self.alert(job)
        except Unreadable as exc:
            return f"(unreadable: {exc})"
        titles = [issue.title for issue in message.subjects.issues if issue.title]
        if not titles:
            return message.text
        return "\n".join([message.text.splitlines()[0], *titles])

    # --- each kind ------------------------------------------------------------------------

    def _send(self, jobs: Sequence[Job], now: float) -> Send:
        alerts = tuple(self.alert(job) for job in jobs)
        message = compose(
            alerts,
            [job.received_at for job in jobs],
            self.words,
            now=now,
            late_after=self._late_after,
            zone=self.zone_of(jobs[0].destination.chat),
        )
        message = self._calling(message, alerts, jobs[0].label, now)
        if any(_maybe_seen(job) for job in jobs):
            words = self.words
            repeat = words.repeat_note if len(jobs) == 1 else words.repeat_note_digest
            message = with_first_line(message, repeat)
        # A digest rings when any of its alerts would; an answer to what someone typed (a
        # link's card) never does.
        silent = not any(
            self._rings(job, now) for job in jobs if job.precedence != Precedence.ANSWER
        )
        return Send(message, alerts, silent)

    def _calling(
        self, message: Message, alerts: Sequence[Message], label: str, now: float
    ) -> Message:
        """The message calling whom its alerts' routes call, once each however many alerts call
        them. When that cannot be worked out (a cover or a name the spool holds that cannot be
        read), the alert goes without the call, and says so in itself and in the log: what
        people typed never costs an alert."""
        called = list(dict.fromkeys(m for alert in alerts for m in alert.subjects.mentions))
        try:
            people = self._mentioned.named_now(called, now)
            return with_mentions(message, people, self.words, self._names(people))
        except Exception:
            log.exception(
                "whom alert %s calls (%s) could not be worked out: it goes without the call",
                label,
                ", ".join(called),
            )
            return with_note(message, self.words.mentions_lost)

    def _rings(self, job: Job, now: float) -> bool:
        sound = Sound.from_json(job.data.get("sound"))
        if sound is None:
            return True
        return sound.rings(now, _levels(job.data, self._sources), self._zone)

    def _edit(self, job: Job) -> Edit | None:
        if self._edits is None:
            return None
        return self._edits(str(job.destination.chat), number(job.data), self.words)

    def _alert(self, job: Job) -> Message:
        data = job.data
        if ALERT_KEY in data or KEPT_BODY_KEY in data:
            return self._webhook(job)
        for key, shape in self._shapes.items():
            if key in data:
                return shape.render(job, self)
        if "rendered" in data:
            return _rendered(data["rendered"])
        raise Unreadable(
            f"alert {job.label} holds none of "
            + ", ".join([ALERT_KEY, KEPT_BODY_KEY, *self._shapes, "rendered"])
        )

    def _webhook(self, job: Job) -> Message:
        try:
            alert = self._sources.alert_kept_in(job.data)
        except Unreadable as exc:
            raise Unreadable(f"alert {job.label}: {exc}") from None
        assert alert is not None  # it keeps one of the two keys
        details = details_by_issue(job.data.get("details"))
        mentions = tuple(str(m) for m in job.data.get("mentions") or ())
        message = self.webhook(
            alert,
            mentions,
            details=details,
            received_at=job.received_at,
            again=bool(job.data.get("again")),
        )
        return self._noted(message, job.data)

    def _noted(self, message: Message, data: Mapping[str, Any]) -> Message:
        """The message under the first lines the capabilities' notes put above it."""
        for note in self._notes:
            if note.key not in data:
                continue
            try:
                line = note.line(data[note.key], self.words)
            except Exception:
                # A note is a detail: one that cannot be read costs itself, never the alert.
                log.exception("the %r note of an alert could not be read: left out", note.key)
                continue
            if line:
                message = replace(with_first_line(message, line), subjects=message.subjects)
        return message

    @property
    def sources(self) -> Sources:
        """Whose issues the alerts' links name (core/sources.py)."""
        return self._sources

    def webhook(
        self,
        alert: Alert,
        mentions: Sequence[str] = (),
        *,
        details: Mapping[str, IssueDetails] | None = None,
        received_at: float,
        vetted: bool = True,
        again: bool = False,
    ) -> Message:
        """A webhook's alert as its job renders it (`details`: its issues' from their source's
        API, by issue id): its issues whose links are not their source's own get no buttons;
        with `vetted` False, every issue it names is among its subjects still (for the
        webhook to say which are not)."""
        message = message_for(
            alert,
            self.words,
            sources=self._sources,
            details=details,
            now=received_at,
            names_hidden_at=self._hidden_named_at,
            again=again,
            names_source=self._names_sources,
        )
        subjects = message.subjects
        if self._buttons_at and vetted:
            subjects, _ = split_by_origin(subjects, self._buttons_at)
        return replace(message, subjects=replace(subjects, mentions=tuple(mentions)))


def _levels(data: Mapping[str, Any], sources: Sources) -> set[str]:
    """The levels an alert's issues may have: from their source's API where its details came
    for every issue, else what their shades may mean too (routes/sound.py). An alert that
    cannot be read is said so when it is rendered; here it names no level, and rings."""
    try:
        alert = sources.alert_kept_in(data)
    except Unreadable:
        alert = None
    issues = alert.issues if isinstance(alert, IssueAlert) else ()
    known: list[tuple[str | None, str]] = [
        (level, "") for level in _known_levels(data.get("details"))
    ]
    if len(known) < len(issues):
        known += [(None, issue.shade) for issue in issues]
    return levels_of(known)


def _known_levels(raw: object) -> list[str]:
    if not isinstance(raw, dict):
        return []
    found = (details_from_json(value) for value in raw.values())
    return [details.level for details in found if details is not None and details.level]


def number(data: Mapping[str, Any]) -> int:
    """The message a job writes to or under (its data's `message_id`). Raises Unreadable."""
    number = json_int(raw := data.get("message_id"))
    if number is None:
        raise Unreadable(f"no message id: {raw!r}")
    return number


def _rendered(raw: object) -> Message:
    """An alert queued before jobs held data: the message it was rendered into then."""
    if not isinstance(raw, dict) or not isinstance(raw.get("html"), str):
        raise Unreadable("a rendered alert without its HTML")

    def entry(html_key: str, text_key: str) -> Entry | None:
        html = raw.get(html_key)
        return Entry(html, str(raw.get(text_key) or "")) if isinstance(html, str) else None

    return Message(
        html=raw["html"],
        text=str(raw.get("text") or ""),
        fallback=str(raw.get("fallback") or raw.get("text") or ""),
        short_entry=entry("entry_html", "entry_text"),
        heading=entry("heading_html", "heading_text"),
        subjects=Subjects.from_json(raw.get("subjects")),
        lines=lines_from_json(raw.get("lines")),
    )


def _maybe_seen(job: Job) -> bool:
    """Whether an earlier attempt of the job may have reached the chat: more attempts that may
    have (this one included) than this one, or its second chance."""
    return job.second_chance or job.unsure_attempts > 1
