"""A card: an alert's message as the chat shows it after it was sent, with inline buttons under
each issue, and as presses and recoveries change it. Pure data and functions, no I/O: the spool
keeps a card's record (cards/sent.py), and a card's edit, a job like any write to the chat, is
rendered from it when it is sent (delivery/render.py).

Each issue of an issue alert gets a row: the capabilities' buttons that lead (On it while it is
open and nobody has it, Let go while someone has it: takes/); Resolve and Ignore, or Reopen once
it is resolved or ignored; then the other capabilities' buttons (Mute, or Unmute while it is
muted in the chat). A button's callback data is a verb and a key the relay
keeps, never an issue id. An edited card is the message as sent, the lines added since (an
uptime monitor back up), one line per issue that a press changed, saying what, by whom and
when, and one per mark a capability has on an issue (who is on it, since when; muted, until
when: cards/marks.py).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

from ..core.trackers import IssueStatus
from ..message.formatting import CAPTION_LIMIT, PARAGRAPH, TELEGRAM_TEXT_LIMIT
from ..message.spans import place_time, visible, visible_length
from ..message.subjects import IssueRef
from ..words import Words
from ..words.catalogue import of_source
from .marks import Mark

Verb = Literal[
    "resolve",
    "ignore",
    "reopen",
    "snooze",
    "snooze_hour",
    "snooze_day",
    "snooze_events",
    "back",
]
STATUS_FOR: dict[Verb, IssueStatus] = {
    "resolve": "resolved",
    "ignore": "ignored",  # forever: GlitchTip's own ignore
    "reopen": "unresolved",
    "snooze_hour": "ignored",
    "snooze_day": "ignored",
    "snooze_events": "ignored",
}
# Ignore's choices, shown in place of the issue's row while it is chosen (snooze opens them,
# back closes them): each but back ignores the issue in GlitchTip (snoozes/snoozing.py).
SNOOZE_CHOICES: tuple[Verb, ...] = ("snooze_hour", "snooze_day", "snooze_events", "ignore", "back")
# What needs the watcher to bring an issue back (snoozes/snoozing.py).
SNOOZE_VERBS: tuple[Verb, ...] = ("snooze", "snooze_hour", "snooze_day", "snooze_events", "back")
# How long the timed choices ignore an issue.
SNOOZE_FOR: dict[Verb, float] = {"snooze_hour": 3600.0, "snooze_day": 86400.0}
_CODES: dict[Verb, str] = {
    "resolve": "r",
    "ignore": "i",
    "reopen": "o",
    "snooze": "s",
    "snooze_hour": "h",
    "snooze_day": "d",
    "snooze_events": "e",
    "back": "b",
}
_VERBS: dict[str, Verb] = {code: verb for verb, code in _CODES.items()}
# Telegram takes at most 100 inline buttons (8 to a row) and about 10 KB of markup: four a row
# for this many issues stays well inside both. Issues past it in one message get none, and
# the capabilities' spare buttons go where a message would pass MAX_BUTTONS.
MAX_ISSUES_WITH_BUTTONS = 25
MAX_BUTTONS = 100
# Ignore's "until N more events", unless RELAY_SNOOZE_EVENTS says.
SNOOZE_EVENTS = 100


@dataclass(frozen=True)
class IssueButton:
    """One issue's buttons under one sent message, and what the last press did."""

    key: str
    issue_id: str
    origin: str  # of the alert's issue link: GlitchTip's API, unless GLITCHTIP_URL says
    label: str  # 'BACKEND-1A': named on the buttons when a message has several issues
    status: IssueStatus | None = None
    acted_by: str | None = None
    acted_at: float | None = None
    title: str | None = None  # the issue's, as the message showed it
    # Ignore's choices shown in place of its row (a press on Ignore opened them).
    choosing: bool = False
    # The condition it is ignored until (snoozing.py): {"until": unix time} or {"events": N}.
    snooze: dict[str, float] | None = None
    # A GlitchTip issue's organization, as its alert named it: presses and replies act on the
    # issue only as one of its (None on a card kept before it was kept).
    org: str | None = None
    # Its level as its alert said it (fatal, error, warning, info; None: not said, or kept
    # before levels were): the weekly report counts alerts by it.
    level: str | None = None
    # What the capabilities say of the issue in the card's chat now (cards/marks.py: who is on
    # it, Mute's silence, Sentry's assignee), read with the card; never kept in its record.
    marks: tuple[Mark, ...] = ()

    def marked(self, name: str) -> Mark | None:
        """Its mark of this name (a capability's), if one holds."""
        return next((mark for mark in self.marks if mark.name == name), None)


@dataclass(frozen=True)
class Button:
    """A button on an issue's row: its verb (logs, counters), its code in the callback data, the
    word its label is, and whether a row shows it now (from the card's record of the issue)."""

    verb: str
    code: str
    label: str
    shown: Callable[[IssueButton], bool]
    # Shown only where the message has room for it: a message whose rows would pass
    # Telegram's MAX_BUTTONS goes without it on every row (a digest of many issues).
    spare: bool = False
    # Shown before the core's buttons (On it), not after them.
    leads: bool = False


