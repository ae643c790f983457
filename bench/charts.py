"""What a chart costs: the time and memory to draw one, and the webhook's answer while twenty are
asked for at once.

1. Drawing alone: an issue's chart (24 hours and 7 days) and the weekly report's picture, each
   drawn N times by the bounded drawing process (core/drawing.py), one at a time and two at
   once (a process's drawing threads): seconds each (p50, max) and the drawing process's peak
   resident memory.
2. In the relay: the real `gunicorn wsgi:app` (2 workers) against the fake Telegram and the fake
   GlitchTip on 127.0.0.1. Twenty alerts make twenty cards; then twenty people press 📈 on them
   at once while a webhook is posted every 50 ms, and the same webhooks are posted without the
   charts as the baseline: the webhook's answer (p50, p95, max), and what became of the charts
   (sent as photos, refused by a bound: busy drawing or too many answers waiting in the chat).

    .venv/bin/python bench/charts.py [--rounds 10]

Targets (issue 62): a chart within a few seconds of the press; the webhook's answer unchanged
while charts are drawn (the relay's processes never import matplotlib: bench/start.py measures
their start before and after).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app.capabilities import REGISTRY  # noqa: E402
from relay_app.charts.figure import spec_of  # noqa: E402
from relay_app.charts.series import series_of  # noqa: E402
from relay_app.core.drawing import draw  # noqa: E402
from relay_app.core.trackers import IssueHistory  # noqa: E402
from relay_app.summaries.report import Report  # noqa: E402
from relay_app.summaries.report_chart import report_spec, with_chart_words  # noqa: E402
from relay_app.words import ENGLISH  # noqa: E402
from tests.e2e.helpers import post, wait_until  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env  # noqa: E402
from tests.fake_glitchtip import TOKEN, running_fake_glitchtip  # noqa: E402
from tests.fake_telegram import running_fake_telegram  # noqa: E402
from tests.payloads import issue, issue_alert  # noqa: E402

CHARTS = 20
LOAD_CHAT = -1005550000001
WEBHOOK_EVERY = 0.05
LOAD_FOR = 8.0


def issue_spec() -> dict[str, Any]:
    now = time.time()
    hour, day = int(now // 3600) * 3600, int(now // 86400) * 86400
    history = IssueHistory(
        [[hour - 3600 * n, (n * 7) % 13] for n in range(24)],
        [[day - 86400 * n, 50 + n * 10] for n in range(14)],
        now - 5 * 3600,
        "shop@2.3.1",
    )
    return spec_of(
        series_of(history, now),
        label="BACKEND-4A",
        title="ZeroDivisionError: division by zero",
        words=REGISTRY.words_in(ENGLISH),
        zone=ZoneInfo("Europe/Moscow"),
    )


def week_spec() -> dict[str, Any]:
    now = time.time()
    days = {f"2026-12-0{d}": {"error": d, "warning": 7 - d} for d in range(1, 8)}
    report = Report(
        start=now - 7 * 86400,
        end=now,
        alerts=41,
        issues=17,
        taken=12,
        take_median=240,
        take_worst=3000,
        resolved=9,
        resolve_median=1800,
        resolve_worst=30000,
        calls=6,
        by_day=days,
        by_place={"-100123": 25, "-100123/42": 10, "-100999": 6},
    )
    return report_spec(report, with_chart_words(ENGLISH), ZoneInfo("UTC"))


def drawing(spec: dict[str, Any], rounds: int, at_once: int) -> tuple[list[float], float]:
    """Seconds each drawing took, `at_once` at a time, and the drawing processes' peak RSS (MB)."""

    def one(_: int) -> float:
        started = time.monotonic()
        draw(spec)
        return time.monotonic() - started

    with ThreadPoolExecutor(at_once) as pool:
        spent = list(pool.map(one, range(rounds)))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return spent, peak


def webhooks(url: str, seconds: float) -> list[float]:
    """A webhook every WEBHOOK_EVERY for `seconds`: each answer's seconds."""
    answers: list[float] = []
    number = 1000
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        number += 1
        reply, took = post(url, issue_alert(issue(number)))
        if reply.status_code not in (200, 202):
            raise SystemExit(f"the relay answered {reply.status_code}")
        answers.append(took)
        time.sleep(WEBHOOK_EVERY)
    return answers


