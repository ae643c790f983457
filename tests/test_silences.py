"""Silences (silences/store.py, silences/silencing.py, silences/matching.py, `relay-app silence`):
what they hold back and from which chat, that what they hold is kept and counted, and that the
one summary of it is queued once, whichever process ends the silence, in both spools."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from relay_app import Relay
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.marks import Mark, Marks
from relay_app.cards.sent import SentStore
from relay_app.cli import main
from relay_app.core.routing import Destination
from relay_app.delivery.outbox import Outbox
from relay_app.delivery.render import Added, Renderer
from relay_app.message.formatting import Message
from relay_app.silences import store as silences
from relay_app.silences.buttons import MUTE, UNMUTE
from relay_app.silences.marks import MUTED, muted
from relay_app.silences.matching import Matchers, matches
from relay_app.silences.silencing import Silencing
from relay_app.silences.store import NewSilence, SilenceStore
from relay_app.spool import Job, Spool, on_store
from relay_app.spool.database import Database
from relay_app.spool.postgres import PgDatabase
from relay_app.words import ENGLISH
from tests import payloads
from tests.conftest import SOURCES, FakeTime
from tests.in_process import Chat
from tests.old_spools import upgraded_from
from tests.payloads import message_for
from tests.test_presses import press

CHAT = "-1001234567890"
HERE = Destination(int(CHAT))
ELSEWHERE = Destination(-1009)


def alert(number: int, *, environment: str = "production", title: str | None = None) -> Message:
    fields = [
        {"title": "Project", "value": "backend", "short": True},
        {"title": "Environment", "value": environment, "short": True},
    ]
    payload = payloads.issue_alert(payloads.issue(number, title=title, fields=fields))
    return message_for(payload, ENGLISH, sources=SOURCES)


@pytest.fixture(params=["sqlite", "postgres"])
def spool(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Spool]:
    if request.param == "sqlite":
        store: Database | PgDatabase = Database(str(tmp_path / "spool.sqlite3"))
    else:
        store = PgDatabase(request.getfixturevalue("pg_url"), caller_skew=0.0)
    yield on_store(store)
    store.close()


def silencing(spool: Spool, clock: FakeTime) -> Silencing:
    return Silencing(
        spool.of(SilenceStore),
        spool.of(SentStore),
        outbox=Outbox(spool.queue, clock=clock),
        clock=clock,
    )


def text_of(job: Job) -> str:
    """The summary as the relay renders it when it sends it, in English."""
    return (
        Renderer(ENGLISH, late_after=3600.0, added=Added(REGISTRY.shapes), sources=SOURCES)
        .alert(job)
        .text
    )


def test_matchers_hold_an_issue_alert_only_when_every_issue_matches() -> None:
    one, other = alert(4), alert(5, environment="staging", title="Timeout in checkout")
    assert matches(Matchers(issue="4"), one)
    assert matches(Matchers(issue="backend-1a"), one)  # its short id, in any case
    assert not matches(Matchers(issue="5"), one)
    assert matches(Matchers(environment="STAGING"), other)
    assert matches(Matchers(title="checkout", project="backend"), other)
    assert not matches(Matchers(title="checkout", project="frontend"), other)
    both = message_for(
        payloads.issue_alert(payloads.issue(4), payloads.issue(5)), ENGLISH, sources=SOURCES
    )
    assert not matches(Matchers(issue="4"), both)  # the other issue still goes, with it
    assert matches(Matchers(project="backend"), both)
    many = message_for(payloads.issue_alert(payloads.issue(4), total=12), ENGLISH, sources=SOURCES)
    assert not matches(Matchers(project="backend"), many)  # it names issues it does not list
    uptime = message_for(payloads.uptime_alert(down=True), ENGLISH, sources=SOURCES)
    assert not matches(Matchers(title="My API"), uptime)
    assert not matches(Matchers(), one)


def test_a_silence_holds_its_chats_alerts_counts_them_and_ends_with_one_summary(
    spool: Spool, fake_time: FakeTime
) -> None:
    quiet = silencing(spool, fake_time)
    silence = spool.of(SilenceStore).add(
        NewSilence(CHAT, Matchers(issue="4"), by="@ada", comment="on it", seconds=3600),
        now=fake_time(),
    )
    assert (held := quiet.hold(alert(4), HERE)) is not None
    assert held.id == silence.id
    fake_time.now += 60
    assert (held := quiet.hold(alert(4), HERE)) is not None
    assert held.id == silence.id
    assert quiet.hold(alert(5), HERE) is None  # another issue goes
    assert quiet.hold(alert(4), ELSEWHERE) is None  # another chat is not silenced
    assert spool.of(SilenceStore).tally(now=fake_time()) == (1, 2)
    assert spool.queue.pending() == 0  # held, not queued

    fake_time.now += 30
    ended = quiet.end(silence.id, by="@bob")
    assert ended is not None
    assert (ended.held, ended.summary_alert) == (2, 1)
    [summary] = spool.admin.alerts("pending")
    assert summary.destination == HERE
    text = text_of(summary)
    assert text.startswith(
        "🔊 Silence over (issue BACKEND-1A, 2027-01-15 08:00:00 to 08:01:30 UTC): "
        "2 alerts held meanwhile\n\n"
    )
    assert text.endswith(" ×2")
    assert quiet.end(silence.id, by="@bob") is None  # once
    assert quiet.hold(alert(4), HERE) is None  # over: it goes
    assert spool.of(SilenceStore).tally(now=fake_time()) == (0, 0)


def test_a_silence_keeps_a_bounded_number_of_held_alerts_and_counts_the_rest(
    spool: Spool, fake_time: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(silences, "MAX_KEPT_HELD", 3)
    quiet = silencing(spool, fake_time)
    silence = spool.of(SilenceStore).add(
        NewSilence(CHAT, Matchers(project="backend"), by="@ada", comment="", seconds=3600),
        now=fake_time(),
    )
    for number in range(1, 6):
        assert quiet.hold(alert(number), HERE) is not None
    assert spool.of(SilenceStore).tally(now=fake_time()) == (1, 5)
    ended = quiet.end(silence.id, by="@bob")
    assert ended is not None
    assert ended.held == 5
    [summary] = spool.admin.alerts("pending")
    head, _, body = text_of(summary).partition("\n\n")
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
    silence = spool.of(SilenceStore).add(
        NewSilence(CHAT, Matchers(project="backend"), by="ops", comment="deploy", seconds=600),
        now=fake_time(),
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
    assert "🔊 Silence over (project backend, " in text_of(summary)
    assert "1 alert held meanwhile" in text_of(summary)
    [ended] = spool.of(SilenceStore).listed(now=fake_time(), ended_too=True)
    assert ended.id == silence.id
    assert ended.ended_at == pytest.approx(silence.ends_at)  # when it ran out, not when seen
    assert ended.ended_by is None


def test_a_silence_that_held_nothing_ends_without_a_message(
    spool: Spool, fake_time: FakeTime
) -> None:
    silence = spool.of(SilenceStore).add(
        NewSilence(CHAT, Matchers(issue="4"), by="@ada", comment="", seconds=60), now=fake_time()
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


def test_mute_and_unmute_from_the_chat_edit_the_card_and_change_nothing_in_glitchtip(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    # No GlitchTip answers here: any call would fail the press.
    chat = Chat.of(built, fake_time, SENT)
    chat.update(press(callback_data(MUTE, "the-key")))
    [(said, alert_box)] = chat.answered()
    assert said == "Muted BACKEND-4A in this chat until 09:00 UTC; GlitchTip is not changed"
    assert not alert_box
    chat.settle()
    [(_, _, html_text, keyboard)] = chat.telegram.edits
    assert html_text.endswith("🔇 Muted in this chat by @ada until 09:00 UTC")
    assert keyboard is not None
    assert keyboard["inline_keyboard"][0][-2] == {
        "text": "🔊 Unmute",
        "callback_data": "u:the-key",
    }
    assert chat.relay.silencing is not None
    assert chat.relay.silencing.hold(alert(4), HERE) is not None

    chat.update(press(callback_data(MUTE, "the-key")))  # a stale Mute: nothing
    assert "out of date" in chat.answered()[-1][0]
    chat.update(press(callback_data(UNMUTE, "the-key")))
    assert chat.answered()[-1][0] == "Unmuted BACKEND-4A in this chat"
    chat.settle()
    assert chat.telegram.edits[-1][3]["inline_keyboard"][0][-2]["text"] == "🔇 Mute 1 h"
    [summary] = chat.telegram.delivered
    assert "1 alert held meanwhile" in summary.text


def test_a_summary_a_tool_queues_is_made_in_the_chats_language_when_it_is_sent(
    built: Callable[..., Relay], fake_time: FakeTime, tmp_path: Path
) -> None:
    # `relay-app silence expire` run from a shell without RELAY_LANGUAGE put an English summary
    # into a Russian chat: the tool made the text. It queues what the summary is about now.
    fake_time.now = time.time()  # the tool's clock is the host's
    path = str(tmp_path / "spool.sqlite3")
    chat = Chat.of(built, fake_time, spool_path=path, language="ru")
    assert chat.relay.spool is not None
    assert chat.relay.silencing is not None
    chat.relay.spool.of(SilenceStore).add(
        NewSilence(CHAT, Matchers(issue="4"), by="@ada", comment="", seconds=3600), now=fake_time()
    )
    assert chat.relay.silencing.hold(alert(4), HERE) is not None
    code, out, _ = run_cli(path, "silence", "expire", "1")
    assert code == 0, out
    chat.settle()
    [summary] = chat.telegram.delivered
    assert summary.text.startswith("🔊 Звук снова включён (проблема BACKEND-1A, "), summary.text


def run_cli(spool_path: str, *args: str, **more: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    environ = {"RELAY_SPOOL_PATH": spool_path, "TELEGRAM_CHAT_ID": CHAT, **more}
    code = main(list(args), environ=environ, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_with_routes_a_silence_covers_every_chat_they_may_send_its_alerts_to(
    tmp_path: Path,
) -> None:
    spool_path = str(tmp_path / "spool.sqlite3")
    made = on_store(Database(spool_path))  # the service made it
    assert made.queue.pending() == 0
    made.close()
    routes = tmp_path / "routes.toml"
    routes.write_text(
        """