@dataclass(frozen=True)
class SentMessage:
    """A card's record: the message as sent, and what changed since."""

    chat: str  # the chat's id as Telegram answered it, as text
    message_id: int
    html: str  # as sent
    sent_at: float
    notes: tuple[str, ...] = ()  # plain-text lines added since
    buttons: tuple[IssueButton, ...] = ()
    # Whether a reply under it by someone allowed to act takes its issue (its route's
    # `reply_takes`), as On it does.
    replies_take: bool = True
    # How long its route lets an issue be taken and open before its taker is called again.
    take_for: float | None = None
    thread: int | None = None  # the forum topic it went to
    # A photo (a chart) whose caption is its text: edited with editMessageCaption, within
    # Telegram's 1,024 characters.
    captioned: bool = False


def verbs_for(button: IssueButton) -> tuple[Verb, ...]:
    """The core's buttons an issue shows now: what a press may do. Reopen once it is resolved
    or ignored, Resolve and Ignore otherwise. The capabilities' buttons lead or follow them
    (`shows_theirs`)."""
    if choosing(button):
        return SNOOZE_CHOICES
    return ("resolve", "snooze") if is_open(button) else ("reopen",)


def is_open(button: IssueButton) -> bool:
    """Whether the issue stands open on this row: as alerted, or reopened."""
    return button.status not in ("resolved", "ignored")


def core_verb(name: str) -> Verb | None:
    """The core's verb of this name; None for a capability's."""
    for verb in _CODES:
        if verb == name:
            return verb
    return None


def choosing(button: IssueButton) -> bool:
    """Whether the row shows Ignore's choices in place of its buttons (theirs too)."""
    return button.choosing and button.status not in ("resolved", "ignored")


def shows_theirs(button: IssueButton, theirs: Sequence[Button]) -> list[Button]:
    """The capabilities' buttons the issue's row shows now, those that lead first."""
    shown = [] if choosing(button) else [each for each in theirs if each.shown(button)]
    return sorted(shown, key=lambda each: not each.leads)


def callback_data(verb: Verb | Button, key: str) -> str:
    code = verb.code if isinstance(verb, Button) else _CODES[verb]
    return f"{code}:{key}"


def parse_callback(data: object, theirs: Sequence[Button] = ()) -> tuple[str, str] | None:
    """The verb and key of a button's data, the core's or a capability's; None for anything
    this relay did not write."""
    if not isinstance(data, str):
        return None
    code, colon, key = data.partition(":")
    verb: str | None = _VERBS.get(code)
    if verb is None:
        verb = next((each.verb for each in theirs if each.code == code), None)
    if not colon or verb is None or not key or len(key) > 32 or not key.isascii():
        return None
    return verb, key


def new_buttons(issues: Iterable[IssueRef], keys: Iterable[str]) -> tuple[IssueButton, ...]:
    """One button record per issue (each with a fresh key), within Telegram's limits."""
    buttons: list[IssueButton] = []
    for issue, key in zip(issues, keys, strict=False):
        if len(buttons) == MAX_ISSUES_WITH_BUTTONS:
            break
        buttons.append(
            IssueButton(key, issue.id, issue.origin, issue.label, title=issue.title, org=issue.org)
        )
    return tuple(buttons)


def keyboard(
    buttons: Sequence[IssueButton],
    words: Words,
    *,
    snooze_events: int = SNOOZE_EVENTS,
    theirs: Sequence[Button] = (),
) -> dict[str, Any] | None:
    """The inline keyboard for these issues' buttons; None when there are none. Labels name
    each issue only when there are several to tell apart. `snooze_events`: the N of Ignore's
    "until N more events" (RELAY_SNOOZE_EVENTS); `theirs`: the capabilities' buttons."""
    if not buttons:
        return None
    labels: dict[Verb, str] = {
        "resolve": words.button_resolve,
        "ignore": words.button_ignore_forever,
        "reopen": words.button_reopen,
        "snooze": words.button_ignore,
        "snooze_hour": words.button_snooze_hour,
        "snooze_day": words.button_snooze_day,
        "snooze_events": words.button_snooze_events.format(count=snooze_events),
        "back": words.button_back,
    }
    rows = _rows(buttons, words, labels, theirs)
    if sum(len(row) for row in rows) > MAX_BUTTONS:
        rows = _rows(buttons, words, labels, [each for each in theirs if not each.spare])
    return {"inline_keyboard": rows}


def _rows(
    buttons: Sequence[IssueButton],
    words: Words,
    labels: dict[Verb, str],
    theirs: Sequence[Button],
) -> list[list[dict[str, str]]]:
    several = len(buttons) > 1
    rows = []
    for button in buttons:
        named = f" {button.label}" if several else ""
        shown = shows_theirs(button, theirs)
        rows.append(
            [
                *(_their(each, button, words, named) for each in shown if each.leads),
                *(
                    {"text": labels[verb] + named, "callback_data": callback_data(verb, button.key)}
                    for verb in verbs_for(button)
                ),
                *(_their(each, button, words, named) for each in shown if not each.leads),
            ]
        )
    return rows


