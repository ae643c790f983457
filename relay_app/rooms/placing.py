"""Where an alert of a per-issue route goes when it is sent (delivery/placing.py's `Placing`): the
topic of its issue, made first when it has none, opened again when it was closed.

Only an alert about one issue, sent alone, gets its room: a digest of a storm goes to its
route's own place, as without rooms, and the issue gets its room when its own card is sent. A
topic is made (or reopened) by the alert's own turn of the chat, a write of the spool paced
and retried as every other: the alert goes at the chat's next turn, into the topic. Where
Telegram refuses topics (no right to manage them, a chat that is no forum) the alert goes to
its route's place, the relay says so once (ERROR, `/status`, the metric), and tries again
after REFUSED_FOR; a topic deleted by hand is its issue's no more: its alerts go to the
route's place."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.errors import PermanentDeliveryError
from ..core.routing import Destination, chat_key
from ..core.sources import Sources
from ..delivery.outbox import Outbox, chat_lane
from ..delivery.render import Call
from ..message.formatting import Message
from ..spool.model import Job, Precedence
from ..words import Words
from .refusals import meaning_of
from .store import Room, RoomStore
from .topics import colour_of, level_in, name_of

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# How long after Telegram refused a topic in a chat the relay asks again (a right granted
# since takes effect then, without a restart).
REFUSED_FOR = 600.0
# The rooms made by an alert's turn that this process remembers, till each alert goes there.
KEPT_MADE = 1000
KIND = "room"  # the rooms' own writes: a topic closed, reopened, renamed, pointed to
FIXES = {
    "rights": "make the bot an administrator of the group with the right to manage topics "
    "(can_manage_topics)",
    "forum": "turn Topics on in the group's settings (a forum supergroup), or remove "
    'topics = "per_issue" from the route',
    "other": 'check the chat, or remove topics = "per_issue" from the route',
}


def room_job(outbox: Outbox, room: Room, do: str, *, thread: int | None = None) -> None:
    """One of the room's writes, queued in the chat's lane of rooms, after its alerts."""
    about = {"do": do, "issue": room.issue_id}
    where = room.thread if thread is None else thread
    outbox.write(KIND, room.chat, where, 0, about, Precedence.EDIT, lane=chat_lane(room.chat, KIND))


class Rooms:
    def __init__(
        self,
        store: RoomStore,
        outbox: Outbox,
        places: frozenset[Destination],
        *,
        words: Words,
        sources: Sources,
        count: Callable[[str], None],
        clock: Clock,
        refused_for: float = REFUSED_FOR,
    ) -> None:
        """`places`: where per-issue routes send; `count`: the metric, by outcome;
        `refused_for`: how long after a refusal topics are asked for again there."""
        self._refused_for = refused_for
        # The alerts whose turn made (or reopened) their room, till they go into it.
        self._made: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._store = store
        self._outbox = outbox
        self._places = places
        self._words = words
        self._sources = sources
        self._count = count
        self._clock = clock

    def place(
        self, jobs: Sequence[Job], alerts: Sequence[Message], destination: Destination
    ) -> Destination | Call | None:
        room = self._room_for(jobs, alerts, destination)
        if room is None:
            return None
        now = self._clock()
        kept = self._store.room(room.chat, room.issue_id, now=now)
        if kept is not None and kept.thread is not None and kept.state == "open":
            with self._lock:
                self._made.pop(_maker(jobs[0]), None)
            return Destination(destination.chat, kept.thread)
        if kept is not None and kept.state == "gone":
            return None
        if self._store.refusal(room.chat, since=now - self._refused_for, now=now) is not None:
            return None
        if kept is not None and kept.state == "closed":
            return self._reopen(kept, _maker(jobs[0]))
        return self._made_by(jobs[0], room, now)  # none yet, or one being made

    def _made_by(self, job: Job, room: Room, now: float) -> Call | None:
        """The topic made by this alert's turn, unless another alert makes it now (this one
        goes to the route's place then)."""
        if not self._store.start_making(room, _maker(job), now=now):
            return None  # another relay makes it now: this alert goes to the route's place
        return self._make(room, _maker(job))

    def made_for(self, job: Job) -> bool:
        """Asked as a claim is taken, inside the queue's unit of work: from this process's
        memory of the rooms its alerts' turns made, never the store. Should another process
        take the alert up, it may go in a digest to the route's place: nothing is lost."""
        if job.kind != "alert":
            return False
        with self._lock:
            return _maker(job) in self._made

    def lost(self, placed: Destination, destination: Destination) -> None:
        if placed.thread is None:
            return
        room = self._store.gone(chat_key(placed.chat), placed.thread, now=self._clock())
        if room is None:
            return
        self._count("gone")
        log.error(
            "TOPIC DELETED: the topic of %s (%s) in chat %s is gone (deleted by hand); its "
            "alerts go to %s from now on",
            room.label,
            room.title,
            room.chat,
            destination.describe(),
        )

    def _room_for(
        self, jobs: Sequence[Job], alerts: Sequence[Message], destination: Destination
    ) -> Room | None:
        """The room the claim's alert would go to: one alert about one issue, alone, of a
        per-issue route (a link's card answers where the link was)."""
        if destination not in self._places or len(jobs) != 1 or len(alerts) != 1:
            return None
        job, subjects = jobs[0], alerts[0].subjects
        if job.precedence == Precedence.ANSWER or len(subjects.issues) != 1:
            return None
        issue = subjects.issues[0]
        return Room(
            chat=destination.chat_key,
            issue_id=issue.id,
            thread=None,
            state="making",
            label=issue.label,
            title=issue.title or "",
            level=level_in(job, issue.id, self._sources),
            home=destination.thread,
            card=None,
        )

    def _made_room(self, maker: str) -> None:
        with self._lock:
            self._made[maker] = None
            while len(self._made) > KEPT_MADE:
                self._made.popitem(last=False)

    def _make(self, room: Room, maker: str) -> Call:
        def done(result: Mapping[str, Any]) -> None:
            thread = result.get("message_thread_id")
            if not isinstance(thread, int) or isinstance(thread, bool):
                log.error("Telegram made a topic for %s without saying its id", room.label)
                self._store.not_made(room.chat, room.issue_id, now=self._clock())
                return
            self._store.made(room.chat, room.issue_id, thread, now=self._clock())
            self._made_room(maker)
            self._store.allowed(room.chat, now=self._clock())
            self._count("made")
            log.info("made topic %d for %s in chat %s", thread, room.label, room.chat)
            if room.home is not None:
                room_job(self._outbox, room, "point", thread=room.home)

        def refused(error: PermanentDeliveryError) -> bool:
            self._store.not_made(room.chat, room.issue_id, now=self._clock())
            self._refused(room, error)
            return True

        params = {"name": name_of(room, self._words), "icon_color": colour_of(room.level)}
        said = f"the topic of {room.label}"
        return Call(room.chat, "createForumTopic", params, done, refused, said)

    def _reopen(self, room: Room, maker: str) -> Call | None:
        """The closed topic opened again by this alert's turn (`maker`)."""
        if room.thread is None:
            return None

        def done(result: Mapping[str, Any]) -> None:
            self._store.opened(room.chat, room.issue_id, now=self._clock())
            self._made_room(maker)
            self._count("reopened")
            room_job(self._outbox, room, "rename")

        def refused(error: PermanentDeliveryError) -> bool:
            meaning = meaning_of(error)
            if meaning == "done":
                done({})
            elif meaning == "gone":
                self.lost(Destination(room.chat, room.thread), Destination(room.chat, room.home))
            else:
                self._refused(room, error)
            return True

        said = f"the topic of {room.label} reopened"
        params = {"message_thread_id": room.thread}
        return Call(room.chat, "reopenForumTopic", params, done, refused, said)

    def _refused(self, room: Room, error: PermanentDeliveryError) -> None:
        """Said once per chat and reason, across the fleet: at ERROR with the fix; counted
        every time."""
        meaning = meaning_of(error)
        reason = meaning if meaning in FIXES else "other"
        self._count("refused")
        if self._store.refused(room.chat, reason, now=self._clock()):
            log.error(
                "TOPICS REFUSED in chat %s (%s): the alerts of %s go to the route's own place "
                "instead; to give each issue its topic, %s. The relay asks again in %d minutes.",
                room.chat,
                error,
                room.label,
                FIXES[reason],
                max(1, round(self._refused_for / 60)),
            )


def _maker(job: Job) -> str:
    """The alert that makes a room, as the room keeps it."""
    return f"{job.id}@{job.received_at}"
