"""On it in tests (takes/ keeps who has an issue; the card reads it as a mark): the cards read
as the relay reads them, and a take or a Let go made in the spool as a press makes it."""

from __future__ import annotations

from typing import Any

from relay_app.capabilities import REGISTRY
from relay_app.cards.card import IssueButton
from relay_app.cards.sent import SentStore
from relay_app.cards.takers import taken
from relay_app.spool.store import Store
from relay_app.takes import store as takes


def cards_of(spool: Any) -> SentStore:
    """The cards on a spool, read with every capability's marks (who is on each issue)."""
    cards: SentStore = spool.of(lambda store: SentStore(store, REGISTRY.marks))
    return cards


def _store(where: Any) -> Store:
    """A spool's store, or the store given."""
    found: Store = where.of(lambda store: store) if hasattr(where, "of") else where
    return found


def take(where: Any, key: str, *, by: str, by_id: int | None, at: float) -> list[int]:
    """On it for the button `key`, as a press records it (on a spool, or a spool's store): the
    messages now showing it."""
    work = _store(where).write
    return work(lambda tx: takes.take(tx, key, by=by, by_id=by_id), now=at)


def let_go(where: Any, key: str, *, by_id: int | None, at: float) -> list[int] | None:
    """Let go of the button `key`, as a press records it: the messages changed, or None."""
    work = _store(where).write
    return work(lambda tx: takes.let_go(tx, key, by_id=by_id), now=at)


def taker(button: IssueButton) -> str | None:
    """Who the card's row says has its issue, as shown."""
    mark = taken(button)
    return mark.by if mark is not None else None


def taker_id(button: IssueButton) -> int | None:
    """Who the card's row says has its issue: their Telegram user id."""
    mark = taken(button)
    return mark.ref if mark is not None else None
