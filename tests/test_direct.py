"""Calls that reach a person (oncall/people.py, oncall/direct.py): `/start` in a private chat
with the bot is kept; a route's `direct = true` calls its people privately at the alert's
delivery, and a step's `direct` at the step, each a message with the call, a link to the alert
and its card's buttons; whoever has not started a chat is named in the chat's call with how to.
A press on the private message's buttons acts on the alert in its chat, from the private chat of
someone called for it, and from nowhere else. The relay as a whole, on the test's clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from relay_app import Relay
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import parse_callback
from relay_app.intake.receive import receive
from relay_app.oncall.direct import message_link
from relay_app.oncall.people import PeopleStore
from relay_app.routes import parse_routes
from relay_app.telegram.client import Extras
from tests.conftest import CHAT_ID, ROUTE_SOURCES, FakeTime
from tests.in_process import GLITCHTIP, Chat, escalation_of
from tests.payloads import issue, issue_alert, read

CHAT = str(CHAT_ID)
NOW = 1_800_000_000.0
# 2026-01-05 09:01 UTC: the rotation's first week, Anna's.
ANNA_ON_CALL = 1_767_603_660.0
ANNA, BORIS = 501, 502  # @anna_ops has started a private chat with the bot; @boris_ops has not
ROUTES = f"""
[[rotation]]
name = "payments"
people = ["@anna_ops", "@boris_ops"]
every = "1w"
start = "2026-01-05T09:00"

[[route]]
chat = "{CHAT}"
mention = ["oncall:payments"]
direct = true
escalate = [{{ after = "10m", mention = ["@anna_ops", "@boris_ops"] }}]
"""


def private(text: str, update_id: int, user: int, username: str) -> dict[str, Any]:
    """A person's message in their private chat with the bot."""
    sender = {"id": user, "is_bot": False, "first_name": username.title(), "username": username}
    message = {
        "message_id": 10 + update_id,
        "from": sender,
        "chat": {"id": user, "type": "private"},
        "text": text,
    }
    return {"update_id": update_id, "message": message}


def press(data: str, update_id: int, user: int, chat: int, message_id: int) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"p{update_id}",
            "from": {"id": user, "is_bot": False, "first_name": "X", "username": "anna_ops"},
            "message": {"message_id": message_id, "chat": {"id": chat}},
            "data": data,
        },
    }


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = NOW
    return Chat.of(built, fake_time, routes=parse_routes(ROUTES, "r.toml", ROUTE_SOURCES))


def alert(chat: Chat, number: int = 1) -> None:
    payload = issue_alert(issue(number, link=f"{GLITCHTIP}/acme/issues/{number}"))
    chat.relay.webhooks.route(
        receive(read(payload), chat.relay.settings.default_destination, time.monotonic())
    )
    chat.settle()
    fire(chat, chat.clock.now)  # the upkeep's next second: what is due at delivery


def fire(chat: Chat, at: float) -> None:
    chat.clock.now = at
    escalation_of(chat.relay).fire_due()
    chat.settle()


def test_start_in_a_private_chat_is_kept_and_answered_there_only(chat: Chat) -> None:
    chat.update(private("/start", 1, ANNA, "anna_ops"))
    chat.settle()
    assert chat.telegram.replies[-1][:3] == (str(ANNA), None, 11)
    assert chat.telegram.replies[-1][3].startswith("👋 From now on")
    assert chat.relay.spool is not None
    [met] = chat.relay.spool.of(PeopleStore).reachable(now=NOW)
    assert (met.user_id, met.username, met.name) == (ANNA, "anna_ops", "Anna_Ops")
    # /start in the group is no private chat: nothing kept, nothing answered.
    group = private("/start", 2, BORIS, "boris_ops")
    group["message"]["chat"] = {"id": CHAT_ID, "type": "supergroup"}
    chat.update(group)
    chat.settle()
    assert len(chat.telegram.replies) == 1
    assert [m.user_id for m in chat.relay.spool.of(PeopleStore).reachable(now=NOW)] == [ANNA]


def test_a_direct_route_calls_privately_with_the_link_and_the_buttons(chat: Chat) -> None:
    chat.update(private("/start", 1, ANNA, "anna_ops"))
    chat.clock.now = ANNA_ON_CALL
    alert(chat)
    [group_alert, dm] = chat.telegram.delivered[-2:]
    [group, to_anna] = chat.telegram.accepted_to[-2:]
    assert (group.chat, to_anna.chat) == (CHAT_ID, ANNA)
    assert dm.text.startswith(
        "📟 An alert calls you:\nOpen it in the chat: https://t.me/c/1234567890/"
    )
    assert "ZeroDivisionError" in dm.text  # the alert's card
    extras = chat.telegram.extras[-1]
    assert isinstance(extras, Extras)
    assert extras.keyboard is not None
    verbs = [
        parse_callback(b["callback_data"], REGISTRY.buttons)
        for row in extras.keyboard["inline_keyboard"]
        for b in row
    ]
    # Ignore's choices open on the card in the chat: not offered privately.
    assert [v[0] for v in verbs if v] == ["take", "resolve", "mute", "chart"]
    assert "🔔 For @anna_ops" in group_alert.text


