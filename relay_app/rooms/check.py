"""What `relay-app check` asks of the rooms: in each chat where a route gives issues topics of
their own, that the chat is a forum and the bot may manage its topics."""

from __future__ import annotations

from collections.abc import Iterator

from ..operating.config import Settings
from ..operating.selfcheck import Verdict, bot_in_chats
from .placing import FIXES


def rooms_verdicts(settings: Settings) -> Iterator[Verdict]:
    places = settings.routes.rooms(settings.default_destination)
    for found in bot_in_chats(settings, places, "topics per issue"):
        if isinstance(found, Verdict):
            yield found
            continue
        name = f"topics per issue in chat {found.chat}"
        if not found.info.get("is_forum"):
            yield Verdict(name, False, "the chat is not a forum", FIXES["forum"])
        elif not found.may("can_manage_topics"):
            yield Verdict(
                name,
                False,
                "the bot may not manage topics: its issues' alerts go to the route's place",
                FIXES["rights"],
            )
        else:
            yield Verdict(name, True, "a forum, and the bot may manage its topics")
