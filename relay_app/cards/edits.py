"""A card's edit, as its job writes it when it goes: the card's record as it stands then (what
presses, in-step changes and recoveries added to it), its text and its buttons in the relay's
words. Registered with the renderer when the relay is assembled: a job of kind `card` is
this."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, tzinfo

from ..delivery.render import Edit, Edits
from ..words import Words
from .card import SNOOZE_EVENTS, Button, SentMessage, keyboard, rendered

# A card's record as it stands (cards/sent.py); None when it is no longer kept.
Cards = Callable[[str, int], SentMessage | None]


def card_edits(
    cards: Cards,
    *,
    snooze_events: int = SNOOZE_EVENTS,
    zone_of: Callable[[str], tzinfo] = lambda chat: UTC,
    theirs: Sequence[Button] = (),
) -> Edits:
    """`snooze_events`: Ignore's "until N more events" (RELAY_SNOOZE_EVENTS); `zone_of`: the
    zone a chat reads times in (routes/zones.py); `theirs`: the capabilities' buttons."""

    def edit(chat: str, message_id: int, words: Words) -> Edit | None:
        card = cards(chat, message_id)
        if card is None:
            return None
        return Edit(
            card.chat,
            card.message_id,
            rendered(card, words, zone_of(card.chat)),
            keyboard(card.buttons, words, snooze_events=snooze_events, theirs=theirs),
            caption=card.captioned,
        )

    return edit
