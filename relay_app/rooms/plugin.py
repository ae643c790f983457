"""Incident rooms, as a capability: where a route says `topics = "per_issue"` in a forum, each
issue it alerts on gets a topic of its own (placing.py), which closes and opens again with its
issue (following.py); a message written there is about the issue (it provides the core's
`cards.sent.THREAD_CARD`, which the chat's replies ask). Its tables: `rooms`, `room_refusals`."""

from __future__ import annotations

from collections.abc import Callable

from ..cards.sent import THREAD_CARD
from ..delivery.job import Delivery
from ..delivery.render import Writer
from ..operating.capability import Capability, Core, Running
from ..operating.config import Settings
from ..spool.store import Tx
from ..words import Words
from .check import rooms_verdicts
from .counters import ROOMS
from .following import EVERY, Following
from .placing import KIND, REFUSED_FOR, Rooms
from .store import RoomStore
from .writes import RoomWrites, left_behind


def _on(settings: Settings) -> bool:
    return bool(settings.routes.rooms(settings.default_destination))


def _start(core: Core) -> Running:
    places = core.settings.routes.rooms(core.settings.default_destination)
    store = core.shared.of(RoomStore)
    counted = core.metrics.of(ROOMS)

    def count(outcome: str) -> None:
        counted.labels(outcome).inc()

    timing = core.settings.timing
    refused_for = timing.of(REFUSED_FOR)
    rooms = Rooms(
        store,
        core.outbox,
        places,
        words=core.words,
        sources=core.sources,
        count=count,
        clock=core.clock,
        refused_for=refused_for,
    )
    following = Following(store, core.outbox, count=count, clock=core.clock, every=timing.of(EVERY))
    writes = RoomWrites(store, count=count, clock=core.clock)

    def card_of(chat: str, thread: int) -> int | None:
        room = store.in_thread(chat, thread, now=core.clock())
        return room.card if room is not None and room.state != "gone" else None

    core.services.provide(THREAD_CARD, card_of)

    def carded(delivery: Delivery) -> Callable[[Tx], None] | None:
        """A card posted in a room: what a message there is about from now on."""
        where = delivery.destination
        if where.thread is None or where in places or delivery.sent is None:
            return None
        message_id = delivery.sent.message_id
        return lambda tx: store.carded(tx, where.chat_key, where.thread or 0, message_id)

    def status(chat: str, words: Words) -> str | None:
        now = core.clock()
        reason = store.refusal(chat, since=now - refused_for, now=now)
        if reason is None:
            return None
        return words.word("room_refused").format(fix=words.word(f"room_fix_{reason}"))

    return Running(
        places=(rooms,),
        upkeep=(following.upkeep,),
        follow_ups=(carded,),
        writers=(Writer(KIND, writes.write),),
        status=(status,),
    )


CAPABILITY = Capability(
    "rooms",
    on=_on,
    counters=(ROOMS,),
    writers=(Writer(KIND, left_behind),),
    checks=(rooms_verdicts,),
    tables=("rooms", "room_refusals"),
    words={
        "en": {
            "room_resolved": "✅ {name}",
            "room_ignored": "🔕 {name}",
            "room_pointer": "🧵 {label} · {title}\n{link}",
            "room_refused": "Topics per issue: off here, alerts go to the route's topic ({fix})",
            "room_fix_rights": "make the bot an admin with “Manage topics”",
            "room_fix_forum": "turn Topics on in the group's settings",
            "room_fix_other": "Telegram refused the topic: see the relay's log",
        },
        "ru": {
            "room_resolved": "✅ {name}",
            "room_ignored": "🔕 {name}",
            "room_pointer": "🧵 {label} · {title}\n{link}",
            "room_refused": "Темы по задачам: выключены здесь, алерты идут в тему маршрута ({fix})",
            "room_fix_rights": "сделайте бота админом с правом «Управление темами»",
            "room_fix_forum": "включите темы в настройках группы",
            "room_fix_other": "Telegram отказал в теме: см. журнал релея",
        },
    },
    start=_start,
)
