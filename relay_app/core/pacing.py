"""Telegram's rate limits, as rules for when the next message to a chat may go.

Telegram answers a bot that sends faster than about one message a second to a chat, twenty a
minute to a group, or thirty a second overall with 429 and a pause (`retry_after`); a relay that
hits those limits in an alert storm spends its time being told to wait. So every send, the
webhook's own and every background one, first takes a turn here. The rules are pure functions
over the recent sends; the spool keeps those sends for all workers and processes that share it
(spool/pacer.py), the in-memory one included.

Each limit carries a margin: Telegram counts arrivals, and two requests that leave 1.0 s apart
can arrive closer than that. A group's twenty a minute are spread evenly, one every 3.05 s,
rather than sent in a burst: Telegram may hold a group to that (a burst then earns a 429 per
message), and a backlog's messages, fifty alerts and more each, lose nothing by the spacing. A
message Telegram refused with 429 gives its turn back: its `retry_after` alone says when the
next may go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .clock import stepped_back


@dataclass(frozen=True)
class Pace:
    """Telegram's limits as the relay keeps them. The defaults are Telegram's own, each with
    its margin; a test or a drill against a stand-in may compress them (timing.py), never a
    relay that talks to Telegram itself."""

    # About one message a second per chat. The margin covers a request that leaves on time
    # but arrives late (a busy host, a slow proxy) right before one that does not.
    chat_interval: float = 1.2
    # At most twenty messages a minute in a group or supergroup, spread evenly over it.
    group_limit: int = 20
    group_window: float = 61.0
    # About thirty messages a second for the whole bot.
    bot_limit: int = 30
    bot_window: float = 1.05

    @property
    def group_interval(self) -> float:
        return self.group_window / self.group_limit

    @property
    def remembered_for(self) -> float:
        """Sends older than this can no longer hold anything back."""
        return self.group_window

    def interval(self, *, group: bool) -> float:
        """The least time between two messages to a chat."""
        return self.group_interval if group else self.chat_interval

    def scaled(self, factor: float) -> Pace:
        return replace(
            self,
            chat_interval=self.chat_interval * factor,
            group_window=self.group_window * factor,
            bot_window=self.bot_window * factor,
        )


TELEGRAMS = Pace()
# Telegram's, as names the tests and benchmarks read.
CHAT_INTERVAL = TELEGRAMS.chat_interval
GROUP_LIMIT = TELEGRAMS.group_limit
GROUP_WINDOW = TELEGRAMS.group_window
GROUP_INTERVAL = TELEGRAMS.group_interval
BOT_LIMIT = TELEGRAMS.bot_limit
BOT_WINDOW = TELEGRAMS.bot_window


def next_send_at(
    now: float,
    *,
    to_chat: Sequence[float],
    by_bot: Sequence[float],
    paused_until: float | None,
    group: bool,
    pace: Pace = TELEGRAMS,
) -> float:
    """The earliest time, `now` or later, when one more message may go to the chat.
    `to_chat` holds the chat's recent send times and `by_bot` the bot's, newest first; only
    the newest `pace.group_limit` and `pace.bot_limit` of each matter. A send time well after
    `now` (the clock stepped back since it was recorded) no longer counts: a step back never
    stalls a chat."""
    to_chat = [at for at in to_chat if not stepped_back(at, now)]
    by_bot = [at for at in by_bot if not stepped_back(at, now)]
    return max(
        now,
        paused_until or now,
        _after_nth(to_chat, 1, pace.interval(group=group)),
        _after_nth(to_chat, pace.group_limit, pace.group_window) if group else now,
        _after_nth(by_bot, pace.bot_limit, pace.bot_window),
    )


def _after_nth(newest_first: Sequence[float], nth: int, window: float) -> float:
    """When the `nth` newest send leaves a window that allows `nth` sends; no bound when
    there were fewer."""
    return newest_first[nth - 1] + window if len(newest_first) >= nth else float("-inf")
