"""A chart against a real GlitchTip (../shared/glitchtip-live, started with its run_glitchtip.sh),
run by hand: the relay under gunicorn against the fake Telegram, its GlitchTip the real one.

GlitchTip sends its real webhook for a new issue (one event); four more events of the same issue
follow, sent by the real sentry-sdk. The relay's question is asked as it asks it
(`issue_history`: issues-stats by hour and by day, the latest event's release) and its answer
printed; then 📈 on the card: the photo under it, its caption, its picture written to
/tmp/chart-glitchtip.png; then Resolve on the photo resolves the issue in GlitchTip and edits the
photo's caption. Prints what it saw at each step, and how long each took.

    GT_ROOT=/tmp/glitchtip .venv/bin/python bench/charts_glitchtip.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.rooms_glitchtip import (  # noqa: E402
    GLITCHTIP,
    GT,
    ORG,
    SHARED,
    relay_against_glitchtip,
    step,
)
from relay_app.glitchtip.api import GlitchTipApi  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess  # noqa: E402
from tests.fake_telegram import FakeTelegram, Posted  # noqa: E402

MORE_EVENTS = 4
PICTURE = Path(tempfile.gettempdir()) / "chart-glitchtip.png"


def dsn(api: requests.Session) -> str:
    keys = api.get(f"{GLITCHTIP}/api/0/projects/{ORG}/alert-test/keys/", timeout=5).json()
    return str(keys[0]["dsn"]["public"])


def more_events(api: requests.Session, issue_id: str) -> None:
    """MORE_EVENTS more of the issue's events, as the real sentry-sdk sends them (the trigger's
    fingerprint: its `trigger` tag)."""
    event = api.get(f"{GLITCHTIP}/api/0/issues/{issue_id}/events/latest/", timeout=5).json()
    tag = next(t["value"] for t in event["tags"] if t["key"] == "trigger")
    for _ in range(MORE_EVENTS):
        subprocess.run(
            [
                "bash",
                "-c",
                f". ./env.sh && venv/bin/python {SHARED / 'send_event.py'} {dsn(api)} {tag}",
            ],
            cwd=GT,
            check=True,
            capture_output=True,
        )


def photos_under(fake: FakeTelegram, card: Posted) -> list[Posted]:
    return [p for p in fake.posted_to(CHAT_ID) if p.reply_to == card.message_id and p.photo]


def main() -> None:
    # The bench's own question needs project:read: the project's DSN, for more events.
    with relay_against_glitchtip("project:read") as live_relay:
        live(live_relay.fake, live_relay.api, live_relay.token, live_relay.relay)


def live(fake: FakeTelegram, api: requests.Session, token: str, relay: RelayProcess) -> None:
    started = time.monotonic()
    subprocess.run([str(GT / "trigger_alert.sh"), relay.webhook_url], check=True)
    step("GlitchTip's webhook: the card", started, lambda: fake.posted_to(CHAT_ID), 30)
    card = fake.posted_to(CHAT_ID)[0]
    issue_id = card.text.split("/issues/")[1].split('"')[0].split("/")[0]
    more_events(api, issue_id)

    def counted() -> bool:
        found = api.get(f"{GLITCHTIP}/api/0/issues/{issue_id}/", timeout=5).json()
        return str(found.get("count")) == str(1 + MORE_EVENTS)

    step(f"{1 + MORE_EVENTS} events of the issue in GlitchTip", started, counted, 60)
    history = GlitchTipApi(token, GLITCHTIP, timeout=5).issue_history(ORG, issue_id)
    print(f"       by hour {history.hours}; by day {history.days}")
    print(f"       first seen {history.first_seen}, release {history.release!r}")

    fake.press(card, "📈")
    step("📈: the photo under the card", started, lambda: photos_under(fake, card), 30)
    [photo] = photos_under(fake, card)
    assert photo.photo is not None
    PICTURE.write_bytes(photo.photo)
    print(f"       caption {photo.visible()!r}")
    print(f"       picture {len(photo.photo)} bytes: {PICTURE}")
    print(f"       buttons {[b['text'] for b in photo.buttons()]}")

    fake.press(photo, "✅ Resolve")

    def resolved() -> bool:
        found = api.get(f"{GLITCHTIP}/api/0/issues/{issue_id}/", timeout=5).json()
        return (
            found.get("status") == "resolved"
            and "Resolved by" in fake.message(photo.chat, photo.message_id).visible()
        )

    step("Resolve on the photo: resolved in GlitchTip, caption edited", started, resolved, 30)
    methods = {e["method"] for e in fake.edits if e["message_id"] == photo.message_id}
    print(f"       the photo's edits: {sorted(methods)}")


if __name__ == "__main__":
    main()
