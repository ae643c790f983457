"""A taker who goes quiet (oncall/recalls.py) and Let go (takes/buttons.py): with a
route's `take_for`, an issue taken and still open is called again to its taker after that long,
and after as long again it is nobody's: On it comes back on its cards and the alert's calls go on
where they stopped. Resolve, Mute or Let go end it quietly. Only the taker may let go. The relay
as a whole against the scripted Telegram, on the test's clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from relay_app import Relay
from relay_app.cards.card import Button, Verb, callback_data
from relay_app.intake.receive import receive
from relay_app.routes import RoutesError, parse_routes
from relay_app.takes.buttons import LET_GO, TAKE
from tests.conftest import CHAT_ID, ROUTE_SOURCES, FakeTime
from tests.in_process import GLITCHTIP, Chat, escalation_of
from tests.payloads import issue, issue_alert, read
from tests.prometheus import parse, value
from tests.taking import taker, taker_id

CHAT = str(CHAT_ID)
NOW = 1_800_000_000.0
ROUTES = f"""
[[route]]
chat = "{CHAT}"
take_for = "1h"
escalate = [
  {{ after = "10m", mention = ["@lead_one"] }},
  {{ after = "2h", mention = ["@cto_ivan"] }},
]
"""


def press(
    verb: Verb | Button, key: str, update_id: int, message_id: int, *, by: int = 7
) -> dict[str, Any]:
    name = {7: "ada_ops", 8: "bob_ops"}[by]
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"p{update_id}",
            "from": {"id": by, "is_bot": False, "first_name": name, "username": name},
            "message": {"message_id": message_id, "chat": {"id": CHAT_ID}},
            "data": callback_data(verb, key),
        },
    }


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = NOW
    chat = Chat.of(built, fake_time, routes=parse_routes(ROUTES, "r.toml", ROUTE_SOURCES))
    payload = issue_alert(issue(1, link=f"{GLITCHTIP}/acme/issues/1"))
    chat.relay.webhooks.route(
        receive(read(payload), chat.relay.settings.default_destination, time.monotonic())
    )
    chat.settle()
    return chat


def card(chat: Chat) -> tuple[int, str]:
    """The alert's message id and its issue's button key."""
    [kept] = [m for m in _kept(chat)]
    return kept


def _kept(chat: Chat) -> list[tuple[int, str]]:
    sent = chat.telegram.delivered
    assert sent
    message_id = 1  # the scripted Telegram numbers messages from 1
    found = chat.store.message(CHAT, message_id)
    assert found is not None
    return [(message_id, found.buttons[0].key)]


def at(chat: Chat, moment: float) -> None:
    chat.clock.now = moment
    escalation_of(chat.relay).fire_due()
    chat.settle()


def test_a_quiet_taker_is_called_first_then_the_issue_is_nobodys_and_the_calls_go_on(
    chat: Chat,
) -> None:
    message_id, key = card(chat)
    chat.clock.now = NOW + 60
    chat.update(press(TAKE, key, 1, message_id))
    chat.settle()
    at(chat, NOW + 600)  # the 10 min step: stopped, Ada has it
    assert chat.telegram.replies == []
    at(chat, NOW + 60 + 3600)
    assert chat.telegram.replies[-1][3] == (
        "⏰ BACKEND-1A is still open, @ada_ops's for 1 h: still on it? Resolve it, or let it go"
        " and the calls go on; in 1 h more it is nobody's."
    )
    assert chat.telegram.replies_silent[-1] is False  # it rings
    at(chat, NOW + 60 + 7200)
    assert chat.telegram.replies[-1][3] == (
        "⏰ No word from @ada_ops on BACKEND-1A in 1 h: it is nobody's again, and the calls go on."
    )
    # The calls go on where they stopped: the 10 min step (never fired) in the next second.
    at(chat, NOW + 60 + 7201)
    assert chat.telegram.replies[-1][3] == "⏰ Nobody has taken this alert in 10 min: @lead_one"
    found = chat.store.message(CHAT, message_id)
    assert found is not None
    assert taker(found.buttons[0]) is None
    keyboard = chat.telegram.edits[-1][3]
    assert keyboard["inline_keyboard"][0][0]["text"] == "👀 On it"
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_escalation_steps_total", outcome="recalled") == 1
    assert value(samples, "relay_escalation_steps_total", outcome="lapsed") == 1


def test_resolving_ends_the_recall_without_a_word(chat: Chat, glitchtip_resolves: None) -> None:
    message_id, key = card(chat)
    chat.update(press(TAKE, key, 1, message_id))
    chat.update(press("resolve", key, 2, message_id))
    chat.settle()
    at(chat, NOW + 3600)
    at(chat, NOW + 7200)
    assert chat.telegram.replies == []


def test_only_the_taker_lets_go_and_the_calls_go_on_where_they_stopped(chat: Chat) -> None:
    message_id, key = card(chat)
    chat.update(press(TAKE, key, 1, message_id))
    chat.settle()
    at(chat, NOW + 900)  # the first step stopped
    chat.update(press(LET_GO, key, 2, message_id, by=8))
    assert chat.answered()[-1] == ("Only @ada_ops can let it go: it is theirs.", True)
    chat.update(press(LET_GO, key, 3, message_id))
    assert chat.answered()[-1] == (
        "You let BACKEND-1A go: it is nobody's, and the calls go on",
        False,
    )
    chat.settle()
    assert "is on it since" not in chat.telegram.edits[-1][2]
    at(chat, NOW + 901)
    assert chat.telegram.replies[-1][3] == "⏰ Nobody has taken this alert in 10 min: @lead_one"
    # The next step keeps its spacing from the first: 110 min later, not at 2 h from delivery.
    at(chat, NOW + 900 + 110 * 60 - 1)
    assert len(chat.telegram.replies) == 1
    at(chat, NOW + 900 + 110 * 60)
    assert chat.telegram.replies[-1][3].endswith("@cto_ivan")
    # Let go went no further: nobody is recalled for the take that ended.
    at(chat, NOW + 3 * 3600)
    assert len(chat.telegram.replies) == 2


def pressed_by(
    verb: Verb | Button, key: str, update_id: int, message_id: int, who: dict[str, Any]
) -> dict[str, Any]:
    """A press by whoever `who` says Telegram names (id, names, perhaps a username)."""
    update = press(verb, key, update_id, message_id)
    update["callback_query"]["from"] = {"is_bot": False, **who}
    return update


def test_a_person_is_their_user_id_and_a_name_is_shown_never_trusted(chat: Chat) -> None:
    """A first name that reads as the taker's username, or two accounts showing one name: Let
    go and On it go by Telegram's id, and the card never shows a name as a mention it is not."""
    message_id, key = card(chat)
    chat.update(press(TAKE, key, 1, message_id))  # @ada_ops, id 7
    impostor = {"id": 66, "first_name": "@ada_ops"}
    chat.update(pressed_by(LET_GO, key, 2, message_id, impostor))
    assert chat.answered()[-1] == ("Only @ada_ops can let it go: it is theirs.", True)
    chat.update(press(LET_GO, key, 3, message_id))  # the taker, by id
    assert chat.answered()[-1][1] is False
    # Two accounts with one name and no username: either is only themselves.
    first, second = {"id": 501, "first_name": "Sam"}, {"id": 502, "first_name": "Sam"}
    chat.update(pressed_by(TAKE, key, 4, message_id, first))
    chat.update(pressed_by(LET_GO, key, 5, message_id, second))
    assert chat.answered()[-1] == ("Only Sam can let it go: it is theirs.", True)
    chat.update(pressed_by(LET_GO, key, 6, message_id, first))
    assert chat.answered()[-1][1] is False
    # A first name that reads as the lead's username is shown as a name, not a mention.
    chat.update(pressed_by(TAKE, key, 7, message_id, {"id": 67, "first_name": "@vera_lead"}))
    chat.settle()
    found = chat.store.pressed(key)
    assert found is not None
    assert (taker(found[1]), taker_id(found[1])) == ("＠vera_lead", 67)
    assert "👀 ＠vera_lead is on it since" in chat.telegram.edits[-1][2]
    assert "@vera_lead" not in chat.telegram.edits[-1][2]


@pytest.fixture
def glitchtip_resolves(glitchtip: Any) -> None:
    glitchtip.put(
        f"{GLITCHTIP}/api/0/organizations/acme/issues/1/", json={"id": "1", "status": "resolved"}
    )


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('take_for = "10"', 'route 1, take_for: must be a duration like "1h"'),
        ('take_for = "8d"', 'route 1, take_for: must be a duration like "1h"'),
        ('direct = "yes"', "route 1, direct: must be true or false"),
    ],
)
def test_a_route_with_a_wrong_take_for_or_direct_is_refused(line: str, said: str) -> None:
    with pytest.raises(RoutesError) as refused:
        parse_routes(f'[[route]]\nchat = "{CHAT}"\n{line}\n', "r.toml", ROUTE_SOURCES)
    assert said in str(refused.value)
