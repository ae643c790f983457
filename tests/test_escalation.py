"""Nobody misses it: "On it" on a card, a route's escalation steps kept as timers in the spool
and fired once each when nobody acts (a reply under the alert naming the step's people), and
stopped by On it, Resolve or Mute. The relay as a whole against the scripted Telegram, on the
test's clock; the steps' timers on SQLite and PostgreSQL alike."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import responses

from relay_app import Relay
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.sent import SentStore
from relay_app.cli import main
from relay_app.oncall.people import Met, PeopleStore
from relay_app.oncall.steps_store import EscalationStore, Fired
from relay_app.routes import RoutesError, parse_routes
from relay_app.routes.steps import Step
from relay_app.silences.buttons import MUTE
from relay_app.spool import on_store
from relay_app.spool.store import Store
from relay_app.takes.buttons import TAKE
from tests.conftest import ROUTE_SOURCES, FakeTime
from tests.in_process import GLITCHTIP, Chat, escalation_of
from tests.in_process import press_by_ada as press
from tests.prometheus import parse, value
from tests.taking import take, taker

CHAT = "-1001234567890"
SENT_AT = 1_800_000_000.0
SENT = SentMessage(
    CHAT,
    41,
    "<b>🔴 GlitchTip Alert</b>",
    SENT_AT,
    buttons=(IssueButton("the-key", "4", GLITCHTIP, "BACKEND-4A"),),
)
LEAD, CTO = Step(600.0, ("@lead",)), Step(1800.0, ("@cto_ivan", "tg:42"))
# The same issue on a later message of the chat (an escalating re-post).
AGAIN = SentMessage(
    CHAT,
    43,
    "<b>📈 Escalating</b>",
    SENT_AT + 100,
    buttons=(IssueButton("again-key", "4", GLITCHTIP, "BACKEND-4A"),),
)


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    """The relay with the card it sent at SENT_AT, its two steps planned, at 08:04 UTC."""
    fake_time.now = SENT_AT + 240
    chat = Chat.of(built, fake_time, SENT)
    assert chat.relay.spool is not None
    chat.relay.spool.of(EscalationStore).plan(CHAT, 7, 41, SENT_AT, [LEAD, CTO])
    return chat


def fire(chat: Chat, at: float) -> tuple[int, int]:
    """The dispatcher's upkeep at `at`, then what it queued sent."""
    chat.clock.now = at
    done = escalation_of(chat.relay).fire_due()
    chat.settle()
    return done.fired, done.stopped


def test_each_step_calls_its_people_under_the_alert_once_when_nobody_acts(chat: Chat) -> None:
    assert fire(chat, SENT_AT + 599) == (0, 0)
    assert fire(chat, SENT_AT + 600) == (1, 0)
    assert chat.telegram.replies == [
        (CHAT, 7, 41, "⏰ Nobody has taken this alert in 10 min: @lead")
    ]
    assert chat.telegram.replies_silent == [False]  # a call rings: it calls people
    assert fire(chat, SENT_AT + 900) == (0, 0)  # fired once
    assert fire(chat, SENT_AT + 1800) == (1, 0)
    # Someone without a username is called by a link Telegram notifies, by name once met.
    assert chat.telegram.replies[-1][3] == (
        "⏰ Nobody has taken this alert in 30 min: @cto_ivan user 42"
    )
    assert chat.telegram.replies_html[-1] == (
        '⏰ Nobody has taken this alert in 30 min: @cto_ivan <a href="tg://user?id=42">user 42</a>'
    )
    assert chat.relay.spool is not None
    chat.relay.spool.of(PeopleStore).seen(Met(42, None, "Ivan <b>Petrov</b>"), now=SENT_AT)
    chat.relay.spool.of(EscalationStore).plan(CHAT, 7, 44, SENT_AT, [CTO])
    assert fire(chat, SENT_AT + 1801) == (1, 0)  # another alert's call, once he was met
    assert chat.telegram.replies_html[-1] == (
        "⏰ Nobody has taken this alert in 30 min: @cto_ivan"
        ' <a href="tg://user?id=42">Ivan &lt;b&gt;Petrov&lt;/b&gt;</a>'
    )
    assert chat.telegram.replies[-1][3].endswith("@cto_ivan Ivan <b>Petrov</b>")
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_escalation_steps_total", outcome="fired") == 3


