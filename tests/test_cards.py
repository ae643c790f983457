"""A card: the buttons under an alert and the message as presses change it (cards/card.py)."""

from __future__ import annotations

import html
from dataclasses import replace
from zoneinfo import ZoneInfo

from relay_app.capabilities import REGISTRY
from relay_app.cards.card import (
    MAX_ISSUES_WITH_BUTTONS,
    IssueButton,
    SentMessage,
    callback_data,
    keyboard,
    new_buttons,
    parse_callback,
    rendered,
)
from relay_app.cards.marks import Mark
from relay_app.message.formatting import TELEGRAM_TEXT_LIMIT
from relay_app.message.spans import visible_length
from relay_app.message.subjects import IssueRef
from relay_app.takes.store import taken_mark
from relay_app.words import ENGLISH as CATALOGUE_ENGLISH
from relay_app.words import RUSSIAN as CATALOGUE_RUSSIAN
from tests.telegram_rules import visible_text

# The capabilities' buttons, as the relay registers them (Mute and Unmute: silences'; 📈:
# charts'), and the words the relay speaks with theirs.
THEIRS = tuple(REGISTRY.buttons)
ENGLISH = REGISTRY.words_in(CATALOGUE_ENGLISH)
RUSSIAN = REGISTRY.words_in(CATALOGUE_RUSSIAN)

AT_0804 = 1_800_000_240.0  # 2027-01-15 08:04 UTC
ISSUE = IssueButton("k1", "4", "https://gt", "BACKEND-4A")


def texts(markup: dict[str, object] | None) -> list[list[str]]:
    assert markup is not None
    rows = markup["inline_keyboard"]
    assert isinstance(rows, list)
    return [[button["text"] for button in row] for row in rows]


def test_one_issue_gets_resolve_ignore_and_mute_without_its_name() -> None:
    assert texts(keyboard([ISSUE], ENGLISH, theirs=THEIRS)) == [
        ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]
    ]


def test_several_issues_are_named_and_an_acted_one_offers_reopen() -> None:
    resolved = IssueButton("k2", "5", "https://gt", "BACKEND-5A", "resolved", "@ada", AT_0804)
    assert texts(keyboard([ISSUE, resolved], ENGLISH, theirs=THEIRS)) == [
        [
            "👀 On it BACKEND-4A",
            "✅ Resolve BACKEND-4A",
            "🔕 Ignore… BACKEND-4A",
            "🔇 Mute 1 h BACKEND-4A",
            "📈 BACKEND-4A",
        ],
        ["↩️ Reopen BACKEND-5A", "🔇 Mute 1 h BACKEND-5A", "📈 BACKEND-5A"],
    ]
    assert keyboard([], ENGLISH, theirs=THEIRS) is None


def test_a_muted_issue_offers_unmute_and_its_message_says_until_when() -> None:
    mark = Mark("muted", "@ada", AT_0804, "muted_by", "issue_muted_by", until=AT_0804 + 3600, ref=3)
    muted = replace(ISSUE, marks=(mark,))
    assert texts(keyboard([muted], ENGLISH, theirs=THEIRS)) == [
        ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔊 Unmute", "📈"]
    ]
    message = SentMessage("-100", 1, "<b>🔴 GlitchTip Alert</b>", AT_0804, (), (muted,))
    shown = visible_text(rendered(message, ENGLISH), parse_mode="HTML")
    assert shown.endswith("🔇 Muted in this chat by @ada until 09:04 UTC")
    russian = visible_text(rendered(message, RUSSIAN), parse_mode="HTML")
    assert russian.endswith("🔇 Без звука в этом чате до 09:04 UTC (@ada)")
    assert texts(keyboard([muted], RUSSIAN, theirs=THEIRS)) == [
        ["👀 Беру", "✅ Закрыть", "🔕 Игнорировать…", "🔊 Включить звук", "📈"]
    ]


