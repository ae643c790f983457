"""Cards in step with GlitchTip (watch/in_step.py): an issue resolved, ignored or reopened in
GlitchTip's UI, seen by the watcher's round, changes every card that shows it (the status line
and the buttons that fit), through the one path to the chat; a press in the chat is never
undone by an answer GlitchTip gave before it. The relay as a whole against the scripted
Telegram, GlitchTip's HTTP layer mocked by `responses`, on the test's clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import responses

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.in_step import SETTLE
from relay_app.oncall.steps_store import EscalationStore
from relay_app.routes.steps import Step
from relay_app.watch.store import Watched, WatchStore
from tests.conftest import FakeTime
from tests.in_process import GLITCHTIP, Chat, escalation_of
from tests.in_process import press_by_ada as press
from tests.payloads import issue
from tests.prometheus import parse, value

CHAT = "-1001234567890"
SENT_AT = 1_800_000_000.0
STATES = f"{GLITCHTIP}/api/0/organizations/acme/issues/"
COUNTS = f"{GLITCHTIP}/api/0/organizations/acme/issues-stats/"
ISSUE_URL = f"{GLITCHTIP}/api/0/issues/4/"


def card(message_id: int, *issues: tuple[str, str]) -> SentMessage:
    buttons = tuple(
        IssueButton(f"key-{message_id}-{number}", number, GLITCHTIP, label)
        for number, label in issues
    )
    return SentMessage(CHAT, message_id, "<b>🔴 GlitchTip Alert</b>", SENT_AT, buttons=buttons)


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    """Two cards show BACKEND-4A (one of them with BACKEND-5A too), at 08:04 UTC; the watcher
    knows both issues."""
    fake_time.now = SENT_AT + 240
    chat = Chat.of(
        built,
        fake_time,
        card(41, ("4", "BACKEND-4A")),
        card(42, ("4", "BACKEND-4A"), ("5", "BACKEND-5A")),
    )
    assert chat.relay.spool is not None
    chat.relay.spool.of(WatchStore).watch(
        [Watched(n, "acme", {"attachments": [issue(int(n))]}, CHAT, None) for n in ("4", "5")],
        now=fake_time.now,
    )
    return chat


def glitchtip_says(glitchtip: responses.RequestsMock, **states: str) -> None:
    """GlitchTip's answers to the watcher from now: these states, and no events."""
    glitchtip.upsert(
        responses.GET, STATES, json=[{"id": n, "status": s} for n, s in states.items()]
    )
    glitchtip.upsert(responses.GET, COUNTS, json=[])


def labels(keyboard: dict[str, Any] | None) -> list[str]:
    assert keyboard is not None
    return [button["text"] for row in keyboard["inline_keyboard"] for button in row]


def test_an_issue_resolved_in_glitchtip_changes_every_card_that_shows_it(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip_says(glitchtip, **{"4": "resolved", "5": "unresolved"})
    assert chat.watcher_round(SENT_AT + 300).in_step == 2
    edits = {message_id: (text, keyboard) for _, message_id, text, keyboard in chat.telegram.edits}
    assert sorted(edits) == [41, 42]
    text, keyboard = edits[41]
    assert text.endswith("\n\n✅ Resolved in GlitchTip at 08:05 UTC")
    assert labels(keyboard) == ["↩️ Reopen", "🔇 Mute 1 h", "📈"]
    several, keyboard = edits[42]
    assert several.endswith("\n\n✅ BACKEND-4A resolved in GlitchTip at 08:05 UTC")
    # BACKEND-5A, still open, keeps what it offered.
    assert labels(keyboard) == [
        "↩️ Reopen BACKEND-4A",
        "🔇 Mute 1 h BACKEND-4A",
        "📈 BACKEND-4A",
        "👀 On it BACKEND-5A",
        "✅ Resolve BACKEND-5A",
        "🔕 Ignore… BACKEND-5A",
        "🔇 Mute 1 h BACKEND-5A",
        "📈 BACKEND-5A",
    ]
    # The next round finds them in step: nothing is written or sent again.
    assert chat.watcher_round(SENT_AT + 360).in_step == 0
    assert len(chat.telegram.edits) == 2
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_cards_in_step_total", status="resolved") == 2


def test_reopened_in_glitchtip_after_a_resolve_in_the_chat_offers_resolve_again(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "key-41-4"), 1))
    chat.settle()
    # GlitchTip reopens it (a regression, or someone in its UI), well after the press.
    glitchtip_says(glitchtip, **{"4": "unresolved", "5": "unresolved"})
    # GlitchTip had the press's change, on both messages of the issue (one issue, one state).
    assert chat.watcher_round(SENT_AT + 240 + SETTLE + 1).in_step == 2
    chat.settle()
    last = {message_id: (text, keyboard) for _, message_id, text, keyboard in chat.telegram.edits}
    text, keyboard = last[41]
    assert text.endswith("\n\n↩️ Reopened in GlitchTip at 08:04 UTC")
    assert labels(keyboard) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]


def test_an_answer_glitchtip_gave_before_a_press_took_effect_does_not_undo_it(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "ignored"})
    chat.update(press(callback_data("ignore", "key-41-4"), 1))
    chat.settle()
    edits = len(chat.telegram.edits)
    # A round asked just after the press: GlitchTip may still have answered "unresolved".
    glitchtip_says(glitchtip, **{"4": "unresolved", "5": "unresolved"})
    assert chat.watcher_round(SENT_AT + 240 + 5).in_step == 0
    assert len(chat.telegram.edits) == edits
    button = chat.store.message(CHAT, 41).buttons[0]  # type: ignore[union-attr]
    assert (button.status, button.acted_by) == ("ignored", "@ada")
    # The other message of the issue shows the press too (one issue, one state), and the
    # round's older answer undoes it there neither.
    other = chat.store.message(CHAT, 42).buttons[0]  # type: ignore[union-attr]
    assert (other.status, other.acted_by) == ("ignored", "@ada")


def test_closed_in_glitchtip_stops_the_alerts_escalation(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    assert chat.relay.spool is not None
    chat.relay.spool.of(EscalationStore).plan(CHAT, None, 41, SENT_AT, [Step(600.0, ("@lead",))])
    glitchtip_says(glitchtip, **{"4": "ignored", "5": "unresolved"})
    assert chat.watcher_round(SENT_AT + 300).in_step == 2
    chat.clock.now = SENT_AT + 700
    assert escalation_of(chat.relay).fire_due().fired == 0
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_escalation_steps_total", outcome="stopped") == 1


def test_a_change_glitchtip_made_is_followed_at_once_by_the_next(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip_says(glitchtip, **{"4": "resolved", "5": "unresolved"})
    assert chat.watcher_round(SENT_AT + 300).in_step == 2
    # Reopened in GlitchTip a round later: no press to wait for, the cards follow at once.
    glitchtip_says(glitchtip, **{"4": "unresolved", "5": "unresolved"})
    assert chat.watcher_round(SENT_AT + 301).in_step == 2
    last = {message_id: text for _, message_id, text, _ in chat.telegram.edits}
    assert last[41].endswith("↩️ Reopened in GlitchTip at 08:05 UTC")
    assert last[42].endswith("↩️ BACKEND-4A reopened in GlitchTip at 08:05 UTC")
