"""The rooms' own writes (jobs of kind `room`, queued by placing.py and following.py), made
when they go from the room as it stands then: a topic closed, reopened or renamed, and the
short line in the route's own topic that points to a new room. A refusal that says the topic
is as asked already (TOPIC_NOT_MODIFIED) is done; one that says it is gone forgets it; one that
says the bot may not manage topics is said once, with its fix."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import PermanentDeliveryError, Unreadable
from ..delivery.render import Call, Renderer
from ..spool.model import Job
from .refusals import meaning_of
from .store import Room, RoomStore
from .topics import link_to, name_of

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# Which state each write needs the room in still when it goes (a topic reopened since its
# close was queued is not closed after all).
NEEDS = {"close": "closed", "reopen": "open", "rename": None, "point": None}


def left_behind(job: Job, renderer: Renderer) -> None:
    """A room's write left in the spool while rooms are off: nothing to do."""
    return None


class RoomWrites:
    def __init__(self, store: RoomStore, *, count: Callable[[str], None], clock: Clock) -> None:
        self._store = store
        self._count = count
        self._clock = clock

    def write(self, job: Job, renderer: Renderer) -> Call | None:
        do, room = self._room_of(job)
        if room is None:
            return None
        if do == "point":
            return self._point(room, job, renderer)
        method = {"close": "closeForumTopic", "reopen": "reopenForumTopic"}.get(
            do, "editForumTopic"
        )
        params: dict[str, Any] = {"message_thread_id": room.thread}
        if do == "rename":
            params["name"] = name_of(room, renderer.words)
        outcome = {"close": "closed", "reopen": "reopened", "rename": "renamed"}[do]
        return Call(
            room.chat,
            method,
            params,
            lambda result: self._count(outcome),
            lambda error: self._refused(room, error),
            f"the topic of {room.label} {outcome}",
        )

    def _room_of(self, job: Job) -> tuple[str, Room | None]:
        """What the job does, and the room it does it to: None when the room is gone, or no
        longer as the write needs it (a topic reopened since its close was queued). Raises
        Unreadable."""
        do, issue_id = job.data.get("do"), job.data.get("issue")
        if not isinstance(do, str) or do not in NEEDS or not isinstance(issue_id, str):
            raise Unreadable(f"a room's write of {do!r} for {issue_id!r}")
        room = self._store.room(job.destination.chat_key, issue_id, now=self._clock())
        if room is None or room.thread is None or room.state == "gone":
            return do, None
        needs = NEEDS[do]
        return do, (room if needs is None or room.state == needs else None)

    def _point(self, room: Room, job: Job, renderer: Renderer) -> Call | None:
        """The line in the route's own topic that says where the issue's room is."""
        assert room.thread is not None
        link = link_to(room.chat, room.thread)
        if link is None:
            return None
        text = renderer.words.word("room_pointer").format(
            label=room.label, title=" ".join(room.title.split())[:200], link=link
        )
        params: Mapping[str, Any] = {
            "message_thread_id": job.destination.thread,
            "text": text,
            "disable_notification": True,
            "link_preview_options": {"is_disabled": True},
        }
        return Call(
            room.chat,
            "sendMessage",
            params,
            lambda result: self._count("pointed"),
            said=f"the line pointing to the topic of {room.label}",
        )

    def _refused(self, room: Room, error: PermanentDeliveryError) -> bool:
        meaning = meaning_of(error)
        if meaning == "done":
            return True
        if meaning == "gone" and room.thread is not None:
            if self._store.gone(room.chat, room.thread, now=self._clock()) is not None:
                self._count("gone")
                log.error(
                    "TOPIC DELETED: the topic of %s in chat %s is gone (deleted by hand); its "
                    "alerts go to its route's place from now on",
                    room.label,
                    room.chat,
                )
            return True
        if meaning in ("rights", "forum"):
            self._count("refused")
            if self._store.refused(room.chat, meaning, now=self._clock()):
                log.error(
                    "TOPICS REFUSED in chat %s (%s): the topic of %s stays as it is; make the "
                    "bot an administrator with the right to manage topics (can_manage_topics)",
                    room.chat,
                    error,
                    room.label,
                )
            return True
        return False
