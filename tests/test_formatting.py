from __future__ import annotations

import json
from typing import Any

import pytest

from relay_app.core.alerts import MAX_ITEMS_READ, IssueAlert, UnrecognizedPayload, UptimeAlert
from relay_app.glitchtip.webhook import read_kept
from relay_app.message import spans
from relay_app.message.formatting import (
    MESSAGE_LIMIT,
    PLAIN_FALLBACK_LIMIT,
    TELEGRAM_TEXT_LIMIT,
    Message,
    format_alert,
    late_note,
    with_late_note,
)
from relay_app.message.spans import visible_length
from relay_app.words import ENGLISH, Words
from tests import payloads
from tests.payloads import INFO_COLOR, issue, issue_alert, uptime_alert
from tests.telegram_rules import visible_text

HOSTILE = '<script>alert("x")</script> & &amp; </b><a href="javascript:x"> 🔥👩🏽‍💻 مرحبا 你好 ‮'

# What a message says of the issues an alert counts and does not attach, without a token.
UNNAMED = " GlitchTip did not attach: set GLITCHTIP_API_TOKEN for the relay to name them"


def message_for(payload: dict[str, Any], words: Words = ENGLISH) -> Message:
    message = format_alert(read_kept(payload), words)
    # The contract with Telegram, checked by the same rules the fake Bot API server applies.
    shown = visible_text(message.html, parse_mode="HTML")
    assert shown == message.text
    assert visible_length(message.text) <= TELEGRAM_TEXT_LIMIT
    assert visible_length(message.fallback) <= PLAIN_FALLBACK_LIMIT
    # Whatever the message, a late delivery's note still fits: the longest note there is.
    late = with_late_note(message, ENGLISH, received_at=0, now=99 * 86400 + 86399)
    assert visible_text(late.html, parse_mode="HTML") == late.text
    assert visible_length(late.text) <= TELEGRAM_TEXT_LIMIT
    assert visible_length(late.fallback) <= PLAIN_FALLBACK_LIMIT + 100
    return message


def test_a_late_message_says_when_glitchtip_sent_it_and_how_late_it_is() -> None:
    message = message_for(issue_alert(issue(1, title="<b>tags</b> & all")))
    sent = 1_764_499_948.0  # 2025-11-30 10:52:28 UTC
    late = with_late_note(message, ENGLISH, received_at=sent, now=sent + 2 * 3600 + 5 * 60 + 9)
    note = "⏳ Late: GlitchTip sent this at 2025-11-30 10:52:28 UTC; delivered 2 h 5 min later."
    assert late.text == f"{message.text}\n\n{note}"
    assert late.fallback == f"{message.fallback}\n\n{note}"
    assert late.html.startswith(message.html)
    assert visible_text(late.html, parse_mode="HTML") == late.text


@pytest.mark.parametrize(
    ("delay", "says"),
    [
        (0.4, "0 s"),
        (48, "48 s"),
        (61, "1 min 1 s"),
        (3 * 60, "3 min"),
        (3600 + 59, "1 h"),
        (3600 + 60 * 7 + 3, "1 h 7 min"),
        (86400 * 2 + 3600 * 3 + 60, "2 d 3 h"),
    ],
)
def test_the_delay_is_said_in_at_most_two_units(delay: float, says: str) -> None:
    assert late_note(1000.0, 1000.0 + delay, ENGLISH).endswith(f"delivered {says} later.")


def test_one_issue_shows_everything_glitchtip_sent() -> None:
    message = message_for(issue_alert(issue(1)))
    assert message.text.splitlines() == [
        "🔴 GlitchTip Alert",
        "",
        "ZeroDivisionError: division by zero #1",
        "in app.views.divide",
        "BACKEND-1A · Project: backend · Environment: production · Server Name: web-1 · "
        "Release: 1.4.2",
    ]
    assert (
        '<b><a href="https://glitchtip.example.org/acme/issues/1">'
        "ZeroDivisionError: division by zero #1</a></b>"
    ) in message.html
    assert "<code>app.views.divide</code>" in message.html


def test_three_of_twelve_issues_each_linked_and_the_rest_counted() -> None:
    message = message_for(issue_alert(issue(1), issue(2), issue(3), total=12), ENGLISH)
    assert message.text.startswith("🔴 GlitchTip Alert (12 issues)\n")
    for number in (1, 2, 3):
        assert f'<a href="https://glitchtip.example.org/acme/issues/{number}">' in message.html
        assert f"BACKEND-{number}A" in message.text
    assert message.text.endswith(f"…and 9 more issues{UNNAMED}")


