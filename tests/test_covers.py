"""Covers (oncall/covers.py, routes/rotation.py's Roster): someone on duty in a rotation for a
while, whoever it says; the later made holds where two overlap, and a swap is two covers. Kept in
the spool for every relay (SQLite and PostgreSQL alike), made from the chat (`/cover`) by someone
allowed to act and from the command line, refused with the reason; applied to `oncall:NAME` in
an alert's mention and an escalation's call from the moment each starts; shown by `/oncall`,
`relay-app oncall` and a handoff's message."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relay_app import Relay
from relay_app.cli import main
from relay_app.core.routing import Destination
from relay_app.delivery.mentions import OnCall
from relay_app.delivery.render import Added, Renderer, ReplyUnder, Send, Shape
from relay_app.message.formatting import Message
from relay_app.oncall.covers import AskedCover, CoverStore, KeptCovers, Refused, checked_cover
from relay_app.oncall.handoff_text import handoff_message
from relay_app.routes import parse_routes
from relay_app.routes.rotation import Cover, Roster
from relay_app.spool import open_memory
from relay_app.spool.model import Job, NewJob, Precedence
from relay_app.spool.store import Store
from relay_app.words import ENGLISH, RUSSIAN, Said
from tests.conftest import CHAT_ID, ROUTE_SOURCES, SOURCES, FakeTime
from tests.in_process import Chat, ScriptedTelegram
from tests.payloads import issue, issue_alert
from tests.test_commands import command

MOSCOW = ZoneInfo("Europe/Moscow")
HERE = Destination(CHAT_ID)
ROUTES = """
[[rotation]]
name = "payments"
people = ["@anna_ops", "@boris_ops", "@vera_lead"]
every = "1w"
start = "2026-01-05T09:00"
timezone = "Europe/Moscow"

