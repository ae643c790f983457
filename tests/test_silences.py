"""Silences (spool/silences.py, acting/silencing.py, message/matching.py, `relay-app silence`):
what they hold back and from which chat, that what they hold is kept and counted, and that the
one summary of it is queued once, whichever process ends the silence, in both spools."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from relay_app.acting.keyboards import callback_data
from relay_app.acting.presses import Presses
from relay_app.acting.silencing import Silencing
from relay_app.acting.team import Team
from relay_app.core.routing import Destination
from relay_app.glitchtip.webhook import parse_alert
from relay_app.message.formatting import Message, format_alert
from relay_app.message.matching import Matchers, matches
from relay_app.operating.cli import main
from relay_app.spool import Spool, on_store, silences
from relay_app.spool.database import Database
from relay_app.spool.postgres import PgDatabase
from relay_app.spool.sent import IssueButton, SentMessage
from relay_app.words import ENGLISH
from tests import payloads
from tests.conftest import FakeTime
from tests.test_presses import RecordingChat, api, press

CHAT = "-1001234567890"
HERE = Destination(int(CHAT))
ELSEWHERE = Destination(-1009)


def alert(number: int, *, environment: str = "production", title: str | None = None) -> Message:
    fields = [
        {"title": "Project", "value": "backend", "short": True},
        {"title": "Environment", "value": environment, "short": True},
    ]
    payload = payloads.issue_alert(payloads.issue(number, title=title, fields=fields))
    return format_alert(parse_alert(payload), ENGLISH)


@pytest.fixture(params=["sqlite", "postgres"])
def spool(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Spool]:
    if request.param == "sqlite":
        store: Database | PgDatabase = Database(str(tmp_path / "spool.sqlite3"))
    else:
        store = PgDatabase(request.getfixturevalue("pg_url"), caller_skew=0.0)
    yield on_store(store)
    store.close()


class Edits:
    def __init__(self) -> None:
        self.made: list[tuple[str, int, str, dict[str, Any] | None]] = []

    def __call__(
        self, chat: str, message_id: int, html_text: str, keyboard: dict[str, Any] | None
    ) -> None:
        self.made.append((chat, message_id, html_text, keyboard))


def silencing(spool: Spool, clock: FakeTime, edits: Edits | None = None) -> Silencing:
    return Silencing(spool.silences, spool.sent, edit=edits or Edits(), words=ENGLISH, clock=clock)


def test_matchers_hold_an_issue_alert_only_when_every_issue_matches() -> None:
    one, other = alert(4), alert(5, environment="staging", title="Timeout in checkout")
    assert matches(Matchers(issue="4"), one)
    assert matches(Matchers(issue="backend-1a"), one)  # its short id, in any case
    assert not matches(Matchers(issue="5"), one)
    assert matches(Matchers(environment="STAGING"), other)
    assert matches(Matchers(title="checkout", project="backend"), other)
    assert not matches(Matchers(title="checkout", project="frontend"), other)
    both = format_alert(
        parse_alert(payloads.issue_alert(payloads.issue(4), payloads.issue(5))), ENGLISH
    )
    assert not matches(Matchers(issue="4"), both)  # the other issue still goes, with it
    assert matches(Matchers(project="backend"), both)
    many = format_alert(parse_alert(payloads.issue_alert(payloads.issue(4), total=12)), ENGLISH)
    assert not matches(Matchers(project="backend"), many)  # it names issues it does not list
    uptime = format_alert(parse_alert(payloads.uptime_alert(down=True)), ENGLISH)
    assert not matches(Matchers(title="My API"), uptime)
    assert not matches(Matchers(), one)


def test_a_silence_holds_its_chats_alerts_counts_them_and_ends_with_one_summary(
    spool: Spool, fake_time: FakeTime
) -> None:
    quiet = silencing(spool, fake_time)
    silence = spool.silences.add(
        CHAT, Matchers(issue="4"), by="@ada", comment="on it", seconds=3600, now=fake_time()
    )
    assert (held := quiet.hold(alert(4), HERE)) is not None
    assert held.id == silence.id
    fake_time.now += 60
    assert (held := quiet.hold(alert(4), HERE)) is not None
    assert held.id == silence.id
    assert quiet.hold(alert(5), HERE) is None  # another issue goes
    assert quiet.hold(alert(4), ELSEWHERE) is None  # another chat is not silenced
    assert spool.silences.tally(now=fake_time()) == (1, 2)
    assert spool.queue.pending() == 0  # held, not queued

    fake_time.now += 30
    ended = quiet.end(silence.id, by="@bob")
    assert ended is not None
    assert (ended.held, ended.summary_alert) == (2, 1)
    [summary] = spool.admin.alerts("pending")
    assert summary.destination == HERE
    text = summary.message.text
    assert text.startswith(
        "🔊 Silence over (issue BACKEND-1A, 2027-01-15 08:00:00 to 08:01:30 UTC): "
        "2 alerts held meanwhile\n\n"
    )
    assert text.endswith(" ×2")
    assert quiet.end(silence.id, by="@bob") is None  # once
    assert quiet.hold(alert(4), HERE) is None  # over: it goes
    assert spool.silences.tally(now=fake_time()) == (0, 0)


def test_a_silence_keeps_a_bounded_number_of_held_alerts_and_counts_the_rest(
    spool: Spool, fake_time: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(silences, "MAX_KEPT_HELD", 3)
    quiet = silencing(spool, fake_time)
    silence = spool.silences.add(
        CHAT, Matchers(project="backend"), by="@ada", comment="", seconds=3600, now=fake_time()
    )
    for number in range(1, 6):
        assert quiet.hold(alert(number), HERE) is not None
    assert spool.silences.tally(now=fake_time()) == (1, 5)
    ended = quiet.end(silence.id, by="@bob")
    assert ended is not None
    assert ended.held == 5
    [summary] = spool.admin.alerts("pending")
    head, _, body = summary.message.text.partition("\n\n")
    assert head.endswith("5 alerts held meanwhile; the first 3 are listed")
    shared, _, lines = body.partition("\n\n")
    assert shared == (
        "Project: backend · Environment: production\n"
        "ZeroDivisionError: division by zero … · app.views.divide"
    )
    assert [line.split(" …#")[1] for line in lines.split("\n")] == ["1", "2", "3"]


def test_a_silence_that_ran_out_is_ended_by_whichever_process_sweeps_first(
    spool: Spool, fake_time: FakeTime
) -> None:
    silence = spool.silences.add(
        CHAT, Matchers(project="backend"), by="ops", comment="deploy", seconds=600, now=fake_time()
    )
    silencing(spool, fake_time).hold(alert(4), HERE)
    fake_time.now += 601
    sweepers = [silencing(spool, fake_time) for _ in range(4)]
    threads = [threading.Thread(target=sweeper.sweep) for sweeper in sweepers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    [summary] = spool.admin.alerts("pending")
    assert "🔊 Silence over (project backend, " in summary.message.text
    assert "1 alert held meanwhile" in summary.message.text
    [ended] = spool.silences.listed(now=fake_time(), ended_too=True)
    assert ended.id == silence.id
    assert ended.ended_at == pytest.approx(silence.ends_at)  # when it ran out, not when seen
    assert ended.ended_by is None


def test_a_silence_that_held_nothing_ends_without_a_message(
    spool: Spool, fake_time: FakeTime
) -> None:
    silence = spool.silences.add(
        CHAT, Matchers(issue="4"), by="@ada", comment="", seconds=60, now=fake_time()
    )
    ended = silencing(spool, fake_time).end(silence.id, by="@ada")
    assert ended is not None
    assert ended.summary_alert is None
    assert spool.queue.pending() == 0


SENT = SentMessage(
    CHAT,
    41,
    "<b>🔴 GlitchTip Alert</b>",
    1_800_000_000.0,
    (),
    (IssueButton("the-key", "4", "http://127.0.0.1:9", "BACKEND-4A"),),
)


def test_mute_and_unmute_from_the_chat_edit_the_message_and_change_nothing_in_glitchtip(
    spool: Spool, fake_time: FakeTime
) -> None:
    spool.sent.keep(SENT, [])
    chat = RecordingChat()
    quiet = Silencing(spool.silences, spool.sent, edit=chat.edit, words=ENGLISH, clock=fake_time)
    # No GlitchTip answers here: any call would fail the press.
    team = Team(spool.sent, api(), frozenset(), ENGLISH, clock=fake_time)
    presses = Presses(team, chat, silencing=quiet)
    presses.handle_update(press(callback_data("mute", "the-key")))
    [(_, said, alert_box)] = chat.answers
    assert said == "Muted BACKEND-4A in this chat until 09:00 UTC; GlitchTip is not changed"
    assert not alert_box
    [(_, _, html_text, keyboard)] = chat.edits
    assert html_text.endswith("🔇 Muted in this chat by @ada until 09:00 UTC")
    assert keyboard is not None
    assert keyboard["inline_keyboard"][0][-1] == {
        "text": "🔊 Unmute",
        "callback_data": "u:the-key",
    }
    assert quiet.hold(alert(4), HERE) is not None

    presses.handle_update(press(callback_data("mute", "the-key")))  # a stale Mute: nothing
    assert "out of date" in chat.answers[-1][1]
    presses.handle_update(press(callback_data("unmute", "the-key")))
    assert chat.answers[-1][1] == "Unmuted BACKEND-4A in this chat"
    assert chat.edits[-1][3]["inline_keyboard"][0][-1]["text"] == "🔇 Mute 1 h"  # type: ignore[index]
    [summary] = spool.admin.alerts("pending")
    assert "1 alert held meanwhile" in summary.message.text


def run_cli(spool_path: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    environ = {"RELAY_SPOOL_PATH": spool_path, "TELEGRAM_CHAT_ID": CHAT}
    code = main(list(args), environ=environ, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_command_line_adds_lists_and_expires_silences(tmp_path: Path) -> None:
    spool_path = str(tmp_path / "spool.sqlite3")
    made = on_store(Database(spool_path))  # the service made it
    assert made.queue.pending() == 0
    made.close()
    code, out, err = run_cli(spool_path, "silence", "add", "--for", "1h", "--comment", "x")
    assert code == 2
    assert "needs at least one of --issue" in err
    code, out, _ = run_cli(
        spool_path,
        *("silence", "add", "--issue", "BACKEND-1A", "--title", "division by"),
        *("--for", "90m", "--comment", "rolling back", "--by", "ops"),
    )
    assert code == 0
    assert out.startswith(
        f"silence 1 added: issue=BACKEND-1A title='division by' in chat {CHAT} until "
    )
    assert "(1 h 30 min)" in out
    code, out, _ = run_cli(spool_path, "silence", "list")
    assert code == 0
    header, row = out.splitlines()[:2]
    assert header.split() == [
        "ID",
        "CHAT",
        "UNTIL",
        "(UTC)",
        "STATE",
        "HELD",
        "BY",
        "MATCHERS",
        "COMMENT",
    ]
    assert row.split()[:2] == ["1", CHAT]
    assert row.endswith("ops  issue=BACKEND-1A title='division by'  rolling back")
    assert out.rstrip().endswith(f"1 active in {spool_path}")
    code, out, _ = run_cli(spool_path, "silence", "expire", "1")
    assert (code, out.strip()) == (0, "silence 1 expired; it held no alerts")
    code, _, err = run_cli(spool_path, "silence", "expire", "1", "7")
    assert code == 1
    assert "no such silence" in err
    assert ": 7" in err
    code, out, _ = run_cli(spool_path, "silence", "list")
    assert "0 active" in out
    code, out, _ = run_cli(spool_path, "silence", "list", "--all")
    assert "expired by" in out
    code, _, err = run_cli(
        spool_path,
        "silence",
        "add",
        "--issue",
        "4",
        "--for",
        "1h",
        "--comment",
        "x",
        "--chat",
        "not-a-chat",
    )
    assert code == 2
    assert "is not a chat id" in err


def test_the_list_names_a_muted_issue_as_the_chat_did(tmp_path: Path, fake_time: FakeTime) -> None:
    """A mute from the chat, and one from the command line for an issue a message showed, are
    listed with the issue's short id and title, not GlitchTip's number alone."""
    title = "ZeroDivisionError: division by zero in the cart's total, once again, at checkout"
    path = str(tmp_path / "spool.sqlite3")
    spool = on_store(Database(path))
    shown = replace(SENT, buttons=(replace(SENT.buttons[0], title=title),))
    spool.sent.keep(shown, [])
    chat = RecordingChat()
    quiet = Silencing(spool.silences, spool.sent, edit=chat.edit, words=ENGLISH, clock=fake_time)
    team = Team(spool.sent, api(), frozenset(), ENGLISH, clock=fake_time)
    Presses(team, chat, silencing=quiet).handle_update(press(callback_data("mute", "the-key")))
    spool.close()
    more = ("--for", "1h", "--by", "ops", "--comment", "rollback")
    code, out, _ = run_cli(path, "silence", "add", "--issue", "4", *more)
    assert code == 0
    assert out.startswith("silence 2 added: issue=4 (BACKEND-4A “ZeroDivisionError: division")
    code, out, _ = run_cli(path, "silence", "list")
    assert code == 0
    named = "issue=4 (BACKEND-4A “ZeroDivisionError: division by zero in the cart's total, on…”)"
    rows = out.splitlines()[1:3]
    assert all(named in row for row in rows), out
    code, out, _ = run_cli(path, "silence", "add", "--issue", "99", *more)
    assert "silence 3 added: issue=99 in chat" in out  # never shown: nothing to name it by
