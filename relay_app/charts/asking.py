"""How people ask for a chart: 📈 on an issue's row of a card (under the card), and `/chart
ISSUE` (under the command), ISSUE being its short id (any case), its number, or its link. Only
an issue the chat was shown a card of: the chat follows it (as its links and `/issues`). Either
spends the typed-input budget of the person and the chat, as every answer does."""

from __future__ import annotations

import logging

from ..cards.card import Button, IssueButton
from ..cards.sent import SentStore
from ..cards.verbs import Press, Pressed
from ..core.errors import SpoolError
from ..core.sources import Sources
from ..message.subjects import issue_ref
from ..telegram.bot_commands import Asked, BotCommand
from ..words import Said, Words
from .charting import Asking, ChartAsked, Charts

log = logging.getLogger(__name__)


def _any_issue(button: IssueButton) -> bool:
    return True


# Shown only where the message has room for it: a digest of many issues goes without it
# (cards/card.py keeps a keyboard within Telegram's 100 buttons); `/chart` asks for any.
CHART = Button("chart", "c", "button_chart", _any_issue, spare=True)


def chart_press(charts: Charts) -> Press:
    """What 📈 does: the chart under the card, once drawn."""

    def press(pressed: Pressed) -> None:
        words, button = pressed.words, pressed.button
        asked = ChartAsked(
            pressed.message.chat,
            pressed.message.thread,
            pressed.message.message_id,
            button.key,
            button,
        )
        if charts.coming(asked):  # a double tap: the same chart, and no turn spent
            pressed.count("charted")
            pressed.answer(_toast("drawing", button.label, words), False)
            return
        try:
            if not pressed.may_answer():
                pressed.count("not_now")
                pressed.answer(words.word("chart_not_now"), False)
                return
            asking = charts.ask(asked)
        except SpoolError as exc:
            log.warning("a chart of %s could not be asked for: %s", button.label, exc)
            pressed.count("failed")
            pressed.answer(pressed.words.press_unavailable, True)
            return
        pressed.count("charted")
        pressed.answer(_toast(asking, button.label, words), asking == "busy")

    return press


def _toast(asking: Asking, label: str, words: Words) -> str:
    name = "chart_busy" if asking == "busy" else "chart_coming"
    return words.word(name).format(label=label)


def chart_command(charts: Charts, sent: SentStore, sources: Sources) -> BotCommand:
    """`/chart ISSUE`, answered under the command with the chart once drawn."""

    def answer(asked: Asked, words: Words) -> Said | None:
        named = asked.args.split()[0] if asked.args.split() else ""
        if not named:
            return Said("chart_usage")
        found = _found(sent, asked.chat, named, sources)
        if found is None:
            return Said("chart_unknown", {"issue": named[:60]})
        asking = charts.ask(
            ChartAsked(asked.chat, asked.thread, asked.message_id, found.key, found)
        )
        return Said("chart_busy", {"label": found.label}) if asking == "busy" else None

    return BotCommand("chart", lambda words: words.word("command_chart"), answer)


def _found(sent: SentStore, chat: str, named: str, sources: Sources) -> IssueButton | None:
    """The issue `named` among those the chat was shown cards of: by link (any source's, its
    origin as the card's), short id or number. Raises SpoolError."""
    if "://" in named:
        for source in sources:
            ref = issue_ref(named, None, source=source)
            shown = sent.shown_in(chat, ref.id) if ref is not None else None
            if ref is not None and shown is not None and shown[1].origin == ref.origin:
                return shown[1]
        return None
    wanted = named.removeprefix("#")
    for source in sources:
        shown = sent.shown_in(chat, source.relay_id(wanted))
        if shown is not None:
            return shown[1]
    return None