[[route]]
name = "payments"
chat = "-1002000000001"
mention = ["oncall:payments"]
escalate = [{ after = "10m", mention = ["oncall:payments"] }]
"""
TABLE = parse_routes(ROUTES, "r.toml", ROUTE_SOURCES)


def at(wall: str) -> float:
    """A wall-clock time in Moscow, as a Unix time."""
    return datetime.fromisoformat(wall).replace(tzinfo=MOSCOW).timestamp()


# Monday 7 December 2026 09:00 MSK: Anna's week begins (the rotation's 49th turn).
ANNA_WEEK = at("2026-12-07T09:00")


def roster(*covers: Cover) -> Roster:
    return Roster(TABLE.on_call, MOSCOW, lambda now: [c for c in covers if c.ends_at > now])


def test_a_cover_puts_someone_on_duty_for_its_interval_and_says_whose_turn_it_takes() -> None:
    thursday = Cover(1, "payments", "@boris_ops", at("2026-12-10T09:00"), at("2026-12-11T09:00"))
    covered = roster(thursday)
    payments = covered.rotations["payments"]
    before = covered.on_duty(payments, at("2026-12-09T12:00"))
    assert (before.person, before.covering, before.next_person) == ("@anna_ops", None, "@boris_ops")
    assert before.until == datetime(2026, 12, 10, 9, 0, tzinfo=MOSCOW)  # the cover's start
    during = covered.on_duty(payments, at("2026-12-10T12:00"))
    assert (during.person, during.covering) == ("@boris_ops", "@anna_ops")
    assert during.until == datetime(2026, 12, 11, 9, 0, tzinfo=MOSCOW)
    assert during.next_person == "@anna_ops"  # her turn again once it ends
    assert covered.person("payments", at("2026-12-11T09:00")) == "@anna_ops"
    assert covered.person("nope", ANNA_WEEK) is None


def test_a_swap_is_two_covers_and_the_later_made_holds_where_two_overlap() -> None:
    # Anna and Boris swap weeks: Boris takes Anna's, Anna takes Boris's.
    boris_takes = Cover(1, "payments", "@boris_ops", ANNA_WEEK, ANNA_WEEK + 7 * 86400)
    anna_takes = Cover(2, "payments", "@anna_ops", ANNA_WEEK + 7 * 86400, ANNA_WEEK + 14 * 86400)
    # Then Vera covers one evening of it, made later: hers holds then.
    evening = Cover(3, "payments", "@vera_lead", at("2026-12-08T18:00"), at("2026-12-08T23:00"))
    swapped = roster(boris_takes, anna_takes, evening)
    assert swapped.person("payments", at("2026-12-08T12:00")) == "@boris_ops"
    assert swapped.person("payments", at("2026-12-08T19:00")) == "@vera_lead"
    assert swapped.person("payments", at("2026-12-08T23:00")) == "@boris_ops"
    assert swapped.person("payments", at("2026-12-15T12:00")) == "@anna_ops"
    assert swapped.person("payments", at("2026-12-21T12:00")) == "@vera_lead"  # her own week


@pytest.mark.parametrize(
    ("asked", "word"),
    [
        (AskedCover("nope", "@boris_ops", ANNA_WEEK, ANNA_WEEK + 3600, "x"), "cover_no_rotation"),
        (AskedCover("payments", "boris", ANNA_WEEK, ANNA_WEEK + 3600, "x"), "cover_no_person"),
        (AskedCover("payments", "@boris_ops", 0, ANNA_WEEK - 60, "x"), "cover_past"),
        (
            AskedCover("payments", "@boris_ops", ANNA_WEEK + 7200, ANNA_WEEK + 3600, "x"),
            "cover_backwards",
        ),
        (
            AskedCover("payments", "@boris_ops", ANNA_WEEK, ANNA_WEEK + 100 * 86400, "x"),
            "cover_too_long",
        ),
        # A user id past Telegram's 2^52 fits no column: refused here, never stored.
        (
            AskedCover("payments", "tg:99999999999999999999", ANNA_WEEK, ANNA_WEEK + 3600, "x"),
            "cover_no_person",
        ),
        # Its end would be in the year 10000, which no clock of the relay's can show.
        (
            AskedCover("payments", "@boris_ops", at("9998-12-30T10:00"), None, "x"),
            "cover_too_far",
        ),
        (
            AskedCover(
                "payments",
                "@boris_ops",
                at("9998-12-29T10:00"),
                at("9998-12-29T10:00") + 92 * 86400,
                "x",
            ),
            "cover_too_far",
        ),
    ],
)
def test_a_cover_that_cannot_hold_is_refused_with_why(asked: AskedCover, word: str) -> None:
    with pytest.raises(Refused) as refused:
        checked_cover(asked, roster(), ANNA_WEEK)
    assert refused.value.said.word == word
    assert refused.value.said.text(ENGLISH)  # every reason has its words
    assert refused.value.said.text(RUSSIAN)


def test_a_cover_begun_already_starts_now_and_one_without_an_end_lasts_the_turn() -> None:
    now = at("2026-12-09T12:00")
    kept = checked_cover(AskedCover("payments", "@boris_ops", now - 3600, None, "x"), roster(), now)
    assert (kept.starts_at, kept.until) == (now, at("2026-12-14T09:00"))


def test_covers_are_kept_for_every_relay_on_the_spool(two_stores: tuple[Store, Store]) -> None:
    mine, theirs = (CoverStore(store) for store in two_stores)
    now = ANNA_WEEK
    asked = AskedCover("payments", "@boris_ops", now + 3600, now + 7200, "@ada")
    made = mine.add(checked_cover(asked, roster(), now), now=now)
    old = mine.add(
        AskedCover("payments", "@vera_lead", now - 9 * 86400, now - 8 * 86400, "x"), now=now
    )
    [seen] = theirs.in_force(now=now)
    assert (seen.id, seen.person, seen.starts_at, seen.ends_at, seen.by) == (
        made.id,
        "@boris_ops",
        now + 3600,
        now + 7200,
        "@ada",
    )
    kept = KeptCovers(theirs, clock=lambda: now)
    assert [c.id for c in kept(now)] == [made.id]
    assert theirs.remove(made.id, now=now) == made
    assert theirs.remove(made.id, now=now) is None
    kept.changed()  # made or removed in this process: read again at once
    assert list(kept(now)) == []
    assert mine.tidy(now=now) == 1  # ended more than a week ago
    assert old.id not in [c.id for c in mine.in_force(now=now - 10 * 86400)]


def test_oncall_in_a_mention_and_a_call_is_whoever_covers_when_it_is_sent() -> None:
    evening = Cover(1, "payments", "@vera_lead", at("2026-12-08T18:00"), at("2026-12-08T23:00"))
    covered = roster(evening)
    on_call = OnCall(covered, covered.zone)
    renderer = Renderer(ENGLISH, late_after=60.0, on_call=on_call, sources=SOURCES)
    queue = open_memory().queue
    about = {"webhook": issue_alert(issue(1)), "mentions": ["oncall:payments"]}
    alert = queue.add(NewJob("alert", about, HERE, Precedence.ALERT), now=ANNA_WEEK)
    for moment, called in (
        (at("2026-12-08T17:59"), "@anna_ops"),
        (at("2026-12-08T18:00"), "@vera_lead"),
    ):
        write = renderer.write([alert], now=moment)
        assert isinstance(write, Send)
        assert write.text.endswith(f"🔔 For {called}")
    said = Said("escalation_call", {"minutes": "10", "people": "oncall:payments"})
    call = queue.add(
        NewJob(
            "reply",
            {"say": said.as_json(), "message_id": 5},
            HERE,
            Precedence.CALL,
            lane=HERE.message_lane(5),
        ),
        now=ANNA_WEEK,
    )
    reply = renderer.write([call], now=at("2026-12-08T19:00"))
    assert isinstance(reply, ReplyUnder)
    assert reply.text.endswith(": @vera_lead")


def test_an_alert_whose_calls_cannot_be_worked_out_goes_without_them_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cover or a name the spool holds that cannot be read (before: "Python int too large to
    convert to SQLite INTEGER", and every alert of the route a dead letter) costs the call,
    never the alert; a call's reply goes as written."""

    def unreadable(at: float) -> list[Cover]:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    on_call = OnCall(Roster(TABLE.on_call, MOSCOW, unreadable), MOSCOW)
    renderer = Renderer(ENGLISH, late_after=60.0, on_call=on_call, sources=SOURCES)
    queue = open_memory().queue
    about = {"webhook": issue_alert(issue(1)), "mentions": ["oncall:payments", "@ada_ops"]}
    alert = queue.add(NewJob("alert", about, HERE, Precedence.ALERT), now=ANNA_WEEK)
    write = renderer.write([alert], now=ANNA_WEEK)
    assert isinstance(write, Send)
    assert write.text.endswith(
        "\n\n⚠️ Whom this alert calls could not be worked out: the relay's log says why."
    )
    assert write.text.startswith("🔴 GlitchTip Alert\n\nZeroDivisionError: division by zero #1")
    [logged] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert logged.getMessage() == (
        f"whom alert {alert.label} calls (oncall:payments, @ada_ops) could not be worked out:"
        " it goes without the call"
    )
    said = Said("escalation_call", {"minutes": "10", "people": "oncall:payments"})
    call = queue.add(
        NewJob("reply", {"say": said.as_json(), "message_id": 5}, HERE, Precedence.CALL),
        now=ANNA_WEEK,
    )
    reply = renderer.write([call], now=ANNA_WEEK)
    assert isinstance(reply, ReplyUnder)
    assert "oncall:payments" in reply.text


