"""The stack folded under the card: the latest event's frames of the app's own code, innermost
first, at most eight, in an expandable quote (one line until tapped) under a message of one
issue; a digest carries none, the card stays within Telegram's 4,096 characters, and a missing
or unreadable event costs the frames, never the alert. From GlitchTip's real answers and
Sentry's event alike."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from relay_app.core.issue_details import MAX_STACK, Frame, details_as_json, details_from_json
from relay_app.issue_api.details import EVENT_FRAMES, details_from, stack_of
from relay_app.message.formatting import TELEGRAM_TEXT_LIMIT
from relay_app.sentry.details import details_of
from relay_app.words import ENGLISH, RUSSIAN
from tests.conftest import SOURCES
from tests.fake_glitchtip import SAMPLE_EVENT, SAMPLE_ISSUE
from tests.payloads import issue, issue_alert, message_for
from tests.telegram_rules import visible_text

GLITCHTIP = "https://glitchtip.example.org"
SENTRY_EVENT = Path(__file__).resolve().parent / "sentry_samples" / "issue_alert.json"
FOLDED = (
    "<blockquote expandable>shop/cart.py:4 in total\nshop/views.py:6 in checkout\n"
    "run_event.py:10 in &lt;module&gt;</blockquote>"
)


def event_with(frames: list[dict[str, Any]]) -> dict[str, Any]:
    event = copy.deepcopy(SAMPLE_EVENT)
    event["entries"][0]["data"]["values"][0]["stacktrace"]["frames"] = frames
    return event


def one_issue(title: str = "ZeroDivisionError: division by zero") -> dict[str, Any]:
    return issue_alert(issue(3, title=title, link=f"{GLITCHTIP}/acme/issues/3"))


def test_the_apps_frames_innermost_first_from_glitchtips_latest_event() -> None:
    details = details_from(copy.deepcopy(SAMPLE_ISSUE), copy.deepcopy(SAMPLE_EVENT))
    assert details.stack == (
        Frame("shop/cart.py", 4, "total", None),
        Frame("shop/views.py", 6, "checkout", None),
        Frame("run_event.py", 10, "<module>", None),
    )
    assert details_from_json(json.loads(json.dumps(details_as_json(details)))) == details


def test_at_most_eight_of_the_apps_own_and_the_innermost_of_all_where_none_is() -> None:
    frames = [
        {"filename": f"app/f{n}.py", "lineNo": n, "function": f"f{n}", "inApp": n % 2 == 0}
        for n in range(30)
    ]
    stack = stack_of({"stacktrace": {"frames": frames}})
    assert len(stack) == MAX_STACK
    assert [frame.filename for frame in stack[:3]] == ["app/f28.py", "app/f26.py", "app/f24.py"]
    library = [{"filename": "lib.py", "lineNo": 1, "inApp": False}, {"module": "lib.inner"}]
    assert [f.filename for f in stack_of({"stacktrace": {"frames": library}})] == [
        "lib.inner",
        "lib.py",
    ]


def test_a_card_of_one_issue_holds_its_stack_folded_a_digest_none() -> None:
    details = details_from(copy.deepcopy(SAMPLE_ISSUE), copy.deepcopy(SAMPLE_EVENT))
    card = message_for(one_issue(), ENGLISH, details={"3": details}, sources=SOURCES)
    assert card.html.endswith(FOLDED)
    visible_text(card.html, parse_mode="HTML")  # as Telegram takes it
    assert "shop/views.py:6 in checkout" in card.text
    russian = message_for(one_issue(), RUSSIAN, details={"3": details}, sources=SOURCES)
    assert "shop/cart.py:4, в функции total" in russian.html.split("<blockquote expandable>")[1]
    two = issue_alert(
        issue(3, link=f"{GLITCHTIP}/acme/issues/3"), issue(4, link=f"{GLITCHTIP}/acme/issues/4")
    )
    digest = message_for(two, ENGLISH, details={"3": details, "4": details}, sources=SOURCES)
    assert "blockquote" not in digest.html


def test_a_card_with_a_deep_stack_and_a_long_title_stays_within_telegrams_limit() -> None:
    frames = [
        {
            "filename": "app/" + "x" * 600 + f"{n}.py",
            "lineNo": n,
            "function": "f" * 300,
            "inApp": True,
        }
        for n in range(20)
    ]
    details = details_from(copy.deepcopy(SAMPLE_ISSUE), event_with(frames))
    card = message_for(one_issue("E" * 5000), ENGLISH, details={"3": details}, sources=SOURCES)
    shown = visible_text(card.html, parse_mode="HTML")
    assert len(shown.encode("utf-16-le")) // 2 <= TELEGRAM_TEXT_LIMIT
    assert "<blockquote expandable>" in card.html


def test_a_missing_or_unreadable_event_costs_the_frames_never_the_alert() -> None:
    for event in (
        None,
        event_with([]),
        event_with([{"lineNo": 3}, {"filename": 7}, {"function": "f"}]),
        {**copy.deepcopy(SAMPLE_EVENT), "entries": "garbled"},
    ):
        details = details_from(copy.deepcopy(SAMPLE_ISSUE), event)
        assert details.stack == ()
        card = message_for(one_issue(), ENGLISH, details={"3": details}, sources=SOURCES)
        assert "blockquote" not in card.html
        assert "ZeroDivisionError" in card.text


def test_sentrys_event_gives_its_stack_as_glitchtips_does() -> None:
    event = json.loads(SENTRY_EVENT.read_bytes())["data"]["event"]
    details = details_of(event, {})
    frame = details.frame
    assert frame is not None
    assert details.stack
    assert details.stack[0] == Frame(frame.filename, frame.line, frame.function, None)
    assert stack_of({}, EVENT_FRAMES) == ()
