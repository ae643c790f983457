"""The first stage of a press: the update read into a `Press`, and acted on once. Telegram
delivers an update again when its webhook's answer was slow or lost, and anyone may replay one:
each is recorded as handled by its update id and its press's id before anything is done, and a
second delivery is ignored (the first answered the press already)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.errors import SpoolError
from ...core.json_values import json_int, json_object
from ..team import Person, Team
from .told import OneAnswer, log


@dataclass(frozen=True)
class Press:
    """A callback query, as far as the relay reads it."""

    id: str
    by: Person
    chat: str | None
    message_id: int | None
    data: object
    answer: OneAnswer = field(default_factory=OneAnswer, compare=False, repr=False)

    @classmethod
    def of(cls, query: dict[str, Any]) -> Press:
        message = json_object(query.get("message"))
        chat = json_object(message.get("chat"))
        message_id = message.get("message_id")
        return cls(
            id=str(query.get("id", "")),
            by=Person.of(query.get("from")),
            chat=str(chat["id"]) if chat.get("id") is not None else None,
            message_id=json_int(message_id),
            data=query.get("data"),
        )


@dataclass(frozen=True)
class Received:
    """An update that is a press: the press, or why nothing may be done with it (`refusal`:
    the outcome it is counted by; `failed`: the spool could not record it as handled)."""

    press: Press
    refusal: str | None = None
    error: SpoolError | None = None


def receive(update: dict[str, Any], team: Team) -> Received | None:
    """The update's press, recorded as handled now; None for an update that is no press."""
    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    press = Press.of(query)
    update_id = update.get("update_id")
    keys = [f"update:{update_id}"] if json_int(update_id) is not None else []
    if press.id:
        keys.append(f"press:{press.id}")
    if not keys:
        log.info("an update without an update id or press id from %s: ignored", press.by.handle)
        return Received(press, refusal="unknown")
    try:
        first = team.store.first_time(keys, at=team.clock())
    except SpoolError as exc:
        return Received(press, refusal="failed", error=exc)
    if not first:
        log.info(
            "update %s, a press by %s, was handled before: ignored", update_id, press.by.handle
        )
        return Received(press, refusal="repeated")
    return Received(press)
