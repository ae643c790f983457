from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relay_app.glitchtip.webhook import read_kept
from relay_app.message.digest import (
    HEADER_ROOM,
    MAX_ALERTS_PER_DIGEST,
    compose,
    header,
    how_many_fit,
)
from relay_app.message.formatting import (
    DIGEST_ENTRY_LIMIT,
    TELEGRAM_TEXT_LIMIT,
    Message,
    format_alert,
    with_first_line,
)
from relay_app.message.spans import visible_length
from relay_app.words import ENGLISH
from tests.payloads import issue, issue_alert, uptime_alert
from tests.telegram_rules import visible_text

START = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def sized(length: int) -> Message:
    """A message of `length` visible characters, without lines (as an unknown payload's)."""
    return Message("x" * length, "x" * length, "x")


def numbered(number: int, **changes: Any) -> Message:
    """An issue alert about issue `number`, short id BACKEND-<number>."""
    payload = issue_alert(issue(number, **changes))
    payload["sections"][0]["activitySubtitle"] = (
        f"[View Issue BACKEND-{number}]({payload['attachments'][0]['title_link']})"
    )
    return format_alert(read_kept(payload), ENGLISH)


def test_as_many_oldest_alerts_as_fit_go_into_one_digest_and_never_none() -> None:
    room = TELEGRAM_TEXT_LIMIT - HEADER_ROOM
    assert how_many_fit([], ENGLISH) == 0
    assert how_many_fit([sized(100)] * 10, ENGLISH) == 10
    assert how_many_fit([sized(room // 2 - 2)] * 3, ENGLISH) == 2
    assert how_many_fit([sized(5000), sized(10)], ENGLISH) == 1  # too long to share: it goes alone
    assert how_many_fit([sized(1)] * 500, ENGLISH) == MAX_ALERTS_PER_DIGEST


def test_a_backlog_goes_out_as_lines_and_what_fits_goes_out_in_full() -> None:
    full = [numbered(n) for n in range(1, 8)]
    assert how_many_fit(full, ENGLISH) == 7  # all fit: in full
    digest = compose(full, [START] * 7, ENGLISH, now=START, late_after=60)
    assert all(message.entry.text.split("\n\n", 1)[1] in digest.text for message in full)
    backlog = [numbered(n) for n in range(1, 1001)]
    first = how_many_fit(backlog, ENGLISH)
    assert first >= 50  # a thousand alerts in twenty messages
    digest = compose(backlog[:first], [START] * first, ENGLISH, now=START, late_after=60)
    assert visible_length(digest.text) <= TELEGRAM_TEXT_LIMIT - len(ENGLISH.repeat_note_digest) - 2
    assert visible_text(digest.html, parse_mode="HTML") == digest.text
    heading, shared, lines = digest.text.split("\n\n")[:3]
    assert heading.startswith(f"🗂 {first} alerts, received")
    # What every alert shares, once (the fields, the titles' common beginning, where they were
    # raised); then one line each, oldest first, with what differs.
    assert shared == (
        "Project: backend · Environment: production · Server Name: web-1 · Release: 1.4.2\n"
        "ZeroDivisionError: division by zero … · app.views.divide"
    )
    rows = lines.split("\n")
    assert len(rows) == first
    assert [row.split(" ")[1] for row in rows] == [f"BACKEND-{n}" for n in range(1, first + 1)]
    assert rows[0] == "🔴 BACKEND-1 …#1"
    assert ENGLISH.cut_note not in digest.text  # what differs is short: nothing was cut
    assert '<b><a href="https://glitchtip.example.org/acme/issues/1">BACKEND-1</a></b>' in (
        digest.html
    )
    assert digest.fallback == digest.text


def test_a_backlogs_lines_are_cut_to_fit_and_say_where_to_read_them_whole() -> None:
    long = [numbered(n, title=f"ValueError: {'x' * 300} {n}") for n in range(1, 201)]
    count = how_many_fit(long, ENGLISH)
    digest = compose(long[:count], [START] * count, ENGLISH, now=START, late_after=60)
    assert visible_length(digest.text) <= TELEGRAM_TEXT_LIMIT
    assert digest.text.endswith(ENGLISH.cut_note)
    assert "ValueError: xxx" in digest.text
    assert "…" in digest.text
    # Nothing is cut where there is room: a few alerts keep their titles whole.
    few = [numbered(n, title=f"KeyError {'y' * 60}") for n in range(1, 31)]
    assert how_many_fit(few, ENGLISH) == 30
    digest = compose(few, [START] * 30, ENGLISH, now=START, late_after=60)
    assert digest.text.count("app.views.divide") == 1  # lines, not entries: said once
    assert f"KeyError {'y' * 60} (#1)" in digest.text  # alike but for GlitchTip's number
    assert ENGLISH.cut_note not in digest.text


def test_the_same_issue_waiting_several_times_shows_once_with_its_count() -> None:
    repeated = [numbered(n % 3 + 1) for n in range(90)] + [numbered(4)]
    count = how_many_fit(repeated, ENGLISH)
    assert count == len(repeated)
    digest = compose(repeated, [START] * count, ENGLISH, now=START, late_after=60)
    rows = digest.text.split("\n\n")[2].split("\n")
    assert [row.split(" ")[1] for row in rows] == [
        "BACKEND-1",
        "BACKEND-2",
        "BACKEND-3",
        "BACKEND-4",
    ]
    assert rows[0].endswith(" ×30")
    assert not rows[3].endswith("×1")


def test_facts_not_shared_by_every_alert_stay_on_their_lines() -> None:
    staging = [{"title": "Environment", "value": "staging"}]
    mixed = [numbered(n) for n in range(1, 21)] + [numbered(40, fields=staging)] * 30
    count = how_many_fit(mixed, ENGLISH)
    digest = compose(mixed[:count], [START] * count, ENGLISH, now=START, late_after=60)
    shared = digest.text.split("\n\n")[1]
    assert not shared.startswith("Project")  # no fact is in every line: straight to the lines
    assert "· staging ×30" in digest.text
    assert "· production · web-1 · 1.4.2" in digest.text


def test_alerts_without_lines_pack_as_entries_and_an_uptime_alert_gets_a_line() -> None:
    assert how_many_fit([sized(1900)] * 3, ENGLISH) == 2
    down = format_alert(read_kept(uptime_alert(down=True, name="Checkout")), ENGLISH)
    backlog = [numbered(n) for n in range(1, 50)] + [down] + [sized(10)]
    count = how_many_fit(backlog, ENGLISH)
    assert count == 50  # up to the alert without lines, which goes on its own
    digest = compose(backlog[:count], [START] * count, ENGLISH, now=START, late_after=60)
    assert digest.text.split("\n")[-1].startswith("🔴 DOWN Checkout")


def test_an_alert_alone_goes_as_it_was_built_with_a_note_when_late() -> None:
    message = format_alert(read_kept(issue_alert(issue(1))), ENGLISH)
    assert compose([message], [START], ENGLISH, now=START + 10, late_after=60) == message
    late = compose([message], [START], ENGLISH, now=START + 90, late_after=60)
    note = "⏳ Late: GlitchTip sent this at 2027-01-15 08:00:00 UTC; delivered 1 min 30 s later."
    assert late.text == f"{message.text}\n\n{note}"


def test_a_digest_says_how_many_and_when_then_holds_each_alert_whole_oldest_first() -> None:
    messages = [
        format_alert(read_kept(issue_alert(issue(1, title="First <b>&"))), ENGLISH),
        format_alert(read_kept(uptime_alert(down=True, name="Checkout")), ENGLISH),
        format_alert(read_kept(issue_alert(issue(3))), ENGLISH),
    ]  # no two issue alerts in a row: each keeps its own heading
    digest = compose(
        messages, [START, START + 4, START + 11], ENGLISH, now=START + 12, late_after=60
    )
    assert visible_text(digest.html, parse_mode="HTML") == digest.text
    first_line, rest = digest.text.split("\n\n", 1)
    assert first_line == "🗂 3 alerts, received 2027-01-15 08:00:00 to 08:00:11 UTC (over 11 s)"
    assert rest == "\n\n".join(m.text for m in messages)
    assert digest.html.startswith(f"<b>{first_line}</b>\n\n")
    assert digest.fallback == digest.text  # no alert is cut off the plain text


def test_a_late_digest_says_so_in_its_first_line() -> None:
    line = header(2, (START, START + 3), ENGLISH, now=START + 125, late_after=60)
    assert line.endswith("(over 3 s); sent 2 min 5 s after the first")
    assert len(line) < HEADER_ROOM
    across_midnight = header(2, (START - 8 * 3600 - 1, START), ENGLISH, now=START, late_after=1e9)
    assert "2027-01-14 23:59:59 to 2027-01-15 08:00:00 UTC" in across_midnight


def test_a_long_alert_keeps_a_shorter_entry_for_digests() -> None:
    fields = [{"title": f"Tag {n}", "value": "v" * 300} for n in range(20)]
    message = format_alert(read_kept(issue_alert(issue(1, fields=fields))), ENGLISH)
    assert visible_length(message.text) > DIGEST_ENTRY_LIMIT
    entry = message.entry
    assert visible_length(entry.text) <= DIGEST_ENTRY_LIMIT
    assert visible_text(entry.html, parse_mode="HTML") == entry.text
    # Header and title (linked) stay readable; fields shortened, those that do not fit cut.
    assert '<a href="https://glitchtip.example.org/acme/issues/1">' in entry.html
    assert entry.text.startswith("🔴 GlitchTip Alert\n\nZeroDivisionError: division by zero #1")
    assert "Tag 15: vvv" in entry.text
    assert entry.text.endswith("v…")  # the fields that did not fit, cut off once


def test_alerts_that_do_not_fit_are_refused_rather_than_cut() -> None:
    with pytest.raises(ValueError, match="how_many_fit"):
        compose([sized(900)] * 20, [START] * 20, ENGLISH, now=START, late_after=60)


def test_issue_alerts_in_a_row_share_one_heading_with_their_count() -> None:
    def alert(number: int, color: str = "#e52b50") -> Message:
        return format_alert(read_kept(issue_alert(issue(number, color=color))), ENGLISH)

    messages = [
        alert(1),
        alert(2),
        alert(3),
        format_alert(read_kept(uptime_alert(down=True, name="Checkout")), ENGLISH),
        alert(5),
        alert(6, color="#4b60b4"),  # info: another severity, another heading
        alert(7, color="#4b60b4"),
    ]
    digest = compose(messages, [START] * 7, ENGLISH, now=START, late_after=60)
    assert visible_text(digest.html, parse_mode="HTML") == digest.text
    paragraphs = digest.text.split("\n\n")
    headings = [p for p in paragraphs if "GlitchTip Alert" in p]
    assert headings == [
        "🔴 GlitchTip Alert · 3 alerts",
        "🔴 GlitchTip Alert",
        "🔵 GlitchTip Alert · 2 alerts",
    ]
    titles = [p.split("\n")[0] for p in paragraphs if p.startswith("ZeroDivisionError")]
    assert titles == [f"ZeroDivisionError: division by zero #{n}" for n in (1, 2, 3, 5, 6, 7)]
    assert paragraphs[1] == "🔴 GlitchTip Alert · 3 alerts"
    assert paragraphs[2].startswith("ZeroDivisionError: division by zero #1\nin app.views.divide")
    assert "<b>🔴 GlitchTip Alert</b>" not in digest.html  # the marker is outside the bold
    assert "🔴 <b>GlitchTip Alert</b> · 3 alerts" in digest.html


def test_a_storm_of_one_heading_shows_it_once_and_fits_more_alerts() -> None:
    storm = [format_alert(read_kept(issue_alert(issue(n))), ENGLISH) for n in range(24)]
    each_with_its_heading = len("\n\n") + visible_length(storm[0].entry.text)
    would_fit = (TELEGRAM_TEXT_LIMIT - HEADER_ROOM) // each_with_its_heading
    assert would_fit < len(storm)
    assert how_many_fit(storm, ENGLISH) == len(storm)
    digest = compose(storm, [START] * 24, ENGLISH, now=START, late_after=60)
    assert digest.text.count("GlitchTip Alert") == 1
    assert digest.text.count("\nin app.views.divide") == 24  # whole entries, not lines


def test_the_fullest_message_late_and_sent_again_stays_within_telegrams_limit() -> None:
    """The first line of a resend and the line of a late delivery go into the room every
    message keeps: adding them never means rebuilding a message that was already accepted."""
    much_later = START + 3 * 86400 + 3599
    issues = [issue(n, title="x" * 300) for n in range(1, 100)]
    fullest = format_alert(read_kept(issue_alert(*issues)), ENGLISH)
    alone = compose([fullest], [START], ENGLISH, now=much_later, late_after=60)
    assert visible_length(with_first_line(alone, ENGLISH.repeat_note).text) <= TELEGRAM_TEXT_LIMIT
    for count in (2, 12, MAX_ALERTS_PER_DIGEST):
        room = (TELEGRAM_TEXT_LIMIT - HEADER_ROOM) // count - 2
        messages = [sized(room)] * count
        assert how_many_fit(messages, ENGLISH) == count
        arrived = [START, *[much_later - 1] * (count - 1)]
        digest = compose(messages, arrived, ENGLISH, now=much_later, late_after=60)
        resent = with_first_line(digest, ENGLISH.repeat_note_digest)
        assert visible_length(resent.text) <= TELEGRAM_TEXT_LIMIT


def test_issues_glitchtip_did_not_send_add_up_in_one_last_line() -> None:
    def three_of_twelve(number: int) -> Message:
        issues = [issue(number * 10 + n) for n in range(3)]
        return format_alert(read_kept(issue_alert(*issues, total=12)), ENGLISH)

    backlog = [three_of_twelve(n) for n in range(1, 80)]
    count = how_many_fit(backlog, ENGLISH)
    assert 12 < count < len(backlog)
    digest = compose(backlog[:count], [START] * count, ENGLISH, now=START, late_after=60)
    lines = digest.text.split("\n\n")[2].split("\n")
    assert len(lines) == 3 * count + 1  # one line per issue sent, and one for the rest
    assert lines[-1] == f"➕ {9 * count} more issues in these alerts, not shown: see GlitchTip"


def test_distinct_issues_whose_titles_share_a_beginning_never_read_the_same() -> None:
    """56 issues whose titles differ only past where a line would cut them (issue 32): the
    shared beginning and the shared culprit are said once in the head, each line keeps what
    differs; and issues alike in every word still differ by GlitchTip's number."""
    start = "TypeError: cannot read property 'total' of undefined while rendering the cart for"
    storm = [numbered(n, title=f"{start} customer {n * 7919 % 1000}") for n in range(1, 57)]
    storm += [numbered(n, title="RuntimeError: same everywhere") for n in (100, 101)]
    count = how_many_fit(storm, ENGLISH)
    digest = compose(storm[:count], [START] * count, ENGLISH, now=START, late_after=60)
    _, shared, lines = digest.text.split("\n\n")[:3]
    assert "app.views.divide" in shared
    rows = lines.split("\n")
    assert len(rows) == count
    readings = [row.split(" ", 2)[2] for row in rows]  # the linked id set aside
    assert len(set(readings)) == len(readings), readings
    assert readings[0] == "TypeError: cannot…919"  # its neighbour shares "…customer 9"


def test_a_digests_first_line_and_a_late_note_are_in_the_places_zone() -> None:
    message = format_alert(read_kept(issue_alert(issue(1))), ENGLISH)
    moscow = ZoneInfo("Europe/Moscow")
    digest = compose(
        [message, message], [START, START + 11], ENGLISH, now=START + 12, late_after=60, zone=moscow
    )
    head = digest.text.split("\n")[0]
    assert head.endswith(" MSK (over 11 s)")
    late = compose([message], [START], ENGLISH, now=START + 90, late_after=60, zone=moscow)
    assert late.text.endswith(" MSK; delivered 1 min 30 s later.")