def test_on_it_says_who_has_it_on_the_card_and_stops_the_calls(chat: Chat) -> None:
    chat.update(press(callback_data(TAKE, "the-key"), 1))
    assert chat.answered() == [
        ("You are on BACKEND-4A: the chat sees it, and nobody else is called", False)
    ]
    chat.settle()
    [(_, _, html_text, keyboard)] = chat.telegram.edits
    assert html_text.endswith("👀 @ada is on it since 08:04 UTC")
    assert keyboard is not None
    labels = [button["text"] for row in keyboard["inline_keyboard"] for button in row]
    # Nobody else takes it; its taker may let it go.
    assert labels == ["↩️ Let go", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]
    assert taker(chat.store.message(CHAT, 41).buttons[0]) == "@ada"  # type: ignore[union-attr]
    assert fire(chat, SENT_AT + 3600) == (0, 0)  # both steps stopped at the press
    assert chat.telegram.replies == []
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_escalation_steps_total", outcome="stopped") == 2
    assert value(samples, "relay_button_presses_total", outcome="taken") == 1
    # A second press on it finds it taken: nothing changes.
    chat.update(press(callback_data(TAKE, "the-key"), 2))
    assert chat.answered()[-1][1] is True


def test_resolve_stops_the_calls_and_so_does_an_act_recorded_by_another_relay(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip.put(f"{GLITCHTIP}/api/0/issues/4/", json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "the-key"), 3))
    assert fire(chat, SENT_AT + 3600) == (0, 0)
    assert chat.telegram.replies == []


def test_mute_stops_the_calls(chat: Chat) -> None:
    chat.update(press(callback_data(MUTE, "the-key"), 4))
    assert fire(chat, SENT_AT + 3600) == (0, 0)
    assert chat.telegram.replies == []


def test_a_step_fires_once_across_relays_and_an_act_found_at_its_time_stops_it(
    two_stores: tuple[Store, Store],
) -> None:
    first, second = (EscalationStore(store, REGISTRY.marks) for store in two_stores)
    first.plan(CHAT, None, 41, SENT_AT, [LEAD, CTO])
    first.plan(CHAT, None, 41, SENT_AT, [LEAD, CTO])  # planned again: nothing twice
    fired = [store.fire_due(now=SENT_AT + 600).fired for store in (first, second)]
    assert sorted(fired) == [0, 1]
    replies = two_stores[0].read(lambda tx: tx.all("SELECT data FROM jobs WHERE kind = 'reply'"))
    assert [json.loads(row["data"])["say"]["values"]["people"] for row in replies] == ["@lead"]
    # The card was acted on (On it, by another relay's press) before the second step's time.
    spool = on_store(two_stores[1])
    spool.of(SentStore).keep(SENT, [])
    assert take(spool, "the-key", by="@ada", by_id=4242, at=SENT_AT + 700)
    assert second.fire_due(now=SENT_AT + 1800) == Fired(0, 1)


def test_escalate_is_read_with_its_repeats_spelt_out() -> None:
    table = parse_routes(
        """
[[route]]
project = "payments"
escalate = [
  { after = "10m", mention = ["@lead"] },
  { after = "30m", mention = ["@cto_ivan"], repeat = 2, every = "1h" },
]
""",
        "x.toml",
        ROUTE_SOURCES,
    )
    assert table.routes[0].escalate == (
        Step(600.0, ("@lead",)),
        Step(1800.0, ("@cto_ivan",)),
        Step(5400.0, ("@cto_ivan",)),
        Step(9000.0, ("@cto_ivan",)),
    )


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        ('[{ after = "10", mention = ["@lead"] }]', 'step 1: after must be like "10m"'),
        ('[{ after = "10m" }]', "step 1: mention names nobody to call"),
        ('[{ after = "10m", mention = ["lead"] }]', "a step's 'lead' is neither @username"),
        (
            '[{ after = "30m", mention = ["@anna"] }, { after = "10m", mention = ["@boris"] }]',
            "each step's after must be later than the one before",
        ),
        ('[{ after = "10m", mention = ["@anna"], repeat = 0, every = "1h" }]', "repeat must be"),
        ('[{ after = "10m", mention = ["@anna"], whom = 1 }]', "step 1: unknown key 'whom'"),
        ('"10m"', "must be a list of steps"),
    ],
)
def test_escalate_that_cannot_be_used_is_refused_naming_the_step(steps: str, said: str) -> None:
    with pytest.raises(RoutesError, match=said):
        parse_routes(f"[[route]]\nchat = -1001\nescalate = {steps}\n", "x.toml", ROUTE_SOURCES)