def test_a_direct_step_calls_privately_and_names_who_cannot_be_reached(chat: Chat) -> None:
    chat.update(private("/start", 1, ANNA, "anna_ops"))
    alert(chat)
    sent_before = len(chat.telegram.delivered)
    fire(chat, chat.clock.now + 600)
    [reply] = chat.telegram.replies[-1:]
    assert reply[3] == (
        "⏰ Nobody has taken this alert in 10 min: @anna_ops @boris_ops\n"
        "📟 @boris_ops: send /start to the bot in a private chat to be called there too."
    )
    [dm] = chat.telegram.delivered[sent_before:]
    assert chat.telegram.accepted_to[-1].chat == ANNA
    assert dm.text.startswith("📟 ⏰ Nobody has taken this alert in 10 min: @anna_ops @boris_ops")


def test_a_press_in_the_private_call_acts_on_the_alert_in_its_chat(chat: Chat) -> None:
    chat.update(private("/start", 1, ANNA, "anna_ops"))
    chat.clock.now = ANNA_ON_CALL
    alert(chat)
    assert chat.telegram.accepted_to[-1].chat == ANNA
    extras = chat.telegram.extras[-1]
    assert isinstance(extras, Extras)
    assert extras.keyboard is not None
    take = extras.keyboard["inline_keyboard"][0][0]["callback_data"]
    # Boris was never called privately: his private chat's press is refused.
    chat.update(press(take, 2, BORIS, BORIS, 77))
    assert chat.answered()[-1][1] is True  # answered as an unknown button, as an alert
    # Anna's, from the private message, takes the issue in the chat: its card is edited there.
    chat.update(press(take, 3, ANNA, ANNA, 77))
    chat.settle()
    assert chat.answered()[-1][0].startswith("You are on ")
    assert [edit[0] for edit in chat.telegram.edits] == [CHAT]
    assert "is on it since" in chat.telegram.edits[-1][2]


def test_a_message_link_names_the_chat_as_telegram_does() -> None:
    assert message_link("-1001234567890", None, 41) == "https://t.me/c/1234567890/41"
    assert message_link("-1001234567890", 7, 41) == "https://t.me/c/1234567890/7/41"
    assert message_link("@ops_alerts", None, 41) == "https://t.me/ops_alerts/41"
    assert message_link("-4001", None, 41) is None  # a basic group has no links


def blocked(update_id: int, user: int, status: str = "kicked") -> dict[str, Any]:
    """Telegram's word that a person blocked the bot in their private chat with it."""
    person = {"id": user, "is_bot": False, "first_name": "Anna"}
    return {
        "update_id": update_id,
        "my_chat_member": {
            "chat": {"id": user, "type": "private"},
            "from": person,
            "date": 1,
            "old_chat_member": {"user": {"id": 1, "is_bot": True}, "status": "member"},
            "new_chat_member": {"user": {"id": 1, "is_bot": True}, "status": status},
        },
    }


def test_a_person_who_blocks_the_bot_is_named_in_the_chat_call_instead(chat: Chat) -> None:
    chat.update(private("/start", 1, ANNA, "anna_ops"))
    assert chat.relay.spool is not None
    people = chat.relay.spool.of(PeopleStore)
    # Someone else's word about Anna, or a group's change, is not hers: nothing changes.
    other = blocked(2, ANNA)
    other["my_chat_member"]["from"]["id"] = BORIS
    chat.update(other)
    group = blocked(3, ANNA)
    group["my_chat_member"]["chat"] = {"id": CHAT_ID, "type": "supergroup"}
    chat.update(group)
    assert [m.user_id for m in people.reachable(now=NOW)] == [ANNA]
    chat.update(blocked(4, ANNA))
    assert people.reachable(now=NOW) == []
    alert(chat)
    fire(chat, chat.clock.now + 600)
    assert chat.telegram.replies[-1][3].endswith(
        "📟 @anna_ops @boris_ops: send /start to the bot in a private chat to be called there too."
    )
    assert all(to.chat != ANNA for to in chat.telegram.accepted_to)
