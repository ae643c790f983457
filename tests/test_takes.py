"""Who has an issue (takes/store.py) and Ignore's state on a card (cards/ignore_state.py), each
kept in a table of its own keyed by the card's row: a take marks every open card of the issue
in the chat and one sent later, Let go clears them; Ignore's choices open once and close with
the status; and what was under way when a spool is upgraded to step 29 (out of the card's
record) stays."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from relay_app.cards.card import IssueButton, SentMessage
from relay_app.cards.sent import SentStore
from relay_app.spool import on_store
from relay_app.spool.database import Database
from tests.conftest import FakeTime
from tests.old_spools import upgraded_from
from tests.taking import cards_of, let_go, take, taker, taker_id

CHAT = "-100123"
ORIGIN = "https://gt.example.org"


def card(message_id: int, key: str, status: str | None = None) -> SentMessage:
    button = IssueButton(key, "4", ORIGIN, "BACKEND-4A", status=status)  # type: ignore[arg-type]
    return SentMessage(CHAT, message_id, "<b>alert</b>", 0.0, buttons=(button,))


def takers(sent: SentStore, *message_ids: int) -> list[str | None]:
    found = [sent.message(CHAT, message_id) for message_id in message_ids]
    return [taker(message.buttons[0]) if message else "gone" for message in found]


def test_a_take_marks_the_open_cards_and_a_later_one_and_let_go_clears_them(
    tmp_path: Path, fake_time: FakeTime
) -> None:
    spool = on_store(Database(str(tmp_path / "spool.sqlite3")))
    sent = cards_of(spool)
    sent.keep(card(41, "k41"), [])
    sent.keep(card(42, "k42", status="resolved"), [])
    sent.keep(card(43, "k43"), [])
    assert take(spool, "k43", by="@ada", by_id=7, at=fake_time()) == [43, 41]
    assert take(spool, "k41", by="@bo", by_id=8, at=fake_time()) == []  # someone has it
    assert takers(sent, 41, 42, 43) == ["@ada", None, "@ada"]  # not the resolved card
    sent.keep(card(44, "k44"), [])
    assert takers(sent, 44) == ["@ada"]  # sent later: it says who has it
    assert let_go(spool, "k44", by_id=8, at=fake_time()) is None  # not theirs
    assert let_go(spool, "k44", by_id=7, at=fake_time()) == [41, 43, 44]
    assert takers(sent, 41, 43, 44) == [None, None, None]
    assert take(spool, "k42", by="@ada", by_id=7, at=fake_time()) == []  # resolved: no take


def test_ignores_choices_open_once_and_an_ignores_condition_goes_with_its_status(
    tmp_path: Path, fake_time: FakeTime
) -> None:
    sent = on_store(Database(str(tmp_path / "spool.sqlite3"))).of(SentStore)
    sent.keep(card(41, "k41"), [])
    sent.keep(card(42, "k42"), [])
    assert sent.choose("k41", choosing=True, at=fake_time())
    assert not sent.choose("k41", choosing=True, at=fake_time())  # another press came first
    until = {"until": fake_time() + 3600}
    claim = sent.claim("k41", None, "ignored", by="@ada", at=fake_time(), snooze=until)
    assert claim is not None
    assert sent.mirror("k41") == [42]
    for message_id in (41, 42):
        message = sent.message(CHAT, message_id)
        assert message is not None
        assert (message.buttons[0].choosing, message.buttons[0].snooze) == (False, until)
    assert not sent.choose("k41", choosing=True, at=fake_time())  # ignored: no choices
    sent.unclaim(claim)  # the tracker refused: as it was, without a condition
    message = sent.message(CHAT, 41)
    assert message is not None
    assert (message.buttons[0].status, message.buttons[0].snooze) == (None, None)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_take_kept_in_the_cards_record_before_stays_after_the_upgrade(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, fake_time: FakeTime
) -> None:
    """Step 29 moves who has an issue out of the card's record: a take under way stays, on the
    same cards, and its taker may let go of it."""
    now = fake_time()
    true, false = ("1", "0") if kind == "sqlite" else ("true", "false")
    made = [
        "INSERT INTO sent_messages (chat, message_id, html, sent_at) VALUES"
        f" ('{CHAT}', {n}, '<b>alert</b>', {now})"
        for n in (41, 42)
    ] + [
        "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin, label,"
        f" taken_by, taker_id, taken_at) VALUES ('k41', '{CHAT}', 41, 0, '4', '{ORIGIN}',"
        f" 'BACKEND-4A', '@ada', 7, {now})",
        "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin, label,"
        " choosing) VALUES"
        f" ('k42', '{CHAT}', 42, 0, '5', '{ORIGIN}', 'BACKEND-5A', {true}),"
        f" ('k43', '{CHAT}', 42, 1, '6', '{ORIGIN}', 'BACKEND-6A', {false})",
        "UPDATE issue_buttons SET status = 'ignored', snooze = '{\"until\": 2000000000}'"
        " WHERE key = 'k43'",
    ]
    where = (
        str(tmp_path / "spool.sqlite3") if kind == "sqlite" else request.getfixturevalue("pg_url")
    )
    store = upgraded_from(kind, where, 28, made)
    try:
        spool = on_store(store)
        sent = cards_of(spool)
        message = sent.message(CHAT, 41)
        assert message is not None
        [button] = message.buttons
        assert (taker(button), taker_id(button)) == ("@ada", 7)
        assert button.marks[0].at == pytest.approx(now, abs=5)
        choosing, ignored = sent.message(CHAT, 42).buttons  # type: ignore[union-attr]
        assert (taker(choosing), choosing.choosing, choosing.snooze) == (None, True, None)
        assert (ignored.status, ignored.choosing) == ("ignored", False)
        assert ignored.snooze == {"until": 2_000_000_000}
        columns = store.read(lambda tx: tx.one("SELECT * FROM issue_buttons WHERE key = 'k41'"))
        assert not {"taken_by", "choosing", "snooze"} & set(dict(columns))
        assert let_go(spool, "k41", by_id=7, at=fake_time()) == [41]
        assert takers(sent, 41) == [None]
    finally:
        store.close()


def test_a_take_is_forgotten_with_its_card_and_the_reports_takes_once_old(
    tmp_path: Path, fake_time: FakeTime
) -> None:
    """The cards forget old messages' rows; the takes forget theirs with them (told through
    `RowMarks.forget`), and the takes kept for the report from before then."""
    spool = on_store(Database(str(tmp_path / "spool.sqlite3")))
    sent = cards_of(spool)
    old, new = fake_time(), fake_time() + 100
    sent.keep(replace(card(41, "k41"), sent_at=old), [])
    assert take(spool, "k41", by="@ada", by_id=7, at=old) == [41]
    sent.keep(replace(card(42, "k42"), sent_at=new), [])  # carried on: the issue is open
    assert takers(sent, 42) == ["@ada"]
    count = "SELECT (SELECT count(*) FROM issue_takes) AS now, (SELECT count(*) FROM takes) AS kept"
    rows = spool.of(lambda store: store)
    before = rows.read(lambda tx: tx.one(count))
    assert (before["now"], before["kept"]) == (2, 1)
    assert sent.prune(before=old + 50) == 1
    after = rows.read(lambda tx: tx.one(count))
    assert (after["now"], after["kept"]) == (1, 0)  # the newer card's take stays
    assert takers(sent, 41, 42) == ["gone", "@ada"]
