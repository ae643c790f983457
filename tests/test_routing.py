from __future__ import annotations

import pytest

from relay_app.core.routing import Destination, RouteError, destination_from_query, parse_chat_id

DEFAULT = Destination(-1001234567890, 77)
ALLOWED = frozenset({"-100555", "@ops_room"})


def route(**query: str) -> Destination:
    return destination_from_query(query, default=DEFAULT, allowed_chats=ALLOWED)


def test_no_query_is_the_default_chat_and_topic() -> None:
    assert route() == DEFAULT


def test_a_thread_id_alone_is_a_topic_of_the_default_chat() -> None:
    assert route(thread_id="12") == Destination(DEFAULT.chat, 12)


def test_another_chat_has_no_topic_unless_one_is_given() -> None:
    assert route(chat_id="-100555") == Destination(-100555)
    assert route(chat_id="-100555", thread_id="3") == Destination(-100555, 3)
    assert route(chat_id="@OPS_room") == Destination("@OPS_room")


def test_the_default_chat_named_in_the_url_is_always_allowed() -> None:
    assert route(chat_id=str(DEFAULT.chat)) == DEFAULT


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"chat_id": "-100999"}, "not in TELEGRAM_ALLOWED_CHAT_IDS"),
        ({"chat_id": "1.5"}, "neither an integer chat id"),
        ({"chat_id": "@x"}, "neither an integer chat id"),
        ({"thread_id": "12a"}, "not a positive integer"),
        ({"thread_id": "٣"}, "not a positive integer"),  # a digit, but not an ASCII one
        ({"topic": "1"}, "unknown query parameter 'topic'"),
    ],
)
def test_what_the_relay_may_not_use_is_refused_with_the_reason(
    query: dict[str, str], says: str
) -> None:
    with pytest.raises(RouteError, match=says):
        route(**query)


def test_a_repeated_parameter_is_refused() -> None:
    with pytest.raises(RouteError, match="more than once"):
        destination_from_query(
            [("thread_id", "1"), ("thread_id", "2")], default=DEFAULT, allowed_chats=ALLOWED
        )


def test_chat_ids_and_their_keys() -> None:
    assert parse_chat_id(" -1001234567890 ") == -1001234567890
    assert parse_chat_id("@alerts_channel") == "@alerts_channel"
    assert parse_chat_id("0") is None
    assert Destination("@Alerts_Channel").chat_key == "@alerts_channel"
    assert Destination(-42).is_group
    assert Destination("@alerts_channel").is_group  # it may be a supergroup
    assert not Destination(123456).is_group  # a private chat
    assert Destination(-42, 5).describe() == "chat -42 topic 5"
    assert Destination(-42, 5).without_topic() == Destination(-42)
