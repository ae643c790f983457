"""Links answered (docs/actions.md): a message in a chat the relay serves that holds a link to
an issue of GlitchTip (at GLITCHTIP_URL's address, or GLITCHTIP_PUBLIC_URL's) gets a reply with
that issue's card, as an alert's message shows it, with its buttons; once per issue per chat in
LINK_WINDOW, whichever process or relay reads the message. The issue is read from GlitchTip's
API with the relay's token: the link only names it, it never decides where the token goes.

A reply to one of the relay's own messages is a comment (replies.py), not a question: its links
are left alone. The bot sees other messages only with its privacy mode off, or as an admin.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..core.errors import GlitchTipError, SpoolError
from ..delivery.outbox import Outbox
from ..glitchtip.api import GlitchTipApi
from ..message.link_card import link_card_data
from ..message.subjects import issue_ref
from .team import Written

log = logging.getLogger(__name__)

# An issue linked again in the same chat within this long gets no second card.
LINK_WINDOW = 600.0
# A message names at most this many issues that get cards: a pasted list is not a storm.
MOST_CARDS = 3
_URL = re.compile(r"https?://[^\s<>\"')\]]+")


class Links:
    def __init__(
        self,
        *,
        served: Collection[str],
        glitchtip: GlitchTipApi,
        origin: str,
        outbox: Outbox,
        first_in: Callable[[str, float], bool],
        count: Callable[[str], None] = lambda outcome: None,
    ) -> None:
        """`origin`: the address GlitchTip's links have (GLITCHTIP_PUBLIC_URL, else
        GLITCHTIP_URL); `first_in(key, window)`: whether a key is the first in that window
        (spool/sent.py)."""
        self._served = frozenset(served)
        self._glitchtip = glitchtip
        self._origin = origin
        self._outbox = outbox
        self._first_in = first_in
        self._count = count

    def handle_update(self, update: Mapping[str, Any]) -> None:
        message = update.get("message")
        said = Written.of(message)
        if said is None or said.chat not in self._served or _answers_a_bot(message):
            return
        for link, issue_id in self._issues_linked(said.text)[:MOST_CARDS]:
            self._answer(said, link, issue_id)

    def _issues_linked(self, text: str) -> list[tuple[str, str]]:
        found: dict[str, str] = {}
        for link in _URL.findall(text):
            ref = issue_ref(link, None)
            if ref is not None and ref.origin == self._origin:
                found.setdefault(ref.id, link)
        return [(link, issue_id) for issue_id, link in found.items()]

    def _answer(self, said: Written, link: str, issue_id: str) -> None:
        chat = said.chat
        try:
            if not self._first_in(f"link:{chat}:{issue_id}", LINK_WINDOW):
                log.info("issue %s linked again in chat %s: no second card", issue_id, chat)
                self._count("repeated")
                return
            issue = self._glitchtip.issue(issue_id)
            card = link_card_data(issue, link)
            self._outbox.link_card(chat, said.thread, said.message_id, card)
        except GlitchTipError as exc:
            log.info("issue %s, linked in chat %s, cannot be read: %s", issue_id, chat, exc)
            self._count("failed")
        except SpoolError as exc:
            log.warning("issue %s, linked in chat %s, gets no card now: %s", issue_id, chat, exc)
            self._count("failed")
        else:
            log.info("issue %s, linked in chat %s, gets its card", issue_id, chat)
            self._count("posted")


def _answers_a_bot(message: Any) -> bool:
    """Whether the message replies to a bot's (the relay's alerts: a comment, not a question)."""
    answered = message.get("reply_to_message") if isinstance(message, dict) else None
    sender = answered.get("from") if isinstance(answered, dict) else None
    return isinstance(sender, dict) and bool(sender.get("is_bot"))
