"""The calls made under the cards: a capability that calls people about an issue (on call's
escalation steps and its takers called again) lends what it made (CALLS_MADE: oncall/
calls_made.py), and the weekly report counts those under its period's messages, without
reading the tables that keep them."""

from __future__ import annotations

from typing import Protocol

from ..core.services import Key


class CallsMade(Protocol):
    def made_since(self, since: float, *, now: float) -> list[tuple[str, int]]:
        """Each call made since `since` (on the caller's clock): the chat and message it was
        made under, once per call. Raises SpoolError."""
        ...


CALLS_MADE: Key[CallsMade] = Key("calls made")
