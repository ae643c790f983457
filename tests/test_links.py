"""Links answered (chat/links.py): a link to a GlitchTip issue pasted in a chat the relay
serves gets that issue's card with its buttons, in reply, once per issue per chat in 10
minutes, each linked issue a card of its own; a link elsewhere, in a chat the relay does not
serve, or in a comment on an alert gets nothing. A chat sees its own issues (chat/scope.py):
an issue of another organization, one the path's organization does not hold, or one the
routes send elsewhere gets one short word and no card. The look-ups run off the thread that
reads the updates. The relay as a whole against the scripted Telegram, GlitchTip's HTTP layer
mocked by `responses`, on the test's clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import responses
from requests import PreparedRequest

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.sent import SentStore
from relay_app.chat.link_card import link_card_data, link_card_line
from relay_app.chat.links import LINK_WINDOW, linked_issue
from relay_app.chat.scope import facts_of
from relay_app.glitchtip.source import GLITCHTIP as GLITCHTIP_SOURCE
from relay_app.routes import parse_routes
from relay_app.sentry.source import SENTRY
from relay_app.takes.buttons import TAKE
from relay_app.watch.store import Seen, Watched, WatchStore
from relay_app.words import ENGLISH
from tests.conftest import CHAT_ID, ROUTE_SOURCES, FakeTime
from tests.in_process import GLITCHTIP, GLITCHTIP_ON, Chat, alone
from tests.prometheus import parse, value
from tests.taking import take

CHAT = str(CHAT_ID)
FRONTEND_CHAT = "-1005555555555"
NOW = 1_800_000_000.0
LINK = f"{GLITCHTIP}/acme/issues/4"
NOT_FOLLOWED = "🔒 Not an issue this chat follows."


def issue_answer(
    number: int, *, title: str = "ZeroDivisionError: division by zero"
) -> dict[str, Any]:
    return {
        "id": str(number),
        "shortId": f"BACKEND-{number}A",
        "title": title,
        "culprit": "shop.cart in total",
        "status": "unresolved",
        "level": "error",
        "count": "120",
        "project": {"slug": "backend", "name": "backend"},
    }


def glitchtip_has(
    mock: responses.RequestsMock,
    number: int,
    *,
    org: str = "acme",
    environment: str = "production",
    **issue: Any,
) -> None:
    """GlitchTip's answers about issue `number` of `org`: the organization's list holds it,
    the issue, and its latest event's tags."""
    mock.get(
        f"{GLITCHTIP}/api/0/organizations/{org}/issues/?id={number}",
        json=[{"id": str(number), "status": "unresolved", "count": "120"}],
    )
    mock.get(f"{GLITCHTIP}/api/0/issues/{number}/", json=issue_answer(number, **issue))
    tags = [{"key": "environment", "value": environment}, {"key": "user.email", "value": "x@y"}]
    mock.get(f"{GLITCHTIP}/api/0/issues/{number}/events/latest/", json={"tags": tags})


def message(
    text: str, update_id: int, chat: str = CHAT, *, by: int = 9, **more: Any
) -> dict[str, Any]:
    """A message as Telegram delivers it, written by Bo (or the person numbered `by`)."""
    return {
        "update_id": update_id,
        "message": {
            "message_id": 700 + update_id,
            "from": {"id": by, "is_bot": False, "first_name": "Bo"},
            "chat": {"id": int(chat), "type": "supergroup"},
            "text": text,
            **more,
        },
    }


def alerted_on(chat: Chat, number: int, where: str = CHAT, org: str = "acme") -> None:
    """The relay alerted on issue `number` in `where`: the watcher keeps it, and GlitchTip's
    answer to its round showed the issue is `org`'s."""
    assert chat.relay.spool is not None
    watched = chat.relay.spool.of(WatchStore)
    watched.watch([Watched(str(number), org, alone(number, "Seen"), where, None)], now=NOW)
    watched.seen({str(number): Seen("unresolved", 3, (0,) * 24)}, now=NOW)


