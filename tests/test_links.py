"""Links answered (acting/links.py): a link to a GlitchTip issue pasted in a chat the relay
serves gets that issue's card with its buttons, in reply, once per issue per chat in 10
minutes; a link elsewhere, in a chat the relay does not serve, or in a comment on an alert gets
nothing. The relay as a whole against the scripted Telegram, GlitchTip's HTTP layer mocked by
`responses`, on the test's clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import responses

from relay_app import Relay
from relay_app.acting.links import LINK_WINDOW
from tests.conftest import CHAT_ID, FakeTime
from tests.in_process import GLITCHTIP, Chat
from tests.prometheus import parse, value

CHAT = str(CHAT_ID)
NOW = 1_800_000_000.0
ISSUE_URL = f"{GLITCHTIP}/api/0/issues/4/"
LINK = f"{GLITCHTIP}/acme/issues/4"
ISSUE = {
    "id": "4",
    "shortId": "BACKEND-4A",
    "title": "ZeroDivisionError: division by zero",
    "culprit": "shop.cart in total",
    "status": "unresolved",
    "level": "error",
    "count": "120",
    "project": {"slug": "backend", "name": "backend"},
}


def message(text: str, update_id: int, chat: str = CHAT, **more: Any) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": 700 + update_id,
            "from": {"id": 9, "is_bot": False, "first_name": "Bo"},
            "chat": {"id": int(chat), "type": "supergroup"},
            "text": text,
            **more,
        },
    }


@pytest.fixture
def chat(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> Chat:
    fake_time.now = NOW
    glitchtip.get(ISSUE_URL, json=ISSUE)
    return Chat.of(built, fake_time)


def cards(chat: Chat) -> list[Any]:
    chat.settle()
    return chat.telegram.delivered


def test_a_link_to_an_issue_gets_its_card_with_buttons_in_reply(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    chat.update(message(f"what is this? {LINK} it broke checkout", 1))
    [card] = cards(chat)
    lines = card.text.split("\n")
    assert lines[0] == "🔗 BACKEND-4A · unresolved · 120 events"
    assert "ZeroDivisionError: division by zero" in lines
    assert card.reply_to == 701
    assert [call.request.url for call in glitchtip.calls] == [ISSUE_URL]  # GLITCHTIP_URL's
    assert chat.relay.spool is not None
    kept = chat.relay.spool.sent.message(CHAT, 1)
    assert kept is not None
    assert [(b.issue_id, b.label) for b in kept.buttons] == [("4", "BACKEND-4A")]


def test_a_link_again_within_ten_minutes_gets_no_second_card(chat: Chat) -> None:
    chat.update(message(LINK, 1))
    chat.update(message(f"again: {LINK}", 2))
    assert len(cards(chat)) == 1
    chat.clock.now = NOW + LINK_WINDOW + 1
    chat.update(message(LINK, 3))
    assert len(cards(chat)) == 2
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_link_cards_total", outcome="posted") == 2
    assert value(samples, "relay_link_cards_total", outcome="repeated") == 1


def test_links_elsewhere_in_other_chats_or_in_comments_get_nothing(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    chat.update(message("https://glitchtip.other.example/acme/issues/4", 1))
    chat.update(message(LINK, 2, chat="-1009999999999"))
    answering_the_bot = {"message_id": 41, "from": {"id": 1, "is_bot": True, "first_name": "R"}}
    chat.update(message(f"see {LINK}", 3, reply_to_message=answering_the_bot))
    assert cards(chat) == []
    assert [call.request.url for call in glitchtip.calls] == []  # GlitchTip was not asked