def test_a_job_that_cannot_be_rendered_is_said_in_the_log_as_it_is_kept() -> None:
    """Whatever fails while a job's words are made, the line that gives it up holds what it
    kept: the text is never lost to a bug."""

    def broken(job: Job, renderer: Renderer) -> Message:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    renderer = Renderer(
        ENGLISH, late_after=60.0, added=Added(shapes=(Shape("broken", broken),)), sources=SOURCES
    )
    queue = open_memory().queue
    about = {"broken": {"title": "Payments are down"}}
    job = queue.add(NewJob("alert", about, HERE, Precedence.ALERT), now=ANNA_WEEK)
    assert renderer.text_of(job, now=ANNA_WEEK) == (
        "(unreadable: Python int too large to convert to SQLite INTEGER;"
        ' as kept: {"broken": {"title": "Payments are down"}})'
    )


def test_a_handoff_says_whose_turn_a_cover_takes() -> None:
    about = {
        "rotation": "payments",
        "person": "@boris_ops",
        "next": "@anna_ops",
        "until": at("2026-12-11T09:00"),
        "zone": "Europe/Moscow",
        "covering": "@anna_ops",
    }
    message = handoff_message(about, ENGLISH)
    assert message.text == (
        "🔁 On-call handoff, payments: @boris_ops (covering @anna_ops) is on call until"
        " 11.12 09:00 (Europe/Moscow), then @anna_ops."
    )


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = at("2026-12-09T12:00")
    routes = parse_routes(
        ROUTES.replace('"-1002000000001"', f'"{CHAT_ID}"'), "r.toml", ROUTE_SOURCES
    )
    return Chat.of(built, fake_time, routes=routes, action_user_ids=frozenset({9, 10}))


