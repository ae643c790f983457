"""A reply in the chat to an alert's message, posted as a comment on its issue in GlitchTip,
prefixed with who wrote it in Telegram (GlitchTip names the token's user as the author).

Only replies to messages this relay sent and keeps count (cards/sent.py), and messages in a
forum topic that is one issue's own (rooms/: about the card posted there): the issue is the
record's, never anything the client sent. A message about several issues (a digest) takes a
reply that begins with one of their short ids; any other reply to it is answered with the
question which one. Replies from anyone not in TELEGRAM_ACTION_USER_IDS (when it is set) are
ignored, and each update acts once. The relay confirms with a reaction on the reply (a short
reply where reactions are off), and on failure replies with what went wrong and what to do:
each an answer, queued as a job after every alert, call and edit the chat is owed, as long as
the chat has fewer answers waiting than it may (answers.py), in the chat's language.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..cards.card import IssueButton, SentMessage
from ..cards.notices import operator_fix, tracker_notice
from ..cards.sent import ThreadCard
from ..cards.takers import OnIt
from ..cards.team import Person, Team
from ..core.errors import SpoolError, TrackerError
from ..core.json_values import json_int, json_object
from ..core.logs import event
from ..core.off_thread import OffThread
from ..words import Said
from ..words.catalogue import source_shown
from .answers import Answering, Asker
from .counters import REPLIES, ReplyOutcome

log = logging.getLogger(__name__)

# The reaction that says a reply is now a comment in GlitchTip (one of those Telegram offers).
POSTED = "✍"
# GlitchTip keeps a comment's text whole; a Telegram message holds at most 4096 characters.
MAX_COMMENT = 4096


@dataclass(frozen=True)
class Reply:
    """A message in the chat that answers another, as far as the relay reads it."""

    message_id: int
    chat: str
    thread: int | None  # the forum topic it was written in
    by: Person
    text: str
    replied_to: int
    replied_to_bot: int | None  # the id of the bot whose message it answers, if a bot's

    @property
    def asker(self) -> Asker:
        """Whom an answer to it is for."""
        return Asker(self.chat, self.thread, self.message_id, str(self.by.id))

    @classmethod
    def of(cls, update: dict[str, Any]) -> Reply | None:
        """The update's message, when it is a reply with text; None for anything else."""
        message = json_object(update.get("message"))
        answered = json_object(message.get("reply_to_message"))
        chat = json_object(message.get("chat"))
        text, message_id = message.get("text"), json_int(message.get("message_id"))
        replied_to = json_int(answered.get("message_id"))
        if replied_to is None and message.get("is_topic_message"):
            # A message in a forum topic answers the topic itself, whose first message (the
            # one that made it) has the topic's id.
            replied_to = json_int(message.get("message_thread_id"))
        if not (isinstance(text, str) and text.strip() and replied_to is not None):
            return None
        if message_id is None or chat.get("id") is None:
            return None
        return cls(
            message_id=message_id,
            chat=str(chat["id"]),
            thread=_topic(message),
            by=Person.of(message.get("from")),
            text=text.strip(),
            replied_to=replied_to,
            replied_to_bot=_bot(json_object(answered.get("from"))),
        )


def _topic(message: dict[str, Any]) -> int | None:
    thread = message.get("message_thread_id") if message.get("is_topic_message") else None
    return json_int(thread)


def _bot(sender: dict[str, Any]) -> int | None:
    bot = sender.get("id") if sender.get("is_bot") else None
    return json_int(bot)


