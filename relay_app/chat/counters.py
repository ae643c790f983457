"""What acting from the chat counts: replies, commands, links' cards, and what its budget
refused (registered in plugin.py)."""

from __future__ import annotations

from typing import Literal, get_args

from ..core.metrics import CounterSpec

# What became of a reply in the chat to one of the relay's messages (replies.py).
ReplyOutcome = Literal["commented", "asked", "refused", "unknown", "repeated", "failed"]
REPLY_OUTCOMES: tuple[ReplyOutcome, ...] = get_args(ReplyOutcome)
# Why a message in a chat was not answered: its budget was spent (answers.py).
AnswerRefusal = Literal["person", "chat", "lookups"]
ANSWER_REFUSALS: tuple[AnswerRefusal, ...] = get_args(AnswerRefusal)

REPLIES = CounterSpec(
    "relay_replies",
    (
        "Replies in the chat to the relay's messages, by outcome: commented (posted on the "
        "issue in GlitchTip), asked (which issue, for a message about several), refused "
        "(the author may not act), unknown (a message the relay does not keep), repeated, "
        "failed"
    ),
    ("outcome",),
    REPLY_OUTCOMES,
)

COMMANDS = CounterSpec(
    "relay_commands",
    ("Commands answered in the chats the relay serves, by command"),
    ("command",),
    ("issues", "oncall", "silences", "status"),
)

LINK_CARDS = CounterSpec(
    "relay_link_cards",
    (
        "Links to GlitchTip's issues pasted in the chats, by outcome: posted (the issue's "
        "card), repeated (linked again within 10 min), failed (GlitchTip or the spool), "
        "not_followed (an issue the chat does not follow: no card), unreadable (a link "
        "that names no issue of an organization, as GlitchTip writes them)"
    ),
    ("outcome",),
    ("posted", "repeated", "failed", "not_followed", "unreadable"),
)

ANSWERS_REFUSED = CounterSpec(
    "relay_answers_refused",
    (
        "Messages in a chat (commands, links, replies) not answered because their budget "
        "was spent, by reason: person (asked again within the person's seconds; told once "
        "to try again), chat (as many answers already waited for the chat), lookups (as "
        "many links already waited for GlitchTip in this process)"
    ),
    ("reason",),
    ANSWER_REFUSALS,
)