def asked(text: str, update_id: int, *, by: int = 9) -> dict[str, Any]:
    """A command written by Bo (@bo_ops), or the person numbered `by`."""
    update = command(text, update_id, by=by)
    update["message"]["from"]["username"] = "bo_ops"
    return update


def said(chat: Chat) -> str:
    chat.settle()
    return chat.telegram.replies[-1][3]


def test_cover_from_the_chat_is_kept_and_oncall_shows_it(chat: Chat) -> None:
    chat.update(asked("/cover payments", 1))  # Bo (@bo_ops), allowed, covers himself
    assert said(chat) == (
        "🔁 @bo_ops covers payments from 09.12 12:00 MSK until 14.12 09:00 MSK,"
        " instead of @anna_ops."
    )
    chat.update(asked("/cover payments @vera_lead from 10.12 09:00 until 10.12 18:00", 2, by=10))
    assert said(chat).startswith(
        "🔁 @vera_lead covers payments from 10.12 09:00 MSK until 10.12 18:00"
    )
    chat.clock.now += 5
    chat.update(command("/oncall", 3))
    assert said(chat).split("\n") == [
        "👥 On call:",
        "payments: @bo_ops (covering @anna_ops) until 10.12 09:00 MSK, then @vera_lead",
        "Covers to come:",
        "payments: @vera_lead from 10.12 09:00 MSK until 10.12 18:00 MSK",
    ]
    assert chat.relay.spool is not None
    assert [c.person for c in chat.relay.spool.of(CoverStore).in_force(now=chat.clock.now)] == [
        "@bo_ops",
        "@vera_lead",
    ]


@pytest.mark.parametrize(
    ("text", "by", "answer"),
    [
        ("/cover payments", 11, "Only people allowed to act on alerts may change who is on call."),
        ("/cover nights", 9, "There is no rotation nights: the routes file has payments."),
        ("/cover payments until yesterday", 9, "yesterday is not a time: write 18:00,"),
        ("/cover payments from 2026-01-01 09:00 until 2026-01-02 09:00", 9, "That time is over"),
        ("/cover", 9, "Write /cover ROTATION"),
        ("/cover payments tg:99999999999999999999 for 1h", 9, "tg:99999999999999999999 is neither"),
        ("/cover payments @anna_ops from 9999-11-29 10:00 for 92d", 9, "9999-11-29 10:00 is not"),
        (
            "/cover payments @anna_ops from 9998-12-30 10:00 for 92d",
            9,
            "A cover ends by 9998-12-31",
        ),
        ("/cover payments @anna_ops from 9999-12-31 10:00", 9, "9999-12-31 10:00 is not a time"),
        ("/cover payments @anna_ops for 99999999w", 9, "99999999w is not a time"),
    ],
)
def test_cover_from_the_chat_is_refused_with_why(
    chat: Chat, text: str, by: int, answer: str
) -> None:
    chat.update(asked(text, 1, by=by))
    assert said(chat).startswith(answer)
    assert chat.relay.spool is not None
    assert chat.relay.spool.of(CoverStore).in_force(now=chat.clock.now) == []