[[route]]
project = "payments"
environment = "production"
chat = -1002000000001
[[route]]
environment = "staging"
chat = -1002000000002
[[route]]
project = "!payments"
chat = -1002000000003
[[route]]
title = "healthcheck"
drop = true
"""
    )
    code, out, err = run_cli(
        spool_path,
        *("silence", "add", "--project", "payments", "--for", "1h", "--comment", "deploy"),
        RELAY_ROUTES=str(routes),
    )
    assert code == 0, err
    # Payments' production and staging chats, and where alerts no route takes go; not the
    # chat of every project but payments.
    said = [line.split(" in chat ")[1].split()[0] for line in out.splitlines() if " added" in line]
    assert said == [CHAT, "-1002000000001", "-1002000000002"]
    assert "may send such alerts to, and TELEGRAM_CHAT_ID's" in out
    code, out, _ = run_cli(
        spool_path,
        *("silence", "add", "--project", "payments", "--for", "1h", "--comment", "x"),
        *("--chat", "-1002000000002"),
        RELAY_ROUTES=str(routes),
    )
    assert code == 0
    assert "in chat -1002000000002 until" in out
    assert "Only in that chat (--chat)." in out
    code, out, _ = run_cli(spool_path, "silence", "list")
    assert "4 active" in out


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


def test_the_list_names_a_muted_issue_as_the_chat_did(
    built: Callable[..., Relay], tmp_path: Path, fake_time: FakeTime
) -> None:
    """A mute from the chat, and one from the command line for an issue a message showed, are
    listed with the issue's short id and title, not GlitchTip's number alone."""
    title = "ZeroDivisionError: division by zero in the cart's total, once again, at checkout"
    path = str(tmp_path / "spool.sqlite3")
    shown = replace(SENT, buttons=(replace(SENT.buttons[0], title=title),))
    chat = Chat.of(built, fake_time, shown, spool_path=path)
    chat.update(press(callback_data(MUTE, "the-key")))
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


@pytest.fixture(params=["sqlite", "postgres"])
def spools(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Spool]]:
    """Spools on one store, each with a connection of its own: the processes of a fleet."""
    opened: list[Database | PgDatabase] = []

    def another() -> Spool:
        store: Database | PgDatabase
        if request.param == "sqlite":
            store = Database(str(tmp_path / "spool.sqlite3"))
        else:
            store = PgDatabase(request.getfixturevalue("pg_url"), caller_skew=0.0)
        opened.append(store)
        return on_store(store)

    yield another
    for store in opened:
        store.close()


def test_twenty_mute_presses_at_once_make_one_silence_and_unmute_ends_it(
    spools: Callable[[], Spool], fake_time: FakeTime
) -> None:
    first = spools()
    buttons = {
        41: IssueButton("card-41", "4", "https://gt.example.org", "BACKEND-4A"),
        42: IssueButton("card-42", "4", "https://gt.example.org", "BACKEND-4A"),  # again
    }
    for message_id, button in buttons.items():
        first.of(SentStore).keep(
            SentMessage(CHAT, message_id, "<b>alert</b>", 0.0, buttons=(button,)), []
        )
    elsewhere = IssueButton("card-43", "4", "https://gt.example.org", "BACKEND-4A")
    first.of(SentStore).keep(
        SentMessage(str(ELSEWHERE.chat), 43, "<b>x</b>", 0.0, buttons=(elsewhere,)), []
    )
    fleet = [silencing(spools(), fake_time) for _ in range(20)]
    start = threading.Barrier(len(fleet))

    def mute(numbered: tuple[int, Silencing]) -> int:
        number, process = numbered
        start.wait(timeout=10)
        return process.mute(CHAT, buttons[41 + number % 2], by=f"@person{number}").id

    with ThreadPoolExecutor(len(fleet)) as pool:
        made = set(pool.map(mute, enumerate(fleet)))
    assert len(made) == 1  # one silence, whoever pressed on whichever card
    [silence] = first.of(SilenceStore).active(CHAT, now=fake_time())
    assert silence.id in made
    assert first.of(SilenceStore).active(str(ELSEWHERE.chat), now=fake_time()) == []
    cards = first.of(lambda store: SentStore(store, Marks([muted])))
    shown = [cards.message(CHAT, message_id) for message_id in buttons]
    marks = [m.buttons[0].marked(MUTED) for m in shown if m is not None]
    assert [mark.ref if mark is not None else None for mark in marks] == [silence.id] * 2
    # The card's record keeps none of it: read without the silences' marks, it shows none.
    assert shown[0] is not None
    assert first.of(SentStore).message(CHAT, 41) == replace(shown[0], buttons=(buttons[41],))
    # Unmute on either card ends it: the issue's next alert goes.
    [button] = shown[1].buttons if shown[1] is not None else ()
    assert fleet[0].unmute(CHAT, button, by="@ada")
    assert first.of(SilenceStore).active(CHAT, now=fake_time()) == []
    assert fleet[0].hold(alert(4), HERE) is None


def test_unmute_ends_every_silence_mute_made_of_the_issue_in_the_chat(
    spool: Spool, fake_time: FakeTime
) -> None:
    # Two, as an older relay made of presses at once; one the command line made stays.
    for _ in range(2):
        spool.of(SilenceStore).add(
            NewSilence(
                CHAT,
                Matchers(issue="4"),
                by="@ada",
                comment=silences.MUTED_FROM_THE_CHAT,
                seconds=3600,
            ),
            now=fake_time(),
        )
    kept = spool.of(SilenceStore).add(
        NewSilence(CHAT, Matchers(issue="4"), by="ops", comment="deploy", seconds=3600),
        now=fake_time(),
    )
    at = fake_time()
    mark = Mark(MUTED, "@ada", at, "muted_by", "issue_muted_by", until=at + 3600, ref=1)
    button = IssueButton("k", "4", "https://gt.example.org", "BACKEND-4A", marks=(mark,))
    spool.of(SentStore).keep(SentMessage(CHAT, 41, "<b>alert</b>", 0.0, buttons=(button,)), [])
    assert silencing(spool, fake_time).unmute(CHAT, button, by="@ada")
    assert [s.id for s in spool.of(SilenceStore).active(CHAT, now=fake_time())] == [kept.id]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_mute_kept_in_the_cards_record_before_is_shown_from_its_silence_after_the_upgrade(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, fake_time: FakeTime
) -> None:
    """Step 28 drops the mute from the card's record: a mute under way at the upgrade is still
    shown, from the silence Mute made, which is where it always was."""
    now = fake_time()
    made = [
        "INSERT INTO sent_messages (chat, message_id, html, sent_at) VALUES"
        f" ('{CHAT}', 41, '<b>alert</b>', {now})",
        "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin, label,"
        f" silence_id, muted_by, muted_until) VALUES ('k41', '{CHAT}', 41, 0, '4',"
        f" 'https://gt.example.org', 'BACKEND-4A', 1, '@ada', {now + 3600})",
        "INSERT INTO silences (chat, issue, label, created_by, comment, starts_at, ends_at)"
        f" VALUES ('{CHAT}', '4', 'BACKEND-4A', '@ada', '{silences.MUTED_FROM_THE_CHAT}',"
        f" {now}, {now + 3600})",
    ]
    where = (
        str(tmp_path / "spool.sqlite3") if kind == "sqlite" else request.getfixturevalue("pg_url")
    )
    store = upgraded_from(kind, where, 27, made)
    try:
        spool = on_store(store)
        card = spool.of(lambda kept: SentStore(kept, Marks([muted]))).message(CHAT, 41)
        assert card is not None
        [button] = card.buttons
        mark = button.marked(MUTED)
        assert mark is not None
        assert mark.by == "@ada"
        assert mark.until == pytest.approx(now + 3600, abs=5)
        columns = store.read(lambda tx: tx.one("SELECT * FROM issue_buttons WHERE key = 'k41'"))
        assert "silence_id" not in dict(columns)
        # Unmute on it ends that silence; the card is shown without it.
        assert silencing(spool, fake_time).unmute(CHAT, button, by="@bo")
        again = spool.of(lambda kept: SentStore(kept, Marks([muted]))).message(CHAT, 41)
        assert again is not None
        assert again.buttons[0].marks == ()
    finally:
        store.close()
