"""Acting on an alert from the chat: how long from a press on a button to GlitchTip's change,
to the edited message, and to the press's answer.

The real `gunicorn wsgi:app` (2 workers, the relay's defaults) against the fake Telegram and the
fake GlitchTip API on 127.0.0.1, once with presses read by polling (TELEGRAM_UPDATES=poll, the
default) and once posted to the relay's webhook (TELEGRAM_UPDATES=webhook). One alert is sent,
then its button is pressed N times (Resolve, Reopen, Resolve, ...), each press waiting for the
last one's answer, as a person would. Both fakes answer at once, so this measures the relay's
own part: a real Telegram and GlitchTip add their round trips. Then, with GlitchTip hanging
(each change held 8 s, past RELAY_SEND_TIMEOUT), three presses at once on three alerts: when each
is answered. Run by hand (about a minute and a half):

    .venv/bin/python bench/actions.py [--presses N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app.telegram.updates_webhook import telegram_secret_token  # noqa: E402
from tests.e2e.helpers import post, wait_until  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env  # noqa: E402
from tests.fake_glitchtip import TOKEN, FakeGlitchTip, running_fake_glitchtip  # noqa: E402
from tests.fake_telegram import FakeTelegram, running_fake_telegram  # noqa: E402
from tests.payloads import issue, issue_alert  # noqa: E402

DEFAULTS = {"RELAY_SEND_TIMEOUT": "5", "WEB_CONCURRENCY": "2"}
ANSWER_WITHIN = 15.0


@contextmanager
def relay_with_buttons(
    mode: str, workdir: Path, name: str
) -> Iterator[tuple[RelayProcess, FakeTelegram, FakeGlitchTip]]:
    """The relay under gunicorn with buttons in the fake GlitchTip, its presses read as `mode`
    says (webhook: registered as 'relay-app telegram-webhook set' does); stopped after."""
    with running_fake_telegram() as telegram, running_fake_glitchtip() as glitchtip:
        env = relay_env(
            telegram,
            GLITCHTIP_API_TOKEN=TOKEN,
            GLITCHTIP_URL=glitchtip.url,
            TELEGRAM_UPDATES=mode,
            RELAY_SPOOL_PATH=str(workdir / f"{name}.sqlite3"),
            **DEFAULTS,
        )
        relay = RelayProcess(env, workdir / f"{name}.log").wait_ready()
        try:
            if mode == "webhook":
                telegram.webhook_url = f"{relay.url}/telegram/{env['RELAY_WEBHOOK_SECRET']}"
                telegram.webhook_secret_token = telegram_secret_token(env["TELEGRAM_BOT_TOKEN"])
            yield relay, telegram, glitchtip
        finally:
            relay.stop()


def measure(mode: str, presses: int, workdir: Path) -> list[tuple[float, float, float]]:
    """Per press: seconds to GlitchTip's change, to the edit, and to the answer."""
    with relay_with_buttons(mode, workdir, mode) as (relay, telegram, glitchtip):
        posted = send_one_alert(relay, telegram, glitchtip)
        return [one_press(telegram, glitchtip, posted, number) for number in range(presses)]


def hanging(mode: str, workdir: Path, at_once: int = 3) -> list[tuple[float, str]]:
    """`at_once` presses made together on as many alerts while GlitchTip holds every change
    past the relay's deadline: seconds to each answer, and its words."""
    with relay_with_buttons(mode, workdir, f"hanging-{mode}") as (relay, telegram, glitchtip):
        for number in range(1, at_once + 1):  # one card each, not a digest
            link = glitchtip.add_issue(number, f"BACKEND-{number}A")
            post(relay.webhook_url, issue_alert(issue(number, link=link)))
            if not wait_until(lambda n=number: len(telegram.posted_to(CHAT_ID)) == n, 10):
                raise SystemExit("an alert never reached the fake Telegram")
        glitchtip.write_delay = 8.0
        pressed = time.monotonic()
        ids = [telegram.press(card, "✅ Resolve") for card in telegram.posted_to(CHAT_ID)]
        answers = [telegram.wait_for_answer(i, timeout=ANSWER_WITHIN) for i in ids]
        if any(answer is None for answer in answers):
            raise SystemExit(f"a press was never answered: {answers}")
        return [(a["at"] - pressed, str(a["text"])) for a in answers if a is not None]


def send_one_alert(relay: RelayProcess, telegram: FakeTelegram, glitchtip: FakeGlitchTip) -> int:
    link = glitchtip.add_issue(4, "BACKEND-4A")
    post(relay.webhook_url, issue_alert(issue(4, link=link)))
    if not wait_until(lambda: len(telegram.posted_to(CHAT_ID)) == 1, timeout=10):
        raise SystemExit("the alert never reached the fake Telegram")
    return telegram.posted_to(CHAT_ID)[0].message_id


def one_press(
    telegram: FakeTelegram, glitchtip: FakeGlitchTip, message_id: int, number: int
) -> tuple[float, float, float]:
    current = telegram.message(CHAT_ID, message_id)
    label = "✅ Resolve" if number % 2 == 0 else "↩️ Reopen"
    changes, edits = len(glitchtip.changes()), len(telegram.edits)
    pressed = time.monotonic()
    press_id = telegram.press(current, label)
    answer = telegram.wait_for_answer(press_id, timeout=ANSWER_WITHIN)
    # The edit is a job, sent in the chat's turn: it may come a moment after the answer.
    done = wait_until(
        lambda: len(glitchtip.changes()) == changes + 1 and len(telegram.edits) == edits + 1,
        timeout=ANSWER_WITHIN,
    )
    if answer is None or not done:
        raise SystemExit(f"press {number} was not carried out: {answer}")
    changed = glitchtip.changes()[-1].at
    edited = telegram.edits[-1]["at"]
    return changed - pressed, edited - pressed, answer["at"] - pressed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presses", type=int, default=30)
    args = parser.parse_args()
    print(
        "| updates | presses | to GlitchTip's change p50 / p95 / max ms "
        "| to the edited message p50 / p95 / max ms | to the answer p50 / p95 / max ms |"
    )
    print("|---|---:|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for mode in ("poll", "webhook"):
            timings = measure(mode, args.presses, Path(directory))
            columns = [summary([t[i] for t in timings]) for i in range(3)]
            print(f"| {mode} | {len(timings)} | " + " | ".join(columns) + " |", flush=True)
        print("\n| updates | presses at once, GlitchTip hanging | answered after (s) | said |")
        print("|---|---:|---|---|")
        for mode in ("poll", "webhook"):
            answered = sorted(hanging(mode, Path(directory)))
            after = ", ".join(f"{seconds:.2f}" for seconds, _ in answered)
            said = answered[0][1].split(":")[0]
            print(f"| {mode} | {len(answered)} | {after} | {said} |", flush=True)


def summary(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered) * 1000:.1f} / {p95 * 1000:.1f} / {ordered[-1] * 1000:.1f}"


if __name__ == "__main__":
    main()