def test_the_data_names_a_key_and_only_what_the_relay_wrote_parses() -> None:
    data = callback_data("resolve", "Ab_c-12345678")
    assert len(data.encode()) <= 64  # Telegram's limit
    assert parse_callback(data) == ("resolve", "Ab_c-12345678")
    assert parse_callback(callback_data("reopen", "k")) == ("reopen", "k")
    for foreign in (None, 4, "", "resolve", "x:key", "r:", "r:" + "k" * 40, "r:ключ"):
        assert parse_callback(foreign) is None


def test_buttons_stop_at_telegrams_limits() -> None:
    issues = [IssueRef(str(n), "https://gt", f"B-{n}") for n in range(60)]
    buttons = new_buttons(issues, (f"key{n}" for n in range(60)))
    assert len(buttons) == MAX_ISSUES_WITH_BUTTONS
    rows = texts(keyboard(buttons, ENGLISH, theirs=THEIRS))
    assert sum(len(row) for row in rows) <= 100
    assert max(len(row) for row in rows) <= 8
    # Four a row for 25 issues is all Telegram takes: the spare 📈 gives way on every row,
    # and stays where a message has room for it.
    assert not any(label.startswith("📈") for row in rows for label in row)
    assert texts(keyboard(buttons[:20], ENGLISH, theirs=THEIRS))[0][-1] == "📈 B-0"


def test_the_edited_message_says_what_was_done_by_whom_and_when() -> None:
    message = SentMessage("-100", 1, "<b>🔴 GlitchTip Alert</b>", AT_0804)
    acted = IssueButton("k1", "4", "https://gt", "BACKEND-4A", "resolved", "@ada", AT_0804)
    shown = visible_text(rendered(replace(message, buttons=(acted,)), ENGLISH), parse_mode="HTML")
    assert shown == "🔴 GlitchTip Alert\n\n✅ Resolved by @ada at 08:04 UTC"


def test_the_lines_say_their_times_in_the_zone_given_with_its_name() -> None:
    message = SentMessage("-100", 1, "<b>🔴 GlitchTip Alert</b>", AT_0804)
    acted = IssueButton("k1", "4", "https://gt", "BACKEND-4A", "resolved", "@ada", AT_0804)
    taken = replace(acted, status=None, acted_by=None, acted_at=None)
    taken = replace(taken, marks=(taken_mark("@bo", 8, AT_0804 - 60),))
    for button, said in (
        (acted, "✅ Resolved by @ada at 11:04 MSK"),
        (taken, "👀 @bo is on it since 11:03 MSK"),
    ):
        card = replace(message, buttons=(button,))
        shown = visible_text(rendered(card, ENGLISH, ZoneInfo("Europe/Moscow")), parse_mode="HTML")
        assert shown.endswith(said)
    almaty = rendered(replace(message, buttons=(acted,)), ENGLISH, ZoneInfo("Asia/Almaty"))
    assert almaty.endswith("at 13:04 Asia/Almaty")  # '+05' would say less


def test_added_lines_and_names_are_escaped_and_the_oldest_give_way_at_the_limit() -> None:
    long_html = "x" * (TELEGRAM_TEXT_LIMIT - 60)
    buttons = tuple(
        IssueButton(f"k{n}", str(n), "https://gt", f"B-{n}", "ignored", "<Eve & co>", AT_0804 + n)
        for n in range(3)
    )
    message = SentMessage("-100", 1, long_html, AT_0804, ("✅ API back up after 3 s",), buttons)
    out = rendered(message, ENGLISH)
    shown = visible_text(out, parse_mode="HTML")
    assert visible_length(shown) <= TELEGRAM_TEXT_LIMIT
    assert shown.endswith("🔕 B-2 ignored by <Eve & co> at 08:04 UTC")  # the newest stays
    assert "back up" not in shown  # the oldest line gave way
    assert html.escape("<Eve & co>", quote=False) in out
