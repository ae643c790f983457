from __future__ import annotations

from relay_app.core.pacing import (
    BOT_LIMIT,
    BOT_WINDOW,
    CHAT_INTERVAL,
    GROUP_INTERVAL,
    GROUP_LIMIT,
    GROUP_WINDOW,
    next_send_at,
)

NOW = 1_800_000_000.0


def turn(
    *,
    to_chat: list[float] | None = None,
    by_bot: list[float] | None = None,
    paused_until: float | None = None,
    group: bool = True,
) -> float:
    return next_send_at(
        NOW, to_chat=to_chat or [], by_bot=by_bot or [], paused_until=paused_until, group=group
    )


def test_a_quiet_chat_may_send_now() -> None:
    assert turn() == NOW


def test_a_chat_waits_about_a_second_after_its_last_message_and_a_group_three() -> None:
    assert turn(to_chat=[NOW - 0.4], group=False) == NOW - 0.4 + CHAT_INTERVAL
    assert turn(to_chat=[NOW - 0.4]) == NOW - 0.4 + GROUP_INTERVAL  # twenty a minute, evenly
    assert GROUP_INTERVAL * GROUP_LIMIT <= GROUP_WINDOW
    assert turn(to_chat=[NOW - 5]) == NOW


def test_a_group_waits_for_the_oldest_of_its_last_twenty_to_leave_the_minute() -> None:
    sends = [NOW - 4 - 2.5 * n for n in range(GROUP_LIMIT)]  # newest first, over 47.5 s
    assert turn(to_chat=sends) == sends[-1] + GROUP_WINDOW
    assert turn(to_chat=sends, group=False) == NOW  # a private chat has no minute limit
    assert turn(to_chat=sends[:-1]) == NOW  # nineteen: one more fits


def test_the_bot_waits_when_thirty_went_out_in_the_last_second() -> None:
    sends = [NOW - 0.01 * n for n in range(BOT_LIMIT)]
    assert turn(by_bot=sends) == sends[-1] + BOT_WINDOW


def test_telegrams_pause_holds_whatever_the_rest_says() -> None:
    assert turn(paused_until=NOW + 30) == NOW + 30
    assert turn(paused_until=NOW - 30) == NOW


def test_a_send_recorded_well_in_the_future_no_longer_counts() -> None:
    # The clock stepped back an hour since: the chat does not wait an hour (nor, ever after,
    # "a second from now").
    assert turn(to_chat=[NOW + 3600]) == NOW
    assert turn(to_chat=[NOW + 1]) == NOW + 1 + GROUP_INTERVAL  # a moment's difference counts