def test_relay_app_oncall_cover_keeps_lists_and_removes_covers(
    tmp_path: Path, built: Callable[..., Relay], spool_path: str, fake_time: FakeTime
) -> None:
    fake_time.now = time.time()
    service = built(ScriptedTelegram(clock=fake_time))
    assert service.spool is not None
    assert service.spool.of(CoverStore).in_force(now=fake_time.now) == []  # made by the service
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    environ = {
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": spool_path,
        "TELEGRAM_CHAT_ID": "-1001",
    }

    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(["oncall", *args], environ=environ, out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    code, out, err = run(
        "cover", "payments", "@boris_ops", "--from", "2030-01-07 09:00", "--for", "1d"
    )
    assert code == 0, err
    assert out.startswith("cover 1: @boris_ops is on call in payments from 2030-01-07 09:00 MSK")
    code, out, _ = run("--at", "2030-01-07T10:00+03:00")
    assert "@boris_ops (covering" in out.split("\n")[1]
    code, out, _ = run("cover", "--list")
    assert out.split("\n")[1].split()[:3] == ["1", "payments", "@boris_ops"]
    code, _, err = run("cover", "nights", "@boris_ops", "--for", "1h")
    assert (code, err.strip()) == (
        1,
        "relay-app: error: There is no rotation nights: the routes file has payments.",
    )
    assert run("cover", "--remove", "1")[:2] == (0, "cover 1 removed: @boris_ops in payments\n")
    assert run("cover", "--remove", "1")[0] == 1
    assert "(covering" not in run("--at", "2030-01-07T10:00+03:00")[1]


def test_routes_test_says_who_a_webhook_calls_at_a_moment_and_its_steps(
    tmp_path: Path, built: Callable[..., Relay], spool_path: str, fake_time: FakeTime
) -> None:
    fake_time.now = time.time()
    service = built(ScriptedTelegram(clock=fake_time))
    assert service.spool is not None
    # Tuesday 8 January 2030 is in Vera's week; Anna covers its evening.
    start, end = at("2030-01-08T18:00"), at("2030-01-08T23:00")
    evening = AskedCover("payments", "@anna_ops", start, end, "x")
    service.spool.of(CoverStore).add(evening, now=fake_time.now)
    routes = tmp_path / "routes.toml"
    routes.write_text(
        ROUTES.replace('escalate = [{ after = "10m", mention = ["oncall:payments"] }]', "")
        + 'quiet_hours = "22:00-08:00"\nloud_levels = ["fatal"]\ntimezone = "Europe/Moscow"\n'
        'escalate = [{ after = "10m", mention = ["oncall:payments"], direct = true }]\n'
    )
    hook = tmp_path / "hook.json"
    hook.write_text(json.dumps(issue_alert(issue(1, color="#4b60b4"))))  # info: quiet at night
    environ = {
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": spool_path,
        "TELEGRAM_CHAT_ID": "-1001",
        "RELAY_TIMEZONE": "Europe/Moscow",
    }

    def test_at(moment: str) -> list[str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["routes", "test", str(hook), "--at", moment], environ=environ, out=out, err=err
        )
        assert code == 0, err.getvalue()
        return out.getvalue().split("\n")

    assert test_at("2030-01-08T22:55") == [
        "at 2030-01-08 22:55 MSK:",
        "chat -1002000000001: route 1 “payments”",
        "  BACKEND-1A ZeroDivisionError: division by zero #1",
        "  calls @anna_ops (oncall:payments, covering @vera_lead)",
        "  without sound (without sound 22:00-08:00 (Europe/Moscow) but fatal)",
        "  after 10m (2030-01-08 23:05 MSK) if nobody acts: @vera_lead (oncall:payments),"
        " privately too",
        "nothing was sent",
        "",
    ]
    assert test_at("2030-01-08T12:00")[3:5] == ["  calls @vera_lead (oncall:payments)", "  rings"]


def test_an_answer_never_turns_what_someone_typed_into_a_call(chat: Chat) -> None:
    chat.update(asked("/cover payments until tg:123456789", 1))
    assert said(chat) == (
        "tg:123456789 is not a time: write 18:00, 10.12 18:00, 2026-12-10 18:00, or for 2h."
    )
    assert chat.telegram.replies_html[-1] is None  # plain text: nobody is notified


def test_a_kept_cover_that_cannot_be_read_is_left_out_named_once_and_removable(
    chat: Chat, caplog: pytest.LogCaptureFixture
) -> None:
    """Kept by an older relay, or by hand: a person past Telegram's range, an end in the year
    10000. Neither stops /oncall, the command line or an alert; each is named at ERROR once,
    with the command that removes it."""
    assert chat.relay.spool is not None
    store = chat.relay.spool.of(CoverStore)
    now = chat.clock.now
    good = store.add(AskedCover("payments", "@vera_lead", now, now + 3600, "x"), now=now)
    huge = store.add(
        AskedCover("payments", "tg:99999999999999999999", now, now + 3600, "x"), now=now
    )
    far = store.add(
        AskedCover("payments", "@anna_ops", now, 253_402_300_800.0 + 86400, "x"), now=now
    )
    for _ in range(2):
        assert [c.id for c in store.in_force(now=now)] == [good.id]
    named = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert named == [
        f"cover {cover} in the spool cannot be read (its person or its times are out of range):"
        " it is left out, and nobody is on duty by it. Remove it with"
        f" 'relay-app oncall cover --remove {cover}'"
        for cover in (huge.id, far.id)
    ]
    chat.clock.now += 5
    chat.update(command("/oncall", 3))
    assert said(chat).split("\n")[1].startswith("payments: @vera_lead (covering @anna_ops)")
    removed = store.remove(far.id, now=now)
    assert removed is not None
    assert removed.person == "@anna_ops"
