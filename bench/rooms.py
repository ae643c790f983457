"""A storm into a per-issue route: 200 alerts over 50 issues, in a forum group where every
issue gets a topic of its own and a board lists the open ones.

In process, on fake time: the relay `assemble()`d on a spool in a temporary directory against a
Telegram that keeps its limits on the bench's clock (one message a second per chat, twenty a
minute per group, 429 with retry_after beyond them: tests/telegram_rules.py), as
tests/test_storms.py does; topics made, renamed and closed count as the messages they post. The
leader's upkeep (the board's and the rooms' looks) runs every simulated second. For each
storm length it prints: topics made, the alerts' messages (digests included) and how many went
to a topic of their own, the lines pointing to a topic, the board's writes (posts and edits),
the other forum writes, 429s received, the time from the first alert until the queue drained,
and the bench's own wall time. The same storm into a plain route (no topics, no board) is the
baseline. Run by hand:

    .venv/bin/python bench/rooms.py

Targets (issue 61): no 429; every alert delivered, none lost; one topic per issue at most, made
only when its own card goes alone; the board's writes at most one per 15 s however many alerts.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app import assemble  # noqa: E402
from relay_app.capabilities import REGISTRY  # noqa: E402
from relay_app.core.routing import Destination  # noqa: E402
from relay_app.operating.config import Settings  # noqa: E402
from relay_app.operating.settings_of import sources_named  # noqa: E402
from relay_app.routes import parse_routes  # noqa: E402

# What a route's `source` may name, as the relay's parse is told.
ROUTE_SOURCES = sources_named(REGISTRY.settings)
from tests.conftest import (  # noqa: E402
    FakeTime,
    glitchtip_on,
    run_until,
)
from tests.in_process import GLITCHTIP_ON, LimitedTelegram, alone, webhook  # noqa: E402

CHAT = -1001234567890
HOME = Destination(CHAT, 7)
ALERTS, ISSUES = 200, 50
ROOMS = '[[route]]\nname = "ops"\nthread = 7\ntopics = "per_issue"\nboard = true\n'
PLAIN = '[[route]]\nname = "ops"\nthread = 7\n'
MAX_SECONDS = 3600  # simulated: the drain's bound


def storm(routes: str, over: float) -> dict[str, object]:
    clock = FakeTime()
    clock.now = 1_800_000_000.0
    telegram = LimitedTelegram(clock)
    calls_at: list[float] = []
    asked = telegram.call

    def call(chat: str, method: str, params: Any) -> Any:
        """Telegram's answer, and when the bench's clock says it came."""
        answer = asked(chat, method, params)
        calls_at.append(clock.now)
        return answer

    telegram.call = call  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(
            telegram_bot_token="123456:" + "A" * 35,
            telegram_chat_id=CHAT,
            webhook_secret="s" * 32,
            telegram_api_url="https://telegram.test",
            spool_path=f"{directory}/spool.sqlite3",
        )
        settings = replace(
            settings,
            theirs=glitchtip_on(GLITCHTIP_ON),
            details_budget=None,
            routes=parse_routes(routes, "routes.toml", ROUTE_SOURCES),
        )
        relay = assemble(settings, clock=clock, telegram=telegram)
        started, wall = clock.now, time.perf_counter()
        try:
            for n in range(ALERTS):
                arrives_at = started + over * n / ALERTS
                while clock.now < arrives_at:
                    tick(relay, clock, min(arrives_at, clock.now + 1))
                number = n % ISSUES + 1
                webhook(
                    relay, {"text": "GlitchTip Alert", **alone(number, f"Error {number}")}, HOME
                )
            while relay.spool is not None and relay.spool.queue.pending() > 0:
                if clock.now - started > MAX_SECONDS:
                    raise SystemExit("the storm did not drain within an hour (simulated)")
                tick(relay, clock, clock.now + 1)
            drained = clock.now - started
            for _ in range(30):  # the board's last edit after the drain
                tick(relay, clock, clock.now + 1)
        finally:
            relay.dispatcher.shutdown()
            relay.running.stop()
    methods = Counter(name for _, name, _ in telegram.other_calls)
    first_board = next(
        (
            at - started
            for (_, name, params), at in zip(telegram.other_calls, calls_at, strict=True)
            if name == "sendMessage" and not str(params.get("text", "")).startswith("🧵")
        ),
        None,
    )
    posts = [params for _, name, params in telegram.other_calls if name == "sendMessage"]
    pointers = sum(1 for params in posts if str(params.get("text", "")).startswith("🧵"))
    boards = len(posts) - pointers + methods["editMessageText"]
    return {
        "topics": methods["createForumTopic"],
        "alert messages": len(telegram.delivered),
        "in a topic": sum(1 for to in telegram.accepted_to if to.thread not in (None, 7)),
        "pointers": pointers,
        "board writes": boards,
        "board first (s)": round(first_board) if first_board is not None else "-",
        "other forum writes": sum(
            methods[m] for m in ("editForumTopic", "closeForumTopic", "reopenForumTopic")
        )
        + methods["pinChatMessage"],
        "429s": len(telegram.refused),
        "drained (s)": round(drained),
        "wall (s)": round(time.perf_counter() - wall, 1),
    }


def tick(relay: object, clock: FakeTime, until: float) -> None:
    """The dispatcher up to `until`, then the leader's upkeep (the board, the rooms)."""
    run_until(relay.dispatcher, clock, until)  # type: ignore[attr-defined]
    for chore in relay.running.upkeep:  # type: ignore[attr-defined]
        chore()


def main() -> None:
    rows = []
    for over in (10.0, 60.0, 300.0, 1200.0):
        rows.append((f"rooms+board, {over:.0f} s", storm(ROOMS, over)))
        rows.append((f"plain route, {over:.0f} s", storm(PLAIN, over)))
    columns = list(rows[0][1])
    print(f"{ALERTS} alerts over {ISSUES} issues into one forum group (fake time)")
    print(f"{'storm':<22}" + "".join(f"{c:>17}" for c in columns))
    for name, row in rows:
        print(f"{name:<22}" + "".join(f"{row[c]!s:>17}" for c in columns))


if __name__ == "__main__":
    main()
