"""Ignore with a condition (snoozes/snoozing.py): Ignore… opens its choices on the card, a timed
or counted choice ignores the issue in GlitchTip and keeps the snooze in the spool, and the
watcher's round sets the issue unresolved again when the condition is met, replying under the
alert once; reopened meanwhile ends it without a word. The relay as a whole against the
scripted Telegram, GlitchTip's HTTP layer mocked by `responses`, on the test's clock; the
snoozes' store on SQLite and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import responses

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.snoozes.store import Snooze, SnoozeStore
from relay_app.spool.store import Store
from relay_app.watch.store import Watched, WatchStore
from tests.conftest import FakeTime
from tests.in_process import GLITCHTIP, Chat, press_by_ada
from tests.payloads import issue
from tests.prometheus import parse, value

CHAT = "-1001234567890"
THREAD = 77
SENT_AT = 1_800_000_000.0  # 08:00 UTC
PRESSED_AT = SENT_AT + 240  # 08:04 UTC
ISSUE_URL = f"{GLITCHTIP}/api/0/issues/4/"
# Where the watcher reopens it: among its organization's issues, as its alert named them.
REOPEN_URL = f"{GLITCHTIP}/api/0/organizations/acme/issues/4/"
STATES = f"{GLITCHTIP}/api/0/organizations/acme/issues/"
COUNTS = f"{GLITCHTIP}/api/0/organizations/acme/issues-stats/"
SENT = SentMessage(
    CHAT,
    41,
    "<b>🔴 GlitchTip Alert</b>",
    SENT_AT,
    buttons=(IssueButton("the-key", "4", GLITCHTIP, "BACKEND-4A"),),
)

# An open issue's row.
OPEN = ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    """The card the relay sent for BACKEND-4A (watched, in topic 77), at 08:04 UTC."""
    fake_time.now = PRESSED_AT
    chat = Chat.of(built, fake_time, SENT)
    assert chat.relay.spool is not None
    alert = {"attachments": [issue(4)]}
    chat.relay.spool.of(WatchStore).watch([Watched("4", "acme", alert, CHAT, THREAD)], now=SENT_AT)
    return chat


def press(verb: Any, update_id: int) -> dict[str, object]:
    return press_by_ada(callback_data(verb, "the-key"), update_id)


def labels(keyboard: dict[str, Any] | None) -> list[str]:
    assert keyboard is not None
    return [button["text"] for row in keyboard["inline_keyboard"] for button in row]


def glitchtip_has(glitchtip: responses.RequestsMock, status: str, events: int) -> None:
    """GlitchTip's answers to the watcher from now: BACKEND-4A's status and events."""
    answer = [{"id": "4", "status": status, "count": str(events)}]
    glitchtip.upsert(responses.GET, STATES, json=answer)
    glitchtip.upsert(responses.GET, COUNTS, json=[])


def changes(glitchtip: responses.RequestsMock) -> list[bytes | str | None]:
    return [call.request.body for call in glitchtip.calls if call.request.method == "PUT"]


def snoozed(chat: Chat, glitchtip: responses.RequestsMock, verb: Any, events_then: int) -> None:
    """Ignore… pressed, then `verb`, GlitchTip answering the ignore with its events then."""
    chat.update(press("snooze", 1))
    chat.settle()
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "ignored", "count": str(events_then)})
    chat.update(press(verb, 2))
    chat.settle()


def test_ignore_opens_its_choices_on_the_card_and_back_puts_them_away(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    chat.update(press("snooze", 1))
    assert chat.answered() == [
        ("BACKEND-4A: choose under the message for how long to ignore it", False)
    ]
    chat.settle()
    [(_, _, _, keyboard)] = chat.telegram.edits
    assert labels(keyboard) == [
        "🔕 1 h",
        "🔕 24 h",
        "🔕 Until 100 more events",
        "🔕 Forever",
        "◀️ Back",
    ]
    chat.update(press("back", 2))
    chat.settle()
    assert labels(chat.telegram.edits[-1][3]) == [
        "👀 On it",
        "✅ Resolve",
        "🔕 Ignore…",
        "🔇 Mute 1 h",
        "📈",
    ]
    # A second Back (a stale client) finds them put away already: nothing changes.
    chat.update(press("back", 3))
    assert chat.answered()[-1][1] is True
    assert changes(glitchtip) == []  # GlitchTip is changed only by a choice


def test_until_more_events_brings_the_issue_back_once_with_the_count_and_who(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    snoozed(chat, glitchtip, "snooze_events", events_then=3)
    assert chat.answered()[-1] == ("Ignored BACKEND-4A in GlitchTip until 100 more events", False)
    assert changes(glitchtip) == [b'{"status": "ignored"}']
    text = chat.telegram.edits[-1][2]
    assert text.endswith("🔕 Ignored by @ada at 08:04 UTC until 100 more events")
    assert labels(chat.telegram.edits[-1][3]) == ["↩️ Reopen", "🔇 Mute 1 h", "📈"]

    glitchtip_has(glitchtip, "ignored", events=102)  # 99 more: not yet
    assert chat.watcher_round(PRESSED_AT + 60).back == 0
    assert chat.telegram.replies == []

    glitchtip.put(REOPEN_URL, json={"id": "4", "status": "unresolved"})
    glitchtip_has(glitchtip, "ignored", events=133)
    assert chat.watcher_round(PRESSED_AT + 120).back == 1
    assert changes(glitchtip)[-1] == b'{"status": "unresolved"}'
    assert chat.telegram.replies == [
        (
            CHAT,
            THREAD,
            41,
            "🔔 BACKEND-4A is back: 130 more events since @ada ignored it until 100 more events",
        )
    ]
    # Its card follows at once: the relay made the change, so no press can be newer.
    assert labels(chat.telegram.edits[-1][3]) == OPEN
    # Once: the next round finds it ended (and GlitchTip says unresolved now).
    glitchtip_has(glitchtip, "unresolved", events=140)
    assert chat.watcher_round(PRESSED_AT + 180).back == 0
    assert len(chat.telegram.replies) == 1
    # The card follows GlitchTip: Resolve and Ignore… again.
    assert labels(chat.telegram.edits[-1][3]) == OPEN
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_snoozes_total", outcome="made") == 1
    assert value(samples, "relay_snoozes_total", outcome="back") == 1


def test_an_hour_is_an_hour_on_the_relays_clock(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    snoozed(chat, glitchtip, "snooze_hour", events_then=3)
    assert chat.answered()[-1] == ("Ignored BACKEND-4A in GlitchTip until 09:04 UTC", False)
    glitchtip_has(glitchtip, "ignored", events=3)
    assert chat.watcher_round(PRESSED_AT + 3599).back == 0
    glitchtip.put(REOPEN_URL, json={"id": "4", "status": "unresolved"})
    assert chat.watcher_round(PRESSED_AT + 3600).back == 1
    assert chat.telegram.replies[-1][3] == (
        "🔔 BACKEND-4A is back: @ada ignored it until 09:04 UTC, and that time has come"
    )


def test_reopened_meanwhile_ends_the_snooze_without_a_word(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    snoozed(chat, glitchtip, "snooze_events", events_then=3)
    glitchtip_has(glitchtip, "unresolved", events=500)  # someone reopened it in GlitchTip
    assert chat.watcher_round(PRESSED_AT + 60).back == 0
    assert chat.telegram.replies == []
    assert changes(glitchtip) == [b'{"status": "ignored"}']
    glitchtip_has(glitchtip, "ignored", events=900)  # ignored again, forever, in its UI
    assert chat.watcher_round(PRESSED_AT + 120).back == 0
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_snoozes_total", outcome="cancelled") == 1


def test_an_issue_the_watcher_does_not_know_cannot_be_snoozed(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    fake_time.now = PRESSED_AT
    chat = Chat.of(built, fake_time, SENT)  # a card from before the watcher knew its issue
    chat.update(press("snooze", 1))
    chat.update(press("snooze_day", 2))
    assert chat.answered()[-1] == (
        "BACKEND-4A: the relay does not watch this issue, so it could not bring it back: "
        "choose Forever",
        True,
    )
    assert changes(glitchtip) == []


def test_forever_is_glitchtips_own_ignore_and_an_old_cards_ignore_still_works(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "ignored"})
    chat.update(press("ignore", 1))  # a card sent before the choices: its Ignore said forever
    assert chat.answered()[-1] == ("Ignored BACKEND-4A in GlitchTip", False)
    assert chat.relay.spool is not None
    assert chat.relay.spool.of(SnoozeStore).open(now=PRESSED_AT) == []


def test_a_snooze_survives_in_the_spool_and_ends_once_across_relays(
    two_stores: tuple[Store, Store],
) -> None:
    first, second = (SnoozeStore(store) for store in two_stores)
    snooze = Snooze("4", "acme", "BACKEND-4A", None, 100, 3, "@ada", CHAT, THREAD, 41)
    first.add(snooze, now=PRESSED_AT)
    [kept] = second.open(now=PRESSED_AT + 60)
    assert (kept.issue_id, kept.events, kept.baseline, kept.thread) == ("4", 100, 3, THREAD)
    ended = [each.end(kept.id, "back", now=PRESSED_AT + 60) for each in (first, second)]
    assert sorted(ended) == [False, True]
    assert first.open(now=PRESSED_AT + 61) == []
    # A newer snooze of the issue replaces an open one.
    timed = Snooze("4", "acme", "BACKEND-4A", PRESSED_AT + 3600, None, 3, "@bo", CHAT, None, 41)
    first.add(timed, now=PRESSED_AT)
    first.add(timed, now=PRESSED_AT + 1)
    [only] = second.open(now=PRESSED_AT + 2)
    assert only.until_at == pytest.approx(PRESSED_AT + 3600)
    rows = two_stores[0].read(lambda tx: tx.all("SELECT ended FROM snoozes ORDER BY id"))
    assert [row["ended"] for row in rows] == ["back", "replaced", None]


def test_a_snoozed_issue_comes_back_though_glitchtips_answer_spoils_another_issue(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    assert chat.relay.spool is not None
    other = {"attachments": [issue(9)]}
    chat.relay.spool.of(WatchStore).watch([Watched("9", "acme", other, CHAT, None)], now=SENT_AT)
    snoozed(chat, glitchtip, "snooze_events", events_then=3)
    glitchtip.put(REOPEN_URL, json={"id": "4", "status": "unresolved"})
    states = [
        {"id": "4", "status": "ignored", "count": "133"},
        {"id": "9", "status": "unresolved", "count": str(10**30)},
    ]
    glitchtip.upsert(responses.GET, STATES, json=states)
    glitchtip.upsert(
        responses.GET, COUNTS, body='[{"id": "9", "count": "1", "stats": {"24h": [[1, NaN]]}}]'
    )
    done = chat.watcher_round(PRESSED_AT + 120)
    assert (done.back, done.unreadable) == (1, 1)
    assert chat.telegram.replies[-1][3].startswith("🔔 BACKEND-4A is back: 130 more events")
