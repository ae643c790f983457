"""What the watcher of GlitchTip costs a round: requests and seconds to ask about the issues the
relay alerted on, against the fake GlitchTip on 127.0.0.1 (the relay's own GlitchTipApi, spool
and Watcher; a round is what one process of the fleet does each RELAY_WATCH_INTERVAL).

    .venv/bin/python bench/watcher.py

Rows: 100 and 1,000 watched issues (the most a round asks about is 1,000, the newest), each
with a card in the chat, all unresolved or half resolved in GlitchTip's UI (their cards brought
in step: the buttons changed, the edits queued), with 10 of them escalating."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app.cards.card import IssueButton, SentMessage  # noqa: E402
from relay_app.cards.in_step import CardsInStep  # noqa: E402
from relay_app.cards.sent import SentStore  # noqa: E402
from relay_app.core.sources import Sources  # noqa: E402
from relay_app.delivery.outbox import Outbox  # noqa: E402
from relay_app.glitchtip.api import GlitchTipApi  # noqa: E402
from relay_app.glitchtip.source import GLITCHTIP  # noqa: E402
from relay_app.message.subjects import Home, IssueHomes  # noqa: E402
from relay_app.operating.console import print_table  # noqa: E402
from relay_app.spool import on_store  # noqa: E402
from relay_app.spool.database import Database  # noqa: E402
from relay_app.watch.store import (  # noqa: E402
    Watched,
    WatchStore,
)
from relay_app.watch.watcher import AfterRound, Watcher, WatchPlan  # noqa: E402
from tests.fake_glitchtip import TOKEN, running_fake_glitchtip  # noqa: E402
from tests.payloads import issue  # noqa: E402

ESCALATING = 10


def one(watched: int, resolved_share: float, directory: Path) -> list[str]:
    now = time.time()
    hour = int(now // 3600) * 3600
    with running_fake_glitchtip() as fake:
        spool = on_store(Database(str(directory / f"spool-{watched}-{resolved_share}.sqlite3")))
        for number in range(1, watched + 1):
            fake.add_issue(number, f"BENCH-{number}")
            if number <= watched * resolved_share:
                fake.issues[str(number)]["status"] = "resolved"
            spike = 5000 if number > watched - ESCALATING else 3
            fake.hourly[str(number)] = [[hour - 3600 * b, 3] for b in range(23, 0, -1)]
            fake.hourly[str(number)].append([hour, spike])
        spool.of(WatchStore).watch(
            [
                Watched(str(n), "acme", {"attachments": [issue(n)]}, "-1001", None)
                for n in range(1, watched + 1)
            ],
            now=now,
        )
        for number in range(1, watched + 1):
            button = IssueButton(f"key-{number}", str(number), fake.url, f"BENCH-{number}")
            card = SentMessage("-1001", number, "<b>alert</b>", now, buttons=(button,))
            spool.of(SentStore).keep(card, [])
        cards = CardsInStep(
            spool.of(SentStore),
            Outbox(spool.queue, wake=lambda: None),
            origin=fake.url,
            source=GLITCHTIP.shown,
        )
        posted: list[str] = []
        watcher = Watcher(
            spool.of(WatchStore),
            GlitchTipApi(TOKEN, fake.url, timeout=5.0),
            WatchPlan(
                every=60.0,
                min_events=100,
                links=IssueHomes(((GLITCHTIP, Home(fake.url)),)),
                sources=Sources((GLITCHTIP,)),
            ),
            AfterRound(
                lambda found, _trend: posted.append(found.issue_id),
                follow=lambda states, at: cards.follow(states, asked_at=at),
            ),
        )
        started = time.monotonic()
        done = watcher.round()
        seconds = time.monotonic() - started
        spool.close()
    return [
        str(watched),
        f"{resolved_share:.0%}",
        str(done.asked),
        f"{seconds * 1000:.0f}",
        str(done.in_step),
        str(len(posted)),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        rows = [
            one(watched, share, Path(directory)) for watched in (100, 1000) for share in (0.0, 0.5)
        ]
    print("\nthe watcher's round against the fake GlitchTip on 127.0.0.1")
    print_table(
        [
            ["watched", "resolved", "requests", "round ms", "cards changed", "escalating posted"],
            *rows,
        ],
        sys.stdout,
    )


if __name__ == "__main__":
    main()
