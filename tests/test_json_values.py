import pytest

from relay_app.cards.presses.receive import Press
from relay_app.chat.replies import Reply
from relay_app.chat.written import Written
from relay_app.core.json_values import json_count, json_int, json_object, json_objects


def test_a_number_is_an_int_and_true_is_not_one() -> None:
    assert json_int(42) == 42
    assert json_int(-7) == -7
    assert json_int(True) is None
    assert json_int(False) is None
    assert json_int(4.0) is None
    assert json_int("42") is None
    assert json_int(None) is None


def test_objects_are_kept_and_anything_else_reads_as_empty() -> None:
    assert json_object({"a": 1}) == {"a": 1}
    assert json_object([{"a": 1}]) == {}
    assert json_object("{}") == {}
    assert json_objects([{"a": 1}, 2, "x", None, {"b": 2}]) == [{"a": 1}, {"b": 2}]
    assert json_objects({"a": 1}) == []
    assert json_objects(None) == []


def test_telegrams_updates_never_take_true_for_a_message_or_topic_id() -> None:
    chat = {"id": -100123, "type": "supergroup"}
    reply = {
        "message_id": 7,
        "chat": chat,
        "text": "on it",
        "is_topic_message": True,
        "message_thread_id": True,
        "reply_to_message": {"message_id": True, "from": {"id": True, "is_bot": True}},
    }
    assert Reply.of({"message": reply}) is None
    answering_a_real_message = {
        **reply,
        "reply_to_message": {"message_id": 5, "from": {"id": True}},
    }
    read = Reply.of({"message": answering_a_real_message})
    assert read is not None
    assert (read.replied_to, read.thread, read.replied_to_bot) == (5, None, None)

    assert Written.of({**reply, "message_id": True}) is None
    written = Written.of(reply)
    assert written is not None
    assert written.thread is None

    press = Press.of({"id": "q1", "message": {"message_id": True, "chat": chat}, "data": "x"})
    assert press.message_id is None


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        ("12", 12),
        (" 12 ", 12),
        (12.0, 12),
        (2**53, 2**53),
        (2**53 + 1, None),
        ("²", None),  # "²".isdigit() holds, and int("²") raises
        ("٤٢", None),  # another script's digits
        ("9" * 5000, None),  # past Python's 4,300 digits, int() raises
        ("1e3", None),
        ("-3", None),
        (-3, None),
        (1.5, None),
        (float("nan"), None),
        (True, None),
        (None, None),
    ],
)
def test_a_count_is_read_strictly_and_never_raises(value: object, count: int | None) -> None:
    assert json_count(value) == count
