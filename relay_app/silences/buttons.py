"""Mute and Unmute, the buttons silences add to every issue's row: a press starts a silence of
the issue in the card's chat for MUTE_FOR, or ends it; the issue is not changed in its tracker."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from ..cards.card import Button, IssueButton
from ..cards.verbs import Press, Pressed
from ..core.errors import DeliveryError, SpoolError
from ..message.spans import place_time
from .marks import MUTED
from .silencing import Silencing

log = logging.getLogger(__name__)
T = TypeVar("T")


def _unmuted(button: IssueButton) -> bool:
    return button.marked(MUTED) is None


def _muted(button: IssueButton) -> bool:
    return button.marked(MUTED) is not None


MUTE = Button("mute", "m", "button_mute", _unmuted)
UNMUTE = Button("unmute", "u", "button_unmute", _muted)


def presses(silencing: Silencing) -> dict[str, Press]:
    """What a press of each does, on this process's silences."""

    def mute(pressed: Pressed) -> None:
        silence = _safely(
            pressed, lambda: silencing.mute(pressed.message.chat, pressed.button, by=pressed.by)
        )
        if silence is None:
            return
        pressed.acted_on()
        until = place_time(silence.ends_at, pressed.zone)
        pressed.count("muted")
        pressed.answer(
            pressed.words.notice_muted.format(label=pressed.button.label, until=until), False
        )

    def unmute(pressed: Pressed) -> None:
        # It may have run out, or been expired from the command line, meanwhile.
        was_muted = _safely(
            pressed, lambda: silencing.unmute(pressed.message.chat, pressed.button, by=pressed.by)
        )
        if was_muted is None:
            return
        words = pressed.words
        template = words.notice_unmuted if was_muted else words.notice_not_muted
        pressed.count("unmuted")
        pressed.answer(template.format(label=pressed.button.label), False)

    return {MUTE.verb: mute, UNMUTE.verb: unmute}


def _safely(pressed: Pressed, act: Callable[[], T]) -> T | None:
    """What `act` gives; None (the press answered) when the spool or Telegram failed it."""
    try:
        return act()
    except (SpoolError, DeliveryError) as exc:
        log.warning(
            "a press by %s to %s %s failed: %s",
            pressed.by,
            pressed.verb,
            pressed.button.label,
            exc,
        )
        pressed.count("failed")
        pressed.answer(pressed.words.press_unavailable, True)
        return None
