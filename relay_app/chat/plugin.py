"""Acting from the chat, as a capability: replies that comment, commands, links' cards, and the
budget that keeps people's typing behind the alerts. Its parts are still built by the wiring
(parts.py)."""

from __future__ import annotations

from ..operating.capability import Capability
from . import link_card
from .counters import ANSWERS_REFUSED, COMMANDS, LINK_CARDS, REPLIES

CAPABILITY = Capability(
    "chat",
    counters=(REPLIES, COMMANDS, LINK_CARDS, ANSWERS_REFUSED),
    shapes=(link_card.SHAPE,),
)