def in_relay(workdir: Path) -> dict[str, Any]:
    with running_fake_telegram() as telegram, running_fake_glitchtip() as glitchtip:
        env = relay_env(
            telegram,
            GLITCHTIP_API_TOKEN=TOKEN,
            GLITCHTIP_URL=glitchtip.url,
            RELAY_SPOOL_PATH=str(workdir / "charts.sqlite3"),
            WEB_CONCURRENCY="2",
            TELEGRAM_ALLOWED_CHAT_IDS=str(LOAD_CHAT),
        )
        relay = RelayProcess(env, workdir / "charts.log").wait_ready()
        try:
            hour = int(time.time() // 3600) * 3600
            for number in range(1, CHARTS + 1):  # a card each, not a digest
                link = glitchtip.add_issue(number, f"BACKEND-{number}A")
                glitchtip.hourly[str(number)] = [[hour - 3600 * n, n % 5] for n in range(40)]
                post(relay.webhook_url, issue_alert(issue(number, link=link)))
                if not wait_until(lambda n=number: len(telegram.posted_to(CHAT_ID)) == n, 10):
                    raise SystemExit("an alert never reached the fake Telegram")
            cards = telegram.posted_to(CHAT_ID)
            # The load goes to another chat: in the charts' chat they would wait behind it.
            load = f"{relay.webhook_url}?chat_id={LOAD_CHAT}"
            baseline = webhooks(load, LOAD_FOR)
            pressed = time.monotonic()
            ids = [
                telegram.press(card, "📈", user_id=5000 + n, username=f"p{n}")
                for n, card in enumerate(cards)
            ]
            during = webhooks(load, LOAD_FOR)
            answers = [telegram.wait_for_answer(i, timeout=15) for i in ids]
            coming = sum("on its way" in str(a["text"]) for a in answers if a is not None)
            wait_until(lambda: len(telegram.photos_sent) >= coming, 60)
            last = max((p["at"] for p in telegram.photos_sent), default=pressed) - pressed
            texts = [str(a["text"]) for a in answers if a is not None]
            return {
                "baseline": baseline,
                "during": during,
                "photos": len(telegram.photos_sent),
                "busy": sum("being drawn" in t for t in texts),
                "coming": sum("on its way" in t for t in texts),
                "last": last,
                "answers": len(texts),
            }
        finally:
            relay.stop()


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(ordered) * 1000:.0f} / {p95 * 1000:.0f} / {ordered[-1] * 1000:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    print("| picture | at once | drawings | seconds each p50 / max | peak RSS of a drawing |")
    print("|---|---:|---:|---|---:|")
    for name, spec in (("an issue's chart", issue_spec()), ("the weekly report", week_spec())):
        for at_once in (1, 2):
            spent, peak = drawing(spec, args.rounds, at_once)
            print(
                f"| {name} | {at_once} | {len(spent)} | {statistics.median(spent):.2f} / "
                f"{max(spent):.2f} | {peak:.0f} MB |"
            )
    with tempfile.TemporaryDirectory() as directory:
        found = in_relay(Path(directory))
    print()
    print(
        f"| webhooks, one each {WEBHOOK_EVERY * 1000:.0f} ms for {LOAD_FOR:.0f} s "
        "| answered | p50 / p95 / max ms |"
    )
    print("|---|---:|---|")
    print(f"| alone | {len(found['baseline'])} | {spread(found['baseline'])} |")
    print(
        f"| while {CHARTS} charts are asked for | {len(found['during'])} "
        f"| {spread(found['during'])} |"
    )
    print()
    print(
        f"{CHARTS} presses: {found['answers']} answered ({found['coming']} on their way, "
        f"{found['busy']} told to ask again: drawing was full); {found['photos']} photos sent, "
        f"the last {found['last']:.1f} s after the presses"
    )


if __name__ == "__main__":
    main()
