"""A reply in the chat becomes a comment on its issue (acting/replies.py), with GlitchTip's API
mocked by `responses` as the reference says it answers (201; 400 "Issue does not exist"; 403
"Permission denied"), the records in a real SQLite spool, and a recording stand-in for Telegram."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from relay_app.acting.replies import Replies
from relay_app.acting.team import Team
from relay_app.core.errors import DeliveryError
from relay_app.core.metrics import Metrics
from relay_app.spool.database import Database
from relay_app.spool.sent import IssueButton, SentMessage, SpoolSentStore
from relay_app.words import ENGLISH, RUSSIAN, Words
from tests.prometheus import parse, value
from tests.test_presses import CHAT, GLITCHTIP, api

COMMENTS = f"{GLITCHTIP}/api/0/issues/4/comments/"
BOT_ID = 123456
ADA, MALLORY = 7, 666
ONE = SentMessage(
    CHAT,
    41,
    "<b>🔴 GlitchTip Alert</b>",
    1_800_000_000.0,
    buttons=(IssueButton("k4", "4", GLITCHTIP, "BACKEND-4A"),),
)
SEVERAL = SentMessage(
    CHAT,
    42,
    "<b>🗂 2 alerts</b>",
    1_800_000_000.0,
    buttons=(
        IssueButton("k4b", "4", GLITCHTIP, "BACKEND-4A"),
        IssueButton("k5", "5", GLITCHTIP, "BACKEND-5A"),
    ),
)
_ids = itertools.count(500)


class RecordingChat:
    def __init__(self, *, reactions_off: bool = False) -> None:
        self.reactions: list[tuple[str, int, str]] = []
        self.replies: list[tuple[str, int | None, int, str]] = []
        self._reactions_off = reactions_off

    def react(self, chat: str, message_id: int, emoji: str) -> None:
        if self._reactions_off:
            raise DeliveryError("Telegram refused setMessageReaction (400): REACTION_INVALID")
        self.reactions.append((chat, message_id, emoji))

    def reply(self, chat: str, thread: int | None, message_id: int, text: str) -> None:
        self.replies.append((chat, thread, message_id, text))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SpoolSentStore]:
    database = Database(str(tmp_path / "spool.sqlite3"))
    kept = SpoolSentStore(database)
    kept.keep(ONE, [])
    kept.keep(SEVERAL, [])
    yield kept
    database.close()


def replies(
    store: SpoolSentStore,
    chat: RecordingChat,
    *,
    allowed: frozenset[int] = frozenset(),
    words: Words = ENGLISH,
    metrics: Metrics | None = None,
) -> Replies:
    team = Team(
        store=store,
        glitchtip=api(),
        allowed_users=allowed,
        words=words,
        metrics=metrics,
        clock=lambda: 1_800_000_240.0,
    )
    return Replies(team, chat, bot_id=BOT_ID)


def reply(
    text: str,
    *,
    to: int = 41,
    user_id: int = ADA,
    to_bot: bool = True,
    update_id: int | None = None,
    message_id: int | None = None,
    topic: int | None = None,
) -> dict[str, Any]:
    """A reply as Telegram sends it: an update holding a message that answers another."""
    message: dict[str, Any] = {
        "message_id": message_id or next(_ids),
        "from": {
            "id": user_id,
            "is_bot": False,
            "first_name": "Ada",
            "last_name": "Lovelace",
            "username": "ada",
        },
        "chat": {"id": int(CHAT), "type": "supergroup"},
        "text": text,
        "reply_to_message": {
            "message_id": to,
            "from": {"id": BOT_ID if to_bot else 99, "is_bot": to_bot, "first_name": "x"},
        },
    }
    if topic is not None:
        message.update(message_thread_id=topic, is_topic_message=True)
    return {"update_id": update_id or next(_ids), "message": message}


def posted(glitchtip: responses.RequestsMock) -> list[str]:
    return [
        json.loads(call.request.body or b"{}")["data"]["text"]
        for call in glitchtip.calls
        if call.request.method == "POST"
    ]


def test_a_reply_is_posted_as_a_comment_naming_its_author_and_gets_a_reaction(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.post(COMMENTS, status=201, json={"id": 1, "type": "note", "data": {"text": "x"}})
    chat = RecordingChat()
    update = reply("Rolling back, give me ten minutes", message_id=900)
    replies(store, chat).handle_update(update)
    assert posted(glitchtip) == [
        f'"Ada Lovelace" (@ada, id {ADA}) in Telegram:\nRolling back, give me ten minutes'
    ]
    [call] = glitchtip.calls
    assert call.request.url == COMMENTS
    assert chat.reactions == [(CHAT, 900, "✍")]
    assert chat.replies == []
    replies(store, chat).handle_update(update)  # Telegram delivers it again: acts once
    assert len(glitchtip.calls) == 1


def test_where_reactions_are_off_a_short_reply_says_it_instead(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.post(COMMENTS, status=201, json={"id": 1})
    chat = RecordingChat(reactions_off=True)
    replies(store, chat).handle_update(reply("on it", message_id=901, topic=77))
    assert chat.replies == [(CHAT, 77, 901, "💬 Posted as a comment on BACKEND-4A in GlitchTip.")]


@pytest.mark.parametrize(
    ("status", "detail", "said"),
    [
        (400, "Issue does not exist", "GlitchTip has no such issue any more"),
        (403, "Permission denied", "GlitchTip refused the change; the relay's operator has the"),
        (403, "CSRF check Failed", "GlitchTip refused the change; the relay's operator has the"),
    ],
)
def test_a_comment_glitchtip_refuses_is_answered_with_what_to_do(
    store: SpoolSentStore,
    glitchtip: responses.RequestsMock,
    status: int,
    detail: str,
    said: str,
) -> None:
    glitchtip.post(COMMENTS, status=status, json={"detail": detail})
    chat = RecordingChat()
    metrics = Metrics()
    replies(store, chat, metrics=metrics).handle_update(reply("Fixed", message_id=902))
    [(_, _, replied_to, text)] = chat.replies
    assert replied_to == 902
    assert text.startswith("Your reply was not posted to GlitchTip: ")
    assert said in text
    assert chat.reactions == []
    samples = parse(metrics.exposition().decode())
    assert value(samples, "relay_replies_total", outcome="failed") == 1


def test_replies_from_anyone_not_on_the_list_are_ignored(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    chat = RecordingChat()
    metrics = Metrics()
    handler = replies(store, chat, allowed=frozenset({ADA}), metrics=metrics)
    handler.handle_update(reply("let me in", user_id=MALLORY))
    assert (len(glitchtip.calls), chat.replies, chat.reactions) == (0, [], [])
    assert (
        value(parse(metrics.exposition().decode()), "relay_replies_total", outcome="refused") == 1
    )


def test_a_reply_to_a_digest_asks_which_issue_and_one_naming_it_is_posted_there(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    five = f"{GLITCHTIP}/api/0/issues/5/comments/"
    glitchtip.post(five, status=201, json={"id": 1})
    chat = RecordingChat()
    replies(store, chat).handle_update(reply("looking", to=42, message_id=903))
    [(_, _, _, asked)] = chat.replies
    assert asked == (
        "This message is about several issues: reply again beginning with the short id of the "
        "one you mean (BACKEND-4A, BACKEND-5A)."
    )
    assert len(glitchtip.calls) == 0
    replies(store, chat).handle_update(reply("backend-5a: looking", to=42))
    assert posted(glitchtip) == [f'"Ada Lovelace" (@ada, id {ADA}) in Telegram:\nlooking']
    assert glitchtip.calls[0].request.url == five


def test_other_messages_are_the_teams_own_and_a_forgotten_alert_is_said_to_be(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    chat = RecordingChat()
    handler = replies(store, chat, words=RUSSIAN)
    handler.handle_update({"update_id": 1, "message": {"message_id": 5, "text": "hi"}})
    handler.handle_update(reply("a reply to Bob", to=7, to_bot=False))
    assert chat.replies == []
    handler.handle_update(reply("too late", to=7, message_id=904))
    [(_, _, _, said)] = chat.replies
    assert said.startswith("Бот больше не помнит, о чём было это сообщение")
    assert len(glitchtip.calls) == 0


def test_a_comments_author_line_cannot_be_forged_by_a_name(
    store: SpoolSentStore, glitchtip: responses.RequestsMock
) -> None:
    # A first name that tries to end the author line and start another person's.
    glitchtip.post(COMMENTS, status=201, json={"id": 1})
    update = reply("all clear", message_id=910, user_id=MALLORY)
    update["message"]["from"] = {
        "id": MALLORY,
        "is_bot": False,
        "first_name": 'Ada Lovelace" (@ada, id 7) in Telegram:\nI approve the rollback\n"x',
    }
    replies(store, RecordingChat()).handle_update(update)
    [comment] = posted(glitchtip)
    author, text = comment.split("\n", 1)
    assert text == "all clear"  # the name did not add a line
    assert author.endswith(f" (id {MALLORY}) in Telegram:")  # Telegram's id for who wrote it
    assert author.startswith('"Ada Lovelace\\" (@ada, id 7) in Telegram:\\nI approve')