def test_all_issues_shown_means_no_remainder_line() -> None:
    message = message_for(issue_alert(issue(1), issue(2)), ENGLISH)
    assert "more issue" not in message.text


def test_a_null_culprit_and_empty_fields_leave_no_empty_lines() -> None:
    message = message_for(issue_alert(issue(1, culprit=None, fields=[])))
    assert message.text.splitlines()[-1] == "BACKEND-1A"
    assert "\nin " not in message.text


@pytest.mark.parametrize(
    ("colors", "header"),
    [
        ([INFO_COLOR], "🔵"),
        ([None], "🟠"),  # GlitchTip sends warnings without a colour
        ([INFO_COLOR, None, payloads.ERROR_COLOR], "🔴"),  # the header shows the worst
        (["#123456"], "⚪"),
    ],
)
def test_severity_marker_follows_the_color(colors: list[str | None], header: str) -> None:
    alert = issue_alert(*(issue(n, color=color) for n, color in enumerate(colors)))
    assert message_for(alert).text.startswith(f"{header} GlitchTip Alert")


def test_uptime_down_and_up_are_told_apart_at_a_glance() -> None:
    down = message_for(uptime_alert(down=True))
    up = message_for(uptime_alert(down=False))
    assert down.text == "🔴 DOWN · My API\nThe monitored site has gone down."
    assert up.text == "✅ UP · My API\nThe monitored site is back up."
    assert '<a href="https://glitchtip.example.org/acme/uptime-monitors/42">My API</a>' in down.html
    assert isinstance(read_kept(uptime_alert(down=True)), UptimeAlert)


def test_hostile_values_arrive_intact_and_escaped() -> None:
    fields = [{"title": "Tag <x>", "value": HOSTILE}]
    message = message_for(
        issue_alert(issue(1, title=HOSTILE, culprit=HOSTILE, fields=fields)), ENGLISH
    )
    assert message.text.count(HOSTILE) == 3
    assert "<script>" not in message.html
    assert "&lt;script&gt;" in message.html
    assert "&amp;amp;" in message.html


def test_only_http_links_become_links() -> None:
    alert = issue_alert(
        issue(1, link="javascript:alert(1)"),
        issue(2, link='https://example.org/?a="b"&c=<d>'),
        issue(3, link="not a url"),
    )
    message = message_for(alert)
    assert message.html.count("<a href=") == 1
    assert '<a href="https://example.org/?a=&quot;b&quot;&amp;c=&lt;d&gt;">' in message.html
    assert "ZeroDivisionError: division by zero #1" in message.text


def test_control_characters_and_lone_surrogates_cannot_break_the_send() -> None:
    message = message_for(
        issue_alert(issue(1, title="bad\x00\x07 \ud800 bytes\nsecond line")), ENGLISH
    )
    assert "bad \ufffd bytes second line" in message.text
    message.html.encode("utf-8")  # must not raise: requests would fail to send it


def test_huge_values_are_shortened_evenly_and_every_issue_stays() -> None:
    alert = issue_alert(
        issue(1, title="A" * 10_000, culprit="c" * 5_000),
        issue(2, title="B" * 10_000),
        issue(3, title="short title three", fields=[{"title": "Release", "value": "v" * 3000}]),
        total=5,
    )
    message = message_for(alert)
    assert visible_length(message.text) > MESSAGE_LIMIT - 50  # uses the room it has
    assert "short title three" in message.text  # short values keep every character
    for letter in "AB":
        assert f"{letter * 100}" in message.text
    assert message.text.count("…") >= 4  # each cut is marked
    assert message.text.endswith(f"…and 2 more issues{UNNAMED}")
    for number in (1, 2, 3):
        assert f'<a href="https://glitchtip.example.org/acme/issues/{number}">' in message.html


def test_wide_characters_count_against_the_limit_as_telegram_may_count_them() -> None:
    message = message_for(issue_alert(issue(1, title="😀" * 5000, culprit="界" * 5000)))
    assert visible_length(message.text) <= TELEGRAM_TEXT_LIMIT
    assert "😀" * 100 in message.text
    assert "界" * 100 in message.text


def test_more_issues_than_fit_readably_give_way_to_the_remainder_count() -> None:
    attachments = [issue(n, title=f"{n}: " + "x" * 500) for n in range(200)]
    message = message_for(issue_alert(*attachments, total=300))
    shown = message.html.count("<a href=")
    assert 1 <= shown < 200
    assert message.text.endswith(f"…and {300 - shown} more issues{UNNAMED}")


