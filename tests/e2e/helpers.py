"""Small helpers shared by the end-to-end tests."""

from __future__ import annotations

import time
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


def titled(title: str) -> dict[str, Any]:
    return issue_alert(issue(1, title=title))


def delivered_titles(fake: FakeTelegram) -> list[str]:
    return [text.split("\n")[2] for text in fake.texts()]


def wait_until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())
