"""A reply in the chat becomes a comment on its issue (chat/replies.py), with GlitchTip's API
mocked by `responses` as the reference says it answers (201; 400 "Issue does not exist"; 403
"Permission denied"): the relay as a whole against the scripted Telegram, its reactions and
replies jobs in the spool, sent in the chat's turn."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import responses

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage
from relay_app.intake.receive import receive
from relay_app.routes import RoutesError, parse_routes
from tests.conftest import ROUTE_SOURCES, TOKEN, FakeTime
from tests.in_process import GLITCHTIP, Chat, ScriptedTelegram, alone
from tests.payloads import read
from tests.prometheus import parse, value
from tests.taking import taker
from tests.test_presses import CHAT

COMMENTS = f"{GLITCHTIP}/api/0/issues/4/comments/"
BOT_ID = int(TOKEN.split(":")[0])  # the relay's bot
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


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    return Chat.of(built, fake_time, ONE, SEVERAL)


def replies_counted(chat: Chat, outcome: str) -> float:
    return value(
        parse(chat.relay.metrics.exposition().decode()), "relay_replies_total", outcome=outcome
    )


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
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.post(COMMENTS, status=201, json={"id": 1, "type": "note", "data": {"text": "x"}})
    update = reply("Rolling back, give me ten minutes", message_id=900)
    chat.update(update)
    assert posted(glitchtip) == [
        f'"Ada Lovelace" (@ada, id {ADA}) in Telegram:\nRolling back, give me ten minutes'
    ]
    [call] = glitchtip.calls
    assert call.request.url == COMMENTS
    chat.update(update)  # Telegram delivers it again: acts once
    chat.settle()
    assert len(glitchtip.calls) == 1
    assert chat.telegram.reactions == [(CHAT, 900, "✍")]
    assert chat.telegram.replies == []


def test_where_reactions_are_off_a_short_reply_says_it_instead(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.post(COMMENTS, status=201, json={"id": 1})
    telegram = ScriptedTelegram(reactions=False)
    chat = Chat.of(built, fake_time, ONE, telegram=telegram)
    chat.update(reply("on it", message_id=901, topic=77))
    chat.settle()
    assert telegram.replies == [
        (CHAT, 77, 901, "💬 Posted as a comment on BACKEND-4A in GlitchTip.")
    ]


@pytest.mark.parametrize(
    ("status", "detail", "said"),
    [
        (400, "Issue does not exist", "GlitchTip has no such issue any more"),
        (403, "Permission denied", "GlitchTip refused the change; the relay's operator has the"),
        (403, "CSRF check Failed", "GlitchTip refused the change; the relay's operator has the"),
    ],
)
def test_a_comment_glitchtip_refuses_is_answered_with_what_to_do(
    chat: Chat, glitchtip: responses.RequestsMock, status: int, detail: str, said: str
) -> None:
    glitchtip.post(COMMENTS, status=status, json={"detail": detail})
    chat.update(reply("Fixed", message_id=902))
    chat.settle()
    [(_, _, replied_to, text)] = chat.telegram.replies
    assert replied_to == 902
    assert text.startswith("Your reply was not posted to GlitchTip: ")
    assert said in text
    assert chat.telegram.reactions == []
    assert replies_counted(chat, "failed") == 1


def test_replies_from_anyone_not_on_the_list_are_ignored(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    chat = Chat.of(built, fake_time, ONE, action_user_ids=frozenset({ADA}))
    chat.update(reply("let me in", user_id=MALLORY))
    chat.settle()
    assert (len(glitchtip.calls), chat.telegram.replies, chat.telegram.reactions) == (0, [], [])
    assert replies_counted(chat, "refused") == 1


def test_a_reply_to_a_digest_asks_which_issue_and_one_naming_it_is_posted_there(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    five = f"{GLITCHTIP}/api/0/issues/5/comments/"
    glitchtip.post(five, status=201, json={"id": 1})
    chat.update(reply("looking", to=42, message_id=903))
    chat.settle()
    [(_, _, _, asked)] = chat.telegram.replies
    assert asked == (
        "This message is about several issues: reply again beginning with the short id of the "
        "one you mean (BACKEND-4A, BACKEND-5A)."
    )
    assert len(glitchtip.calls) == 0
    chat.update(reply("backend-5a: looking", to=42))
    assert posted(glitchtip) == [f'"Ada Lovelace" (@ada, id {ADA}) in Telegram:\nlooking']
    assert glitchtip.calls[0].request.url == five


def test_other_messages_are_the_teams_own_and_a_forgotten_alert_is_said_to_be(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    chat = Chat.of(built, fake_time, ONE, language="ru")
    chat.update({"update_id": 1, "message": {"message_id": 5, "text": "hi"}})
    chat.update(reply("a reply to Bob", to=7, to_bot=False))
    chat.settle()
    assert chat.telegram.replies == []
    chat.update(reply("too late", to=7, message_id=904))
    chat.settle()
    [(_, _, _, said)] = chat.telegram.replies
    assert said.startswith("Бот больше не помнит, о чём было это сообщение")
    assert len(glitchtip.calls) == 0


def test_a_comments_author_line_cannot_be_forged_by_a_name(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    # A first name that tries to end the author line and start another person's.
    glitchtip.post(COMMENTS, status=201, json={"id": 1})
    update = reply("all clear", message_id=910, user_id=MALLORY)
    update["message"]["from"] = {
        "id": MALLORY,
        "is_bot": False,
        "first_name": 'Ada Lovelace" (@ada, id 7) in Telegram:\nI approve the rollback\n"x',
    }
    chat.update(update)
    [comment] = posted(glitchtip)
    author, text = comment.split("\n", 1)
    assert text == "all clear"  # the name did not add a line
    assert author.endswith(f" (id {MALLORY}) in Telegram:")  # Telegram's id for who wrote it
    assert author.startswith('"Ada Lovelace\\" (@ada, id 7) in Telegram:\\nI approve')


def test_a_reply_takes_its_issue_as_on_it_does_and_the_card_says_so(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    """ "rolling back, 10 min" under an alert is someone on it: the issue is theirs on every
    card of the chat that shows it, as On it would make it, and nobody else is called."""
    glitchtip.post(COMMENTS, status=201, json={"id": 1, "type": "note", "data": {"text": "x"}})
    chat.update(reply("rolling back, 10 min"))
    chat.settle()
    edited = {message_id: (html, keyboard) for _, message_id, html, keyboard in chat.telegram.edits}
    assert sorted(edited) == [41, 42]  # the alert's card, and the digest that shows it too
    html, keyboard = edited[41]
    assert "👀 @ada is on it since " in html
    assert "👀 On it" not in json.dumps(keyboard, ensure_ascii=False)
    found = chat.store.message(CHAT, 41)
    assert found is not None
    assert taker(found.buttons[0]) == "@ada"


def test_a_route_that_says_reply_takes_false_keeps_a_reply_a_comment_only(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.post(COMMENTS, status=201, json={"id": 1, "type": "note", "data": {"text": "x"}})
    chat = Chat.of(built, fake_time, replace(ONE, replies_take=False))
    chat.update(reply("I will have a look later"))
    chat.settle()
    assert len(posted(glitchtip)) == 1
    assert chat.telegram.edits == []
    found = chat.store.message(CHAT, 41)
    assert found is not None
    assert taker(found.buttons[0]) is None
    assert not found.replies_take  # kept so in the spool


def test_reply_takes_false_on_a_route_is_kept_with_the_message_its_alert_goes_in(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    routes = parse_routes("[[route]]\nname = 'ops'\nreply_takes = false\n", "r.toml", ROUTE_SOURCES)
    assert not routes.routes[0].reply_takes
    with pytest.raises(RoutesError, match="route 1, reply_takes: must be true or false"):
        parse_routes("[[route]]\nreply_takes = 'no'\n", "r.toml", ROUTE_SOURCES)
    chat = Chat.of(built, fake_time, routes=routes)
    payload = {"alias": "GlitchTip", "text": "GlitchTip Alert", **alone(7, "Payment failed")}
    chat.relay.webhooks.route(
        receive(read(payload), chat.relay.settings.default_destination, time.monotonic())
    )
    chat.settle()
    [message_id] = [sent_id for sent_id in range(1, 5) if chat.store.message(CHAT, sent_id)]
    kept = chat.store.message(CHAT, message_id)
    assert kept is not None
    assert kept.buttons[0].label == "BACKEND-7A"
    assert not kept.replies_take


def test_a_reply_is_posted_only_on_an_issue_of_the_organization_its_alert_named(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    """GlitchTip has no comments path under an organization: the issue is first asked for
    among the alert's organization's issues, and nothing is posted when it is not one."""
    card = SentMessage(
        CHAT,
        41,
        "<b>🔴 GlitchTip Alert</b>",
        fake_time.now,
        buttons=(IssueButton("k4", "4", GLITCHTIP, "BACKEND-4A", org="acme"),),
    )
    chat = Chat.of(built, fake_time, card)
    listed = f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=4"
    glitchtip.get(listed, json=[])  # not one of acme's
    glitchtip.post(COMMENTS, status=201, json={"id": 1})
    chat.update(reply("Rolling back"))
    assert [call.request.method for call in glitchtip.calls] == ["GET"]
    assert posted(glitchtip) == []
    glitchtip.replace(responses.GET, listed, json=[{"id": "4", "status": "unresolved"}])
    chat.update(reply("Rolling back, again"))
    assert len(posted(glitchtip)) == 1