def _their(each: Button, button: IssueButton, words: Words, named: str) -> dict[str, str]:
    """A capability's button on an issue's row, in its words."""
    return {
        "text": words.word(each.label) + named,
        "callback_data": callback_data(each, button.key),
    }


def done_line(
    button: IssueButton, words: Words, *, several: bool, zone: tzinfo = UTC
) -> str | None:
    """'✅ Resolved by @ada at 12:04 UTC' (with the issue's label when there are several);
    None for an issue nobody acted on."""
    if button.status is None or button.acted_at is None:
        return None
    # (one issue's card, several issues' card), by someone in the chat or in GlitchTip itself
    # (the watcher saw it: cards/in_step.py; GlitchTip does not say who).
    in_chat = {
        "resolved": (words.resolved_by, words.issue_resolved_by),
        "ignored": (words.ignored_by, words.issue_ignored_by),
        "unresolved": (words.reopened_by, words.issue_reopened_by),
    }
    in_glitchtip = {
        "resolved": (words.resolved_in_glitchtip, words.issue_resolved_in_glitchtip),
        "ignored": (words.ignored_in_glitchtip, words.issue_ignored_in_glitchtip),
        "unresolved": (words.reopened_in_glitchtip, words.issue_reopened_in_glitchtip),
    }
    if button.acted_by is None:
        words = of_source(words, button.issue_id)
        in_glitchtip = {
            "resolved": (words.resolved_in_glitchtip, words.issue_resolved_in_glitchtip),
            "ignored": (words.ignored_in_glitchtip, words.issue_ignored_in_glitchtip),
            "unresolved": (words.reopened_in_glitchtip, words.issue_reopened_in_glitchtip),
        }
    one, many = (in_chat if button.acted_by is not None else in_glitchtip)[button.status]
    template = (many if several else one) + _snoozed(button, words, zone)
    return template.format(
        label=button.label, user=button.acted_by, time=place_time(button.acted_at, zone)
    )


def _snoozed(button: IssueButton, words: Words, zone: tzinfo) -> str:
    """' until 13:04 UTC' or ' until 100 more events' for an issue ignored with a condition."""
    snooze = button.snooze if button.status == "ignored" else None
    if snooze is None:
        return ""
    if "until" in snooze:
        return words.snoozed_until.format(until=place_time(snooze["until"], zone))
    return words.snoozed_events.format(count=int(snooze.get("events", 0)))


def mark_line(
    button: IssueButton, mark: Mark, words: Words, *, several: bool, zone: tzinfo = UTC
) -> str:
    """'👀 @ada is on it since 10:42 UTC', '🔇 Muted in this chat by @ada until 13:04 UTC': a mark
    of the issue, in its capability's words (with the issue's label when there are several)."""
    return words.word(mark.line_of_several if several else mark.line).format(
        label=button.label,
        user=mark.by,
        time=place_time(mark.at, zone),
        until=place_time(mark.until, zone) if mark.until is not None else "",
    )


def notice(button: IssueButton, status: IssueStatus, words: Words) -> str:
    """The press's answer when the issue's source made the change: 'Resolved BACKEND-1A in
    GlitchTip' (or 'in Sentry')."""
    words = of_source(words, button.issue_id)
    template = {
        "resolved": words.notice_resolved,
        "ignored": words.notice_ignored,
        "unresolved": words.notice_reopened,
    }[status]
    return template.format(label=button.label)


def clock_time(at: float) -> str:
    """'12:04' (UTC), for a log line; people read place_time's, in their zone."""
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M")


def rendered(message: SentMessage, words: Words, zone: tzinfo = UTC) -> str:
    """The message's HTML as it now stands: as sent, then its added lines, then what presses
    did, their times in `zone` (the chat's). Within Telegram's limit (a photo's caption's, for
    a photo): when the lines do not all fit, the oldest ones give way."""
    lines = added_lines(message, words, zone)
    base = visible_length(visible(message.html)) + len(PARAGRAPH)
    limit = CAPTION_LIMIT if message.captioned else TELEGRAM_TEXT_LIMIT
    while lines:
        text = "\n".join(lines)
        if base + visible_length(text) <= limit:
            return f"{message.html}{PARAGRAPH}{html.escape(text, quote=False)}"
        lines = lines[1:]  # the oldest gives way
    return message.html


def added_lines(message: SentMessage, words: Words, zone: tzinfo = UTC) -> list[str]:
    """The lines under the message, oldest first: its notes, then who did what, and the
    capabilities' marks that hold (who is on it, a mute, an assignment), in the order each was
    made."""
    several = len(message.buttons) > 1
    done = [
        (at or 0.0, line)
        for button in message.buttons
        for at, line in (
            (button.acted_at, done_line(button, words, several=several, zone=zone)),
            *(
                (mark.at, mark_line(button, mark, words, several=several, zone=zone))
                for mark in button.marks
            ),
        )
        if line is not None
    ]
    return [*message.notes, *(line for _, line in sorted(done))]