def test_the_on_call_guide_s_routes_read_as_written_and_routes_check_says_them(
    tmp_path: Path,
) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "oncall.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", guide, re.DOTALL)
    assert len(blocks) == 6
    for block in blocks:
        parse_routes(block, "oncall.md", ROUTE_SOURCES)  # raises on anything the relay would refuse
    team = tmp_path / "routes.toml"
    [example] = [block for block in blocks if 'report = "monday"' in block]  # the team of three
    team.write_text(example)
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["routes", "check", str(team)],
        environ={"TELEGRAM_CHAT_ID": CHAT},
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    assert out.getvalue().startswith(
        "rotation “payments”: @anna_ops, @boris_ops, @vera_lead in turn, 1w each from "
        "2026-01-05 09:00 (Europe/Moscow)"
    )
    assert (
        "chat -1002000000001, calling oncall:payments, without sound 22:00-08:00 "
        "(Europe/Moscow) but fatal, privately oncall:payments as it is delivered, then "
        "oncall:payments after 10m if nobody acts (privately too), then @vera_lead after 30m if "
        "nobody acts (privately too), then @vera_lead after 1h if nobody acts (privately too), "
        "then @vera_lead after 90m if nobody acts (privately too), a taker called again after "
        "1h, a daily summary at 09:00 (Europe/Moscow), with the week's report on mondays"
    ) in out.getvalue()


DIGEST = SentMessage(
    CHAT,
    42,
    "<b>🗂 2 alerts</b>",
    SENT_AT,
    buttons=(
        IssueButton("key-5", "5", GLITCHTIP, "BACKEND-5A"),
        IssueButton("key-6", "6", GLITCHTIP, "BACKEND-6A"),
    ),
)


def test_calls_follow_issues_one_resolved_of_a_digest_leaves_the_other_called_by_name(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    fake_time.now = SENT_AT + 240
    chat = Chat.of(built, fake_time, DIGEST)
    assert chat.relay.spool is not None
    chat.relay.spool.of(EscalationStore).plan(CHAT, None, 42, SENT_AT, [LEAD, CTO])
    glitchtip.put(f"{GLITCHTIP}/api/0/issues/5/", json={"id": "5", "status": "resolved"})
    chat.update(press(callback_data("resolve", "key-5"), 11, message_id=42))
    assert fire(chat, SENT_AT + 600) == (1, 0)  # BACKEND-6A is still nobody's
    assert chat.telegram.replies[-1][3] == "⏰ Nobody has taken BACKEND-6A in 10 min: @lead"
    chat.update(press(callback_data(TAKE, "key-6"), 12, message_id=42))
    # Each issue taken or closed: the press stopped the calls left.
    assert fire(chat, SENT_AT + 1800) == (0, 0)
    assert len(chat.telegram.replies) == 1


def test_on_it_is_the_issues_on_every_message_of_the_chat_that_shows_it(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    """The same issue on its first card and on a later message (an escalating re-post, a
    link's card): On it on one is On it on both, and the other's calls stop too."""
    fake_time.now = SENT_AT + 240
    chat = Chat.of(built, fake_time, SENT, AGAIN)
    assert chat.relay.spool is not None
    chat.relay.spool.of(EscalationStore).plan(CHAT, None, 41, SENT_AT, [LEAD])
    chat.relay.spool.of(EscalationStore).plan(CHAT, None, 43, SENT_AT + 100, [LEAD])
    chat.update(press(callback_data(TAKE, "again-key"), 13, message_id=43))
    chat.settle()
    edited = {message_id: html for _, message_id, html, _ in chat.telegram.edits}
    assert sorted(edited) == [41, 43]
    assert all(html.endswith("👀 @ada is on it since 08:04 UTC") for html in edited.values())
    for _, _, _, keyboard in chat.telegram.edits:
        assert "👀 On it" not in json.dumps(keyboard, ensure_ascii=False)
    assert fire(chat, SENT_AT + 3600) == (0, 0)  # both stopped at the press
    assert chat.telegram.replies == []
    # On it pressed on the first card after: the issue is someone's already.
    chat.update(press(callback_data(TAKE, "the-key"), 14))
    assert chat.answered()[-1][1] is True  # said as an alert: out of date


def test_resolve_on_one_message_of_the_issue_shows_on_every_message_and_stops_their_calls(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    fake_time.now = SENT_AT + 240
    chat = Chat.of(built, fake_time, SENT, AGAIN)
    assert chat.relay.spool is not None
    chat.relay.spool.of(EscalationStore).plan(CHAT, None, 41, SENT_AT, [LEAD])
    glitchtip.put(f"{GLITCHTIP}/api/0/issues/4/", json={"id": "4", "status": "resolved"})
    chat.update(press(callback_data("resolve", "again-key"), 15, message_id=43))
    chat.settle()
    edited = {message_id: html for _, message_id, html, _ in chat.telegram.edits}
    assert sorted(edited) == [41, 43]
    assert all(html.endswith("✅ Resolved by @ada at 08:04 UTC") for html in edited.values())
    assert fire(chat, SENT_AT + 3600) == (0, 0)  # the first card's calls stopped at the press
    assert len(glitchtip.calls) == 1  # GlitchTip changed once