def test_an_unknown_json_object_is_forwarded_raw() -> None:
    payload = {"event": "deploy", "note": "<b>&", "nested": {"list": [1, 2]}}
    alert = read_kept(payload)
    assert isinstance(alert, UnrecognizedPayload)
    message = message_for(payload)
    assert message.text.startswith("⚠️ Webhook payload in a shape the relay does not know\n")
    assert json.loads(message.text.split("\n", 1)[1]) == payload
    assert "<pre>" in message.html
    assert "&lt;b&gt;&amp;" in message.html


def test_a_huge_unknown_object_is_shortened_not_rejected() -> None:
    message = message_for({"blob": "z" * 50_000})
    assert message.text.endswith("…")


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"attachments": []},
        {"attachments": "nope"},
        {"attachments": [{"title": "x"}, "not an object"]},
        {"text": ["not", "text"], "attachments": [{"title": "x"}]},
    ],
)
def test_shapes_that_are_not_glitchtip_alerts_are_recognised_as_such(
    payload: dict[str, Any],
) -> None:
    assert isinstance(read_kept(payload), UnrecognizedPayload)
    message_for(payload)


def test_odd_but_readable_values_are_tolerated() -> None:
    odd = {
        "text": None,
        "attachments": [
            {
                "title": 404,
                "title_link": None,
                "text": True,
                "color": "#E52B50",
                "fields": [
                    {"title": "Count", "value": 3},
                    "bare value",
                    None,
                    {"title": "", "value": ""},
                ],
            }
        ],
        "sections": "not a list",
    }
    alert = read_kept(odd)
    assert isinstance(alert, IssueAlert)
    message = message_for(odd)
    assert message.text.splitlines() == [
        "🔴 GlitchTip Alert",
        "",
        "404",
        "in true",
        "Count: 3 · bare value",
    ]


def test_fallback_is_the_same_text_shortened() -> None:
    message = message_for(issue_alert(issue(1, title="T" * 10_000)))
    assert message.fallback.endswith("…")
    assert message.text.startswith(message.fallback[:-1])


def test_several_monitors_in_one_uptime_alert_each_get_their_paragraph() -> None:
    payload = uptime_alert(down=True, name="API")
    payload["attachments"].append({**uptime_alert(down=False, name="Web")["attachments"][0]})
    assert message_for(payload).text == (
        "🔴 DOWN · API\nThe monitored site has gone down.\n\n"
        "✅ UP · Web\nThe monitored site is back up."
    )


def test_thousands_of_fields_on_one_issue_are_cut_between_spans() -> None:
    fields = [{"title": f"Tag{n}", "value": f"value {n}"} for n in range(2000)]
    message = message_for(issue_alert(issue(1, fields=fields)))
    assert message.text.startswith("🔴 GlitchTip Alert\n\nZeroDivisionError: division by zero #1")
    assert message.text.endswith("…")
    assert "Tag100: value 100" in message.text


def test_a_webhook_naming_thousands_of_issues_reads_the_first_and_counts_the_rest() -> None:
    payload = issue_alert(*(issue(n, fields=[]) for n in range(1, 2001)))
    alert = read_kept(payload)
    assert isinstance(alert, IssueAlert)
    assert (len(alert.issues), alert.total) == (MAX_ITEMS_READ, 2000)
    message = message_for(payload)
    shown = message.text.count("ZeroDivisionError")
    assert 10 < shown < MAX_ITEMS_READ
    assert message.text.endswith(f"…and {2000 - shown} more issues{UNNAMED}")
    # The short ids still come from GlitchTip's sections, also when they do not line up.
    payload["sections"] = payload["sections"][1:] + payload["sections"][:1]
    issues = read_kept(payload).issues  # type: ignore[union-attr]
    assert [i.short_id for i in issues[:3]] == ["BACKEND-1A", "BACKEND-2A", "BACKEND-3A"]


def test_fitting_a_message_measures_each_part_once_however_many_issues_there_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Shortening to a limit is tried once per limit (message, digest entry), not once per
    candidate number of issues: the cost is linear in the webhook's size."""
    calls = []
    shorten_values = spans.shorten_values

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return shorten_values(*args, **kwargs)

    monkeypatch.setattr("relay_app.message.formatting.shorten_values", counted)
    for count in (3, 30, MAX_ITEMS_READ):
        calls.clear()
        message_for(issue_alert(*(issue(n) for n in range(1, count + 1))), ENGLISH)
        assert len(calls) <= 2, count
