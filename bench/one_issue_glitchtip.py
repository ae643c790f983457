"""One issue, one state, against a real GlitchTip (../shared/glitchtip-live, started with its
run_glitchtip.sh), run by hand: the relay under gunicorn against the fake Telegram, its GlitchTip
the real one.

What a user met on 71402a6 (issue 63): a link pasted after someone took the issue got a card
that offered On it and did not name the taker, twice in a row. Here GlitchTip sends its real
webhook for a new issue; @ada presses On it; once the watcher has read the issue, @bo pastes
its link: the link's card must say @ada has it and offer Let go, not On it. @cy then pastes a
link written another way: the same issue, whose card the chat got a moment ago, gets none
again. The issue resolved in GlitchTip's UI then shows on both cards, offering Reopen. Prints
what it saw at each step, and how long each took.

    GT_ROOT=/tmp/glitchtip .venv/bin/python bench/one_issue_glitchtip.py
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.rooms_glitchtip import GLITCHTIP, GT, ORG, relay_against_glitchtip, step  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess  # noqa: E402
from tests.fake_telegram import FakeTelegram, Posted  # noqa: E402

# The watcher's round, short: a link gets a card once GlitchTip's own answer shows the chat's
# organization holds the issue.
WATCH_INTERVAL = "2"


def main() -> None:
    with relay_against_glitchtip(RELAY_WATCH_INTERVAL=WATCH_INTERVAL) as live_relay:
        live(live_relay.fake, live_relay.api, live_relay.relay, live_relay.spool)


def replies(fake: FakeTelegram, asked: int) -> list[Posted]:
    return fake.replies_to(CHAT_ID, asked)


def labels(posted: Posted) -> list[str]:
    return [button["text"] for button in posted.buttons()]


def link_card(fake: FakeTelegram, asked: int) -> Posted:
    [card] = replies(fake, asked)
    return fake.message(CHAT_ID, card.message_id)


def live(fake: FakeTelegram, api: requests.Session, relay: RelayProcess, spool: str) -> None:
    started = time.monotonic()
    subprocess.run([str(GT / "trigger_alert.sh"), relay.webhook_url], check=True)
    step("GlitchTip's webhook: the alert's card", started, lambda: fake.posted_to(CHAT_ID), 30)
    alert = fake.posted_to(CHAT_ID)[0]
    link = next(b for b in alert.text.split('"') if "/issues/" in b)
    issue_id = link.rstrip("/").rsplit("/", 1)[1]
    print(f"       issue {issue_id}: {link}")

    fake.press(alert, "👀 On it", user_id=4242, username="ada")

    def taken() -> bool:
        return "is on it" in fake.message(CHAT_ID, alert.message_id).visible()

    step("@ada presses On it: the alert's card says so", started, taken, 30)

    def followed() -> bool:
        with closing(sqlite3.connect(spool)) as db:
            found = db.execute("SELECT 1 FROM organizations WHERE org = ?", (ORG,)).fetchone()
        return found is not None

    step("the watcher read the issue: the chat follows its organization", started, followed, 30)
    asked = fake.say(CHAT_ID, f"what is this? {link}", user_id=5151, username="bo")
    step("@bo pastes the link: its card", started, lambda: replies(fake, asked), 30)

    def names_the_taker(asked: int) -> bool:
        card = link_card(fake, asked)
        return "@ada is on it" in card.visible() and "👀 On it" not in labels(card)

    step(
        "the link's card names @ada and offers no On it",
        started,
        lambda: names_the_taker(asked),
        30,
    )
    first = link_card(fake, asked)
    print(f"       {first.visible().splitlines()[-1]!r}; buttons {labels(first)}")

    other = f"{GLITCHTIP}/{ORG}/issues/{issue_id}"  # no trailing slash: another way to write it
    fake.say(CHAT_ID, other, user_id=6161, username="cy")

    def repeated() -> bool:
        text = requests.get(f"{relay.url}/metrics", timeout=5).text
        return 'relay_link_cards_total{outcome="repeated"} 1.0' in text

    step("@cy pastes it written another way: the same issue, no second card", started, repeated, 30)

    resolved = api.put(
        f"{GLITCHTIP}/api/0/organizations/{ORG}/issues/?id={issue_id}",
        json={"status": "resolved"},
        timeout=5,
    )
    resolved.raise_for_status()

    def both_resolved() -> bool:
        cards = (fake.message(CHAT_ID, alert.message_id), link_card(fake, asked))
        return all(
            "Resolved in GlitchTip" in card.visible() and "↩️ Reopen" in labels(card)
            for card in cards
        )

    step(
        "resolved in GlitchTip's UI: both cards say so and offer Reopen", started, both_resolved, 30
    )


if __name__ == "__main__":
    main()
