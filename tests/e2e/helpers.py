"""Small helpers shared by the end-to-end tests."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from tests.e2e.relay_process import SEND_TIMEOUT
from tests.fake_telegram import FakeTelegram
from tests.payloads import issue, issue_alert

# GlitchTip waits 10 s; the relay promises its answer within the send timeout plus a little.
ANSWER_BOUND = SEND_TIMEOUT + 0.5


def post(url: str, payload: dict[str, Any]) -> tuple[requests.Response, float]:
    started = time.monotonic()
    reply = requests.post(url, json=payload, timeout=10)
    return reply, time.monotonic() - started


def post_paced(
    url: str, payloads: list[dict[str, Any]], *, seconds: float
) -> list[tuple[requests.Response, float]]:
    """Post the payloads evenly over `seconds`, as GlitchTip's workers would in a storm; each
    answer with how long it took."""
    started = time.monotonic()
    gap = seconds / len(payloads)

    def send(numbered: tuple[int, dict[str, Any]]) -> tuple[requests.Response, float]:
        number, payload = numbered
        time.sleep(max(0.0, started + number * gap - time.monotonic()))
        return post(url, payload)

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(send, enumerate(payloads)))


def titled(title: str) -> dict[str, Any]:
    return issue_alert(issue(1, title=title))


# How the webhook answers an alert it did not send at once: 202 when its chat's turn had not
# come (pacing), 502 when its attempt failed; either way it is queued.
QUEUED = {202, 502}


def titles_in(text: str) -> list[str]:
    """The issue titles in a message's visible text: one for an alert sent alone, several for
    a digest (each alert in it starts with its header, then a blank line, then its title)."""
    lines = text.split("\n")
    return [lines[i + 2] for i, line in enumerate(lines[:-2]) if line.endswith("GlitchTip Alert")]


def delivered_titles(fake: FakeTelegram) -> list[str]:
    return [title for text in fake.texts() for title in titles_in(text)]


def wait_until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())
