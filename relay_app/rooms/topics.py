"""What a room's topic is called and looks like, and how a link reaches it: pure.

A topic is named for its issue (level, short id, title) within Telegram's 128 characters, with
an icon colour by level (one of the six Telegram allows); a closed one says why in front."""

from __future__ import annotations

from ..core.routing import parse_chat_id
from ..core.sources import Sources
from ..message.subjects import alerted_in
from ..spool.model import Job
from ..words import Words
from .store import Room

# Telegram's limit on a topic's name (createForumTopic, editForumTopic).
MAX_NAME = 128
LEVEL_MARKS = {"fatal": "💀", "error": "🔴", "warning": "🟡", "info": "🔵", "debug": "⚪"}
# createForumTopic's icon colours: red, yellow, blue, green; violet for a level of its own.
ICON_COLOURS = {
    "fatal": 0xFB6F5F,
    "error": 0xFB6F5F,
    "warning": 0xFFD67E,
    "info": 0x6FB9F0,
    "debug": 0x8EEE98,
}
OTHER_COLOUR = 0xCB86DB


def name_of(room: Room, words: Words) -> str:
    """The topic's name: '🔴 BACKEND-7 · KeyError in checkout', closed: '✅ 🔴 BACKEND-7 ...'."""
    name = f"{LEVEL_MARKS.get(room.level, '🟣')} {room.label} · {' '.join(room.title.split())}"
    if room.state == "closed" and room.why:
        said = words.word(f"room_{room.why}")
        name = said.format(name=name)
    return _within(name, MAX_NAME)


def _within(text: str, most: int) -> str:
    """`text` cut to `most` of Telegram's characters (UTF-16 code units: an emoji is two),
    ending with an ellipsis when cut."""
    if _units(text) <= most:
        return text
    while _units(text) > most - 1:
        text = text[:-1]
    return text + "…"


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def colour_of(level: str) -> int:
    return ICON_COLOURS.get(level, OTHER_COLOUR)


def level_in(job: Job, issue_id: str, sources: Sources) -> str:
    """The issue's level as its alert tells (message/subjects.py); 'error' when it does not."""
    alerted = alerted_in(job.data, sources)
    found = next((each.level for each in alerted if each.issue.id == issue_id), None)
    return found if found in LEVEL_MARKS else "error"


def link_to(chat: str, thread: int) -> str | None:
    """A `t.me` link to the topic: `t.me/c/<id>/<topic>` in a supergroup (its id without
    -100), `t.me/<username>/<topic>` in a public one; None for a chat neither reaches."""
    found = parse_chat_id(chat)
    if isinstance(found, str):
        return f"https://t.me/{found.removeprefix('@')}/{thread}"
    if found is not None and str(found).startswith("-100"):
        return f"https://t.me/c/{str(found).removeprefix('-100')}/{thread}"
    return None