class Replies:
    def __init__(
        self,
        team: Team,
        answering: Answering,
        *,
        bot_id: int | None = None,
        taking: OnIt | None = None,
        acting: OffThread | None = None,
        thread_card: ThreadCard | None = None,
    ) -> None:
        """`answering`: where the answers go; `bot_id`: the relay's bot (its token's first
        part), so a reply to one of its messages the relay no longer keeps is answered, and
        replies to anyone else's are not; `taking`: a reply takes the issue it comments on,
        as On it does, where the message's route lets it (`reply_takes`); `acting`: the
        threads a reply's comment is posted on, off the one that read its update, so that a
        tracker that hangs holds up no press (None: on it); `thread_card`: the card a forum
        topic of one issue's own is about, where a capability keeps such topics."""
        self._team = team
        self._thread_card = thread_card
        self._answering = answering
        self._bot_id = bot_id
        self._taking = taking
        self._acting = acting

    def handle_update(self, update: dict[str, Any]) -> None:
        """One of Telegram's updates with a message: a reply to the relay's is handled, once;
        any other message is the team's own conversation, not the relay's."""
        reply = Reply.of(update)
        if reply is None or not self._may_act(reply):
            return
        try:
            if not self._first_time(reply, update.get("update_id")):
                return
            kept = self._kept(reply)
        except SpoolError as exc:
            log.warning("a reply by %s could not be handled: %s", reply.by.handle, exc)
            self._count("failed")
            return
        if kept is None or not kept.buttons:
            self._not_ours(reply, kept is not None)
            return
        if self._acting is None:
            self._act_on(reply, kept)
        elif not self._acting.submit(lambda: self._act_on(reply, kept)):
            log.warning("a reply by %s could not be posted now: too much waits", reply.by.handle)
            self._count("failed")

    def _kept(self, reply: Reply) -> SentMessage | None:
        """The message the reply is about: the one it answers, or, in a forum topic of one
        issue's own (rooms/), the card posted there: any message written in it is about its
        issue, as a reply under that card. Raises SpoolError."""
        store = self._team.store
        kept = store.message(reply.chat, reply.replied_to)
        if (kept is not None and kept.buttons) or reply.thread is None:
            return kept
        finds = self._thread_card
        card = finds(reply.chat, reply.thread) if finds is not None else None
        return (store.message(reply.chat, card) if card is not None else None) or kept

    def _act_on(self, reply: Reply, kept: SentMessage) -> None:
        """The reply as a comment on the issue it addresses (the message's one, or the one
        whose short id it begins with; asked which otherwise), and the issue taken by its
        writer where the message's route lets replies take."""
        button, text = _addressed(kept.buttons, reply.text)
        if button is None:
            labels = ", ".join(b.label for b in kept.buttons)
            self._say(reply, Said("reply_which_issue", {"labels": labels}))
            self._count("asked")
            return
        if self._comment(reply, button, text) and kept.replies_take:
            self._take(reply, kept, button)

    def _take(self, reply: Reply, kept: SentMessage, button: IssueButton) -> None:
        """The reply's writer takes the issue (nothing when someone has it, or it is closed):
        the cards say so, and its calls stop, as On it does."""
        if self._taking is None:
            return
        try:
            shown = self._taking.take(kept, button, reply.by.handle, reply.by.id)
        except SpoolError as exc:
            log.warning(
                "a reply by %s was a comment on %s, but taking it could not be recorded: %s",
                reply.by.handle,
                button.label,
                exc,
            )
            return
        if shown:
            log.info(
                "%s is on %s (a reply)",
                reply.by.handle,
                button.label,
                extra=event(
                    event="reply", issue=button.label, outcome="taken", user=reply.by.handle
                ),
            )

    def _may_act(self, reply: Reply) -> bool:
        if self._team.may_act(reply.by):
            return True
        log.info(
            "a reply by %s (user id %s) in chat %s was ignored: not in TELEGRAM_ACTION_USER_IDS",
            reply.by.handle,
            reply.by.id,
            reply.chat,
        )
        self._count("refused")
        return False

    def _first_time(self, reply: Reply, update_id: object) -> bool:
        """Record the reply as handled: whether it was not before (Telegram delivers an
        update again when its webhook's answer was slow). Raises SpoolError."""
        keys = [f"reply:{reply.chat}:{reply.message_id}"]
        if json_int(update_id) is not None:
            keys.append(f"update:{update_id}")
        if self._team.store.first_time(keys, at=self._team.clock()):
            return True
        log.info(
            "the reply %d by %s was handled before: ignored", reply.message_id, reply.by.handle
        )
        self._count("repeated")
        return False

    def _not_ours(self, reply: Reply, kept: bool) -> None:
        """A reply to a message with no issue (an uptime alert), or to one not kept: answered
        only when it is this relay's own message, which it no longer knows about."""
        if not kept and self._bot_id is not None and reply.replied_to_bot == self._bot_id:
            self._say(reply, Said("reply_not_kept"))
        self._count("unknown")

    def _comment(self, reply: Reply, button: IssueButton, text: str) -> bool:
        """The reply as a comment on the issue; whether GlitchTip took it."""
        comment = f"{self._team.words.comment_author.format(author=reply.by.signature)}\n{text}"
        try:
            self._team.trackers.comment(button.issue_id, comment[:MAX_COMMENT], org=button.org)
        except TrackerError as exc:
            fix = operator_fix(exc)
            log.log(
                logging.WARNING if fix is None else logging.ERROR,
                "a reply by %s could not be posted as a comment on %s: %s%s",
                reply.by.handle,
                button.label,
                exc,
                "" if fix is None else f". FIX: {fix} (the person was told the operator has it)",
                extra=event(event="reply", issue=button.label, outcome="failed", error=str(exc)),
            )
            source = source_shown(self._team.words, button.issue_id)
            self._say(
                reply, Said("comment_not_posted", {"why": tracker_notice(exc)}, source=source)
            )
            self._count("failed")
            return False
        log.info(
            "a reply by %s was posted as a comment on %s in %s",
            reply.by.handle,
            button.label,
            source_shown(self._team.words, button.issue_id),
            extra=event(
                event="reply", issue=button.label, outcome="commented", user=reply.by.handle
            ),
        )
        self._count("commented")
        # Where the chat takes no reactions, a reply says it instead.
        posted = Said(
            "comment_posted",
            {"label": button.label},
            source=source_shown(self._team.words, button.issue_id),
        )
        try:
            self._answering.react(reply.asker, POSTED, instead=posted)
        except SpoolError as exc:
            log.warning(
                "the reply by %s could not be confirmed in the chat: %s", reply.by.handle, exc
            )
        return True

    def _say(self, reply: Reply, said: Said) -> None:
        try:
            self._answering.answer(reply.asker, said)
        except SpoolError as exc:
            log.warning("the reply by %s could not be answered: %s", reply.by.handle, exc)

    def _count(self, outcome: ReplyOutcome) -> None:
        if self._team.metrics is not None:
            self._team.metrics.of(REPLIES).labels(outcome).inc()


def _addressed(buttons: tuple[IssueButton, ...], text: str) -> tuple[IssueButton | None, str]:
    """The issue a reply is for, and its text: the message's one issue; for several, the one
    whose short id the reply begins with (taken off the text)."""
    if len(buttons) == 1:
        return buttons[0], text
    first, _, rest = text.partition(" ")
    wanted = first.rstrip(":,.—-").casefold()
    for button in buttons:
        if button.label.casefold() == wanted and rest.strip():
            return button, rest.strip()
    return None, text