@pytest.fixture
def chat(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> Chat:
    fake_time.now = NOW
    glitchtip_has(glitchtip, 4)
    chat = Chat.of(built, fake_time)
    alerted_on(chat, 1)  # GlitchTip sends the relay alerts of organization acme
    return chat


def cards(chat: Chat) -> list[Any]:
    chat.settle()
    return chat.telegram.delivered


def said(chat: Chat) -> list[str]:
    chat.settle()
    return [text for _, _, _, text in chat.telegram.replies]


def samples(chat: Chat) -> dict[Any, float]:
    return parse(chat.relay.metrics.exposition().decode())


def test_a_link_to_an_issue_gets_its_card_with_buttons_in_reply(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    chat.update(message(f"what is this? {LINK} it broke checkout", 1))
    [card] = cards(chat)
    lines = card.text.split("\n")
    assert lines[0] == "🔗 BACKEND-4A · unresolved · seen 120 times"
    assert "ZeroDivisionError: division by zero" in lines
    assert card.reply_to == 701
    # GLITCHTIP_URL's: the issue asked for among the link's organization's, then read.
    assert [call.request.url for call in glitchtip.calls] == [
        f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=4",
        f"{GLITCHTIP}/api/0/issues/4/",
        f"{GLITCHTIP}/api/0/issues/4/events/latest/",
    ]
    assert chat.relay.spool is not None
    kept = chat.relay.spool.of(SentStore).message(CHAT, 1)
    assert kept is not None
    assert [(b.issue_id, b.label) for b in kept.buttons] == [("4", "BACKEND-4A")]


def test_a_links_card_of_an_issue_someone_has_says_who_and_offers_no_on_it(chat: Chat) -> None:
    """An issue is one thing in the chat: its first card was taken (On it), so the card a
    pasted link gets says who has it and offers On it no more."""
    first = SentMessage(
        CHAT,
        41,
        "<b>🔴 GlitchTip Alert</b>",
        NOW - 600,
        buttons=(IssueButton("first-key", "4", GLITCHTIP, "BACKEND-4A"),),
    )
    store = chat.store
    store.keep(first, [])
    assert take(chat.relay.spool, "first-key", by="@ada", by_id=4242, at=NOW - 300) == [41]
    chat.update(message(f"who has this? {LINK}", 1))
    [card] = cards(chat)
    assert card.text.startswith("🔗 BACKEND-4A · unresolved")
    chat.settle()
    [(_, message_id, html_text, keyboard)] = chat.telegram.edits
    assert message_id == 1  # the link's card, as soon as it was sent
    assert html_text.endswith("👀 @ada is on it since 07:55 UTC")
    assert "👀 On it" not in json.dumps(keyboard, ensure_ascii=False)


def test_a_links_card_of_a_resolved_issue_offers_reopen(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    """One issue, one state: the card a link gets offers what the issue is now."""
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/9/", json={**issue_answer(9), "status": "resolved"})
    glitchtip.get(
        f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=9",
        json=[{"id": "9", "status": "resolved", "count": "120"}],
    )
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/9/events/latest/", json={"tags": []})
    alerted_on(chat, 9)
    chat.update(message(f"{GLITCHTIP}/acme/issues/9", 1))
    [card] = cards(chat)
    assert card.text.startswith("🔗 BACKEND-9A · resolved")
    [(_, message_id, _, keyboard)] = chat.telegram.edits  # its buttons follow at once
    labels = [b["text"] for row in keyboard["inline_keyboard"] for b in row]
    assert labels[0] == "↩️ Reopen"
    assert "✅ Resolve" not in labels
    kept = chat.store.message(CHAT, message_id)
    assert kept is not None
    assert [b.status for b in kept.buttons] == ["resolved"]


def test_a_link_again_within_ten_minutes_gets_no_second_card(chat: Chat) -> None:
    chat.update(message(LINK, 1))
    chat.update(message(f"again: {LINK}", 2, by=10))
    assert len(cards(chat)) == 1
    chat.clock.now = NOW + LINK_WINDOW + 1
    chat.update(message(LINK, 3))
    assert len(cards(chat)) == 2
    counted = samples(chat)
    assert value(counted, "relay_link_cards_total", outcome="posted") == 2
    assert value(counted, "relay_link_cards_total", outcome="repeated") == 1


def test_links_elsewhere_in_other_chats_or_in_comments_get_nothing(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    chat.update(message("https://glitchtip.other.example/acme/issues/4", 1))
    chat.update(message(LINK, 2, chat="-1009999999999"))
    answering_the_bot = {"message_id": 41, "from": {"id": 1, "is_bot": True, "first_name": "R"}}
    chat.update(message(f"see {LINK}", 3, by=10, reply_to_message=answering_the_bot))
    assert cards(chat) == []
    assert [call.request.url for call in glitchtip.calls] == []  # GlitchTip was not asked


def test_three_links_in_one_message_get_a_card_each(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip_has(glitchtip, 5)
    glitchtip_has(glitchtip, 6)
    links = " ".join(f"{GLITCHTIP}/acme/issues/{n}" for n in (4, 5, 6))
    chat.update(message(f"these three: {links}", 1))
    sent = cards(chat)
    assert [card.text.split("\n")[0].split(" · ")[0] for card in sent] == [
        "🔗 BACKEND-4A",
        "🔗 BACKEND-5A",
        "🔗 BACKEND-6A",
    ]  # three messages, not one digest of "3 alerts"
    assert all(card.reply_to == 701 for card in sent)


def test_an_issue_of_an_organization_the_relay_has_no_alerts_of_gets_no_card(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip_has(glitchtip, 1002, org="secret", title="Payroll export failed for ACME-CFO")
    chat.update(message(f"{GLITCHTIP}/secret/issues/1002", 1))
    assert cards(chat) == []
    assert said(chat) == [NOT_FOLLOWED]  # no title, no buttons, nothing changed in GlitchTip
    assert "Payroll" not in " ".join(said(chat))
    assert value(samples(chat), "relay_link_cards_total", outcome="not_followed") == 1


def test_an_organization_a_webhooks_link_named_is_not_followed_until_the_tracker_says_so(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    """Anyone with GlitchTip's webhook URL may post an alert linking another organization's
    issue. Before, the chat then followed that organization: its links showed their titles.
    Now only the tracker's own answer (the watcher's round) makes an organization followed."""
    assert chat.relay.spool is not None
    forged = Watched("1001", "secret", alone(1001, "Forged"), CHAT, None)
    chat.relay.spool.of(WatchStore).watch([forged], now=NOW)  # a webhook's alert, unverified
    glitchtip_has(glitchtip, 1002, org="secret", title="Payroll export failed for ACME-CFO")
    chat.update(message(f"{GLITCHTIP}/secret/issues/1002", 1))
    assert cards(chat) == []
    assert said(chat) == [NOT_FOLLOWED]


def test_with_glitchtip_organizations_only_those_are_followed_whatever_was_alerted(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    fake_time.now = NOW
    only_acme = replace(GLITCHTIP_ON, organizations=frozenset({"acme"}))
    chat = Chat.of(built, fake_time, glitchtip=only_acme)
    alerted_on(chat, 1002, org="secret")  # even alerted here, and shown by the tracker
    glitchtip_has(glitchtip, 1002, org="secret", title="Payroll export failed for ACME-CFO")
    chat.update(message(f"{GLITCHTIP}/secret/issues/1002", 1))
    assert cards(chat) == []
    assert said(chat) == [NOT_FOLLOWED]


def test_the_path_must_name_the_issues_own_organization(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    # Issue 1002 is secret's: acme's list does not hold it, whatever its id.
    glitchtip_has(glitchtip, 1002, org="secret")
    glitchtip.get(f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=1002", json=[])
    chat.update(message(f"{GLITCHTIP}/acme/issues/1002", 1))
    chat.update(message(f"{GLITCHTIP}/acme/issues/../../secret/issues/1002", 2, by=10))
    chat.update(message(f"{GLITCHTIP}/acme/issues/%2e%2e/1002", 3, by=11))
    assert cards(chat) == []
    assert said(chat) == [NOT_FOLLOWED]  # the first: asked of acme, which does not hold it
    asked = [call.request.url for call in glitchtip.calls]
    assert asked == [f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=1002"]
    assert value(samples(chat), "relay_link_cards_total", outcome="unreadable") == 2


def test_an_issue_the_routes_send_to_another_chat_gets_no_card_unless_alerted_here(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> None:
    fake_time.now = NOW
    routes = parse_routes(
        f'[[route]]\nproject = "frontend"\nchat = "{FRONTEND_CHAT}"\n'
        '[[route]]\nenvironment = "staging"\ndrop = true\n',
        "r.toml",
        ROUTE_SOURCES,
    )
    chat = Chat.of(built, fake_time, routes=routes)
    alerted_on(chat, 1)
    glitchtip_has(glitchtip, 4)  # backend's: the routes send it to the default chat
    glitchtip_has(glitchtip, 7, environment="staging")  # dropped: no chat follows it
    chat.update(message(LINK, 1, chat=FRONTEND_CHAT))
    chat.update(message(f"{GLITCHTIP}/acme/issues/7", 2))
    assert cards(chat) == []
    assert said(chat) == [NOT_FOLLOWED, NOT_FOLLOWED]
    # Alerted in the frontend chat (the webhook's URL named it): that chat follows it.
    alerted_on(chat, 4, where=FRONTEND_CHAT)
    chat.clock.now = NOW + LINK_WINDOW + 1
    chat.update(message(LINK, 3, chat=FRONTEND_CHAT))
    [card] = cards(chat)
    assert card.text.startswith("🔗 BACKEND-4A")


def test_a_link_cards_text_from_glitchtip_is_cleaned_as_a_webhooks_is(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    glitchtip_has(glitchtip, 8, title="Paid\u202e2202 \u200bevil\u2066")
    chat.update(message(f"{GLITCHTIP}/acme/issues/8", 1))
    [card] = cards(chat)
    assert "Paid2202 evil" in card.text
    assert not {"\u202e", "\u200b", "\u2066"} & set(card.text)


def test_a_flood_of_links_costs_a_persons_burst_and_a_line_a_minute(
    chat: Chat, glitchtip: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    for update in range(1, 51):
        chat.update(message(LINK, update))
    assert len(cards(chat)) == 1
    assert said(chat) == ["⏳ 3 answers in a row at most: ask again in 15 s."]  # told once
    assert len(glitchtip.calls) == 3  # one look-up: the same link again gets no second card
    assert value(samples(chat), "relay_answers_refused_total", reason="person") == 47
    refused = [r for r in caplog.records if "not answered since" in r.getMessage()]
    assert len(refused) == 1


def test_a_press_is_answered_while_glitchtip_hangs_on_a_links_look_up(
    built: Callable[..., Relay],
    fake_time: FakeTime,
    glitchtip: responses.RequestsMock,
) -> None:
    fake_time.now = NOW
    release = threading.Event()

    def held(request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        assert release.wait(timeout=10)
        return 200, {}, '[{"id": "4", "status": "unresolved", "count": "1"}]'

    glitchtip.add_callback(
        responses.GET, f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=4", callback=held
    )
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/4/", json=issue_answer(4))
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/4/events/latest/", json={})
    card = SentMessage(
        CHAT, 41, "<b>alert</b>", NOW, buttons=(IssueButton("k", "2", GLITCHTIP, "BACKEND-2A"),)
    )
    chat = Chat.of(built, fake_time, card)
    alerted_on(chat, 1)
    chat.update(message(LINK, 1))  # returns at once: the look-up waits off this thread
    chat.update(
        {
            "update_id": 2,
            "callback_query": {
                "id": "p2",
                "from": {"id": 7, "is_bot": False, "first_name": "Ada", "username": "ada"},
                "message": {"message_id": 41, "chat": {"id": CHAT_ID}},
                "data": callback_data(TAKE, "k"),
            },
        }
    )
    assert chat.answered() == [
        ("You are on BACKEND-2A: the chat sees it, and nobody else is called", False)
    ]
    assert chat.telegram.delivered == []  # the link's card is still being looked up
    release.set()
    [linked] = cards(chat)
    assert linked.text.startswith("🔗 BACKEND-4A")


@pytest.mark.parametrize(
    ("link", "found"),
    [
        (f"{GLITCHTIP}/acme/issues/4", ("acme", "4")),
        (f"{GLITCHTIP}/acme/issues/4/", ("acme", "4")),
        (f"{GLITCHTIP}/acme/issues/4?project=1#events", ("acme", "4")),
        (f"{GLITCHTIP}/glitchtip/acme/issues/4", ("acme", "4")),  # served under a path
        (f"{GLITCHTIP}/acme/issues/../../secret/issues/1002", None),
        (f"{GLITCHTIP}/acme/issues/./4", None),
        (f"{GLITCHTIP}/acme/issues/%34", None),
        (f"{GLITCHTIP}/acme//issues/4", None),
        (f"{GLITCHTIP}/acme/issues/4/events", None),
        (f"{GLITCHTIP}/issues/4", None),
        ("https://elsewhere.example/acme/issues/4", None),
    ],
)
def test_a_link_names_an_organization_and_issue_only_as_glitchtip_writes_them(
    link: str, found: tuple[str, str] | None
) -> None:
    linked = linked_issue(link, GLITCHTIP)
    assert (None if linked is None else (linked.org, linked.issue_id)) == found
    if linked is not None:
        assert "?" not in linked.link
        assert "#" not in linked.link


@pytest.mark.parametrize("count", ["²", "9" * 5000, None, -1])
def test_a_links_card_whose_count_is_no_count_says_so_and_is_made(count: object) -> None:
    """The same count from the tracker's API (before: the card was lost to a ValueError)."""
    about = link_card_data(
        {"id": "4", "shortId": "BACKEND-4A", "count": count}, "", source=GLITCHTIP_SOURCE
    )
    assert link_card_line(about, ENGLISH) == "🔗 BACKEND-4A · unresolved · seen ? times"


def test_a_sentry_projects_slug_is_what_its_webhooks_and_a_links_card_are_routed_by() -> None:
    """A Sentry project named otherwise than its slug: its webhooks name the slug, so a link's
    card is routed by the slug too (before: the card went by the name, and the chat that does
    not follow the project got it while the one that does got 🔒)."""
    issue = {"title": "x", "project": {"slug": "checkout-web", "name": "Checkout (web)"}}
    assert facts_of(issue, {}, source=SENTRY)["project"] == "checkout-web"
    # GlitchTip's webhook names its name
    assert facts_of(issue, {}, source=GLITCHTIP_SOURCE)["project"] == "Checkout (web)"
    # Each project named by the other field where the first is missing.
    assert facts_of({"project": {"slug": "web"}}, {}, source=GLITCHTIP_SOURCE)["project"] == "web"
    assert facts_of({"project": {"name": "Web"}}, {}, source=SENTRY)["project"] == "Web"
