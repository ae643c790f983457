"""The capability contract, proved by a capability added as a maintainer would add one
(tests/thanks/: its folder, its words, one line of a registry): its button on every card, its
press found by its registration and answered, its table made and kept, its counter, its kind of
write queued, paced and written in the chat's words. And the registry's own rules: one owner per
verb, code, table, kind and capability name, each capability asked once whether it is on, and
what a capability reads of the environment read with the relay's settings."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

import pytest
import responses

from relay_app import Relay, assemble
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import Button, callback_data
from relay_app.core.services import Lent
from relay_app.message.open_issues import CHAT_ISSUES
from relay_app.operating.capability import Capability, Registry
from relay_app.operating.config import ConfigError, Settings
from relay_app.operating.settings_of import SettingsOf
from relay_app.routes import parse_routes
from relay_app.silences.buttons import MUTE
from relay_app.spool.opening import open_memory
from relay_app.takes.buttons import TAKE
from relay_app.watch.store import WatchStore
from relay_app.words import ENGLISH
from tests.conftest import ROUTE_SOURCES, FakeTime, glitchtip_on
from tests.in_process import GLITCHTIP_ON, Chat, ScriptedTelegram
from tests.prometheus import parse, value
from tests.test_handoffs import ROUTES as HANDOFF_ROUTES
from tests.test_presses import ISSUE_URL, SENT, press
from tests.thanks import plugin as thanks

WITH_THANKS = Registry((*REGISTRY.capabilities, thanks.CAPABILITY), REGISTRY.sources_first)


@pytest.fixture
def chat_with(settings: Settings, fake_time: FakeTime) -> Iterator[Callable[..., Chat]]:
    relays: list[Relay] = []

    def build(registry: Registry = WITH_THANKS, **overrides: object) -> Chat:
        telegram = ScriptedTelegram(clock=fake_time)
        configured = replace(
            settings,
            theirs=glitchtip_on(GLITCHTIP_ON),
            details_budget=None,
            **overrides,  # type: ignore[arg-type]
        )
        relay = assemble(configured, clock=fake_time, telegram=telegram, capabilities=registry)
        relays.append(relay)
        chat = Chat(relay, telegram, fake_time)
        chat.store.keep(SENT, [])
        return chat

    yield build
    for relay in relays:
        relay.dispatcher.shutdown()


def test_a_capability_adds_a_button_a_press_a_table_a_counter_a_write_and_words(
    chat_with: Callable[..., Chat],
) -> None:
    chat = chat_with()
    chat.update(press(callback_data(thanks.THANKS, "the-key")))
    assert chat.answered() == [("Thanked", False)]
    chat.update(press(callback_data(thanks.THANKS, "the-key"), user_id=8))
    chat.settle()
    # Its kind of write, each in its turn under the card, in its own words.
    assert [(message_id, text) for _, _, message_id, text in chat.telegram.replies] == [
        (41, "🙏 @ada says thanks (1)"),
        (41, "🙏 @ada says thanks (2)"),
    ]
    found = parse(chat.relay.metrics.exposition().decode())
    assert value(found, "relay_thanks_total", outcome="said") == 2
    assert value(found, "relay_button_presses_total", outcome="thanked") == 2
    assert (
        value(found, "relay_chat_writes_total", job="thanks", result="delivered", error_code="")
        == 2
    )


def test_its_button_is_on_every_card_in_the_chats_language(
    chat_with: Callable[..., Chat],
) -> None:
    chat = chat_with(language="ru")
    chat.update(press(callback_data(MUTE, "the-key")))  # any edit shows the keyboard
    chat.settle()
    [*_, (_, _, _, keyboard)] = chat.telegram.edits
    assert keyboard is not None
    [row] = keyboard["inline_keyboard"]
    assert row[-1] == {"text": "🙏 Спасибо", "callback_data": "k:the-key"}


def test_without_the_capability_its_button_is_unknown_and_nothing_is_done(
    chat_with: Callable[..., Chat],
) -> None:
    chat = chat_with(REGISTRY)
    chat.update(press(callback_data(thanks.THANKS, "the-key")))
    assert chat.answered() == [(ENGLISH.press_unknown, True)]
    chat.settle()
    assert chat.telegram.replies == []


def test_a_capability_the_settings_turn_off_adds_no_button_and_answers_no_press(
    chat_with: Callable[..., Chat],
) -> None:
    off = replace(thanks.CAPABILITY, on=lambda settings: False)
    chat = chat_with(Registry((*REGISTRY.capabilities, off), REGISTRY.sources_first))
    chat.update(press(callback_data(thanks.THANKS, "the-key")))
    assert chat.answered() == [(ENGLISH.press_unknown, True)]  # not a button it offers
    chat.settle()
    assert chat.telegram.replies == []


def test_a_press_is_the_cores_and_acts_with_the_chat_capability_off(
    chat_with: Callable[..., Chat], glitchtip: responses.RequestsMock
) -> None:
    """The press dispatcher and the routing of Telegram's updates are the core's: without the
    chat capability (its replies, commands and links) a press still changes its issue."""
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    without_chat = Registry(
        tuple(c for c in REGISTRY.capabilities if c.name != "chat"), REGISTRY.sources_first
    )
    chat = chat_with(without_chat)
    chat.update(press(callback_data("resolve", "the-key")))
    assert chat.answered() == [("Resolved BACKEND-4A in GlitchTip", False)]
    assert len(glitchtip.calls) == 1


def test_on_it_is_a_plug_in_without_which_no_press_takes_and_the_core_acts_alone(
    chat_with: Callable[..., Chat], glitchtip: responses.RequestsMock
) -> None:
    """On it is a capability like the others (takes/): the registry without it offers no On
    it, knows no such press, and the card's own verbs act as ever."""
    glitchtip.put(ISSUE_URL, json={"id": "4", "status": "resolved"})
    without = Registry(
        tuple(c for c in REGISTRY.capabilities if c.name != "takes"), REGISTRY.sources_first
    )
    assert TAKE in REGISTRY.buttons
    assert TAKE not in without.buttons
    chat = chat_with(without)
    chat.update(press(callback_data(TAKE, "the-key")))
    assert chat.answered() == [(ENGLISH.press_unknown, True)]
    chat.update(press(callback_data("resolve", "the-key")))
    assert chat.answered()[-1] == ("Resolved BACKEND-4A in GlitchTip", False)
    chat.settle()
    [edit] = chat.telegram.edits
    assert "👀" not in str(edit)  # nobody is shown on it, and On it is never offered


def test_the_registry_refuses_two_owners_of_one_name() -> None:
    twin = Button("thanks_again", thanks.THANKS.code, "button_thanks", lambda button: True)
    with pytest.raises(ValueError, match="button code 'k'"):
        Registry((thanks.CAPABILITY, Capability("more", buttons=(twin,))))
    with pytest.raises(ValueError, match="table 'thanks'"):
        Registry((thanks.CAPABILITY, Capability("more", tables=("thanks",))))
    with pytest.raises(ValueError, match="capability 'silences'"):
        Registry((*REGISTRY.capabilities, Capability("silences")))
    with pytest.raises(ValueError, match='lent store "a chat\'s issues"'):
        Registry(
            (*REGISTRY.capabilities, Capability("more", lends=(Lent(CHAT_ISSUES, WatchStore),)))
        )


def test_a_lent_store_is_made_on_the_spool_it_is_asked_on_and_is_none_without_its_lender() -> None:
    spool = open_memory()
    try:
        issues = REGISTRY.lending.of(CHAT_ISSUES, spool)
        assert isinstance(issues, WatchStore)
        assert issues.overview("-100123", now=1_000_000.0) == []
        without_watch = Registry(
            tuple(c for c in REGISTRY.capabilities if c.name != "watch"), REGISTRY.sources_first
        )
        assert without_watch.lending.of(CHAT_ISSUES, spool) is None
    finally:
        spool.close()


def test_whether_a_capability_is_on_is_asked_once(settings: Settings) -> None:
    asked: list[Settings] = []

    def on(given: Settings) -> bool:
        asked.append(given)
        return True

    counted = Capability("counted", on=on)
    relay = assemble(
        settings, capabilities=Registry((*REGISTRY.capabilities, counted), REGISTRY.sources_first)
    )
    relay.dispatcher.shutdown()
    assert asked == [settings]


def test_handoffs_without_the_posts_the_summaries_lend_are_not_said_and_that_is_said(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    announcing = replace(settings, routes=parse_routes(HANDOFF_ROUTES, "r.toml", ROUTE_SOURCES))
    without = Registry(
        tuple(each for each in REGISTRY.capabilities if each.name != "summaries"),
        REGISTRY.sources_first,
    )
    relay = assemble(announcing, capabilities=without)
    relay.dispatcher.shutdown()
    assert "rotations announce their handoffs, but nothing keeps posts made once" in caplog.text
    relay = assemble(announcing)
    relay.dispatcher.shutdown()
    assert caplog.text.count("nothing keeps posts made once") == 1


@dataclass(frozen=True)
class JiraConfig:
    token: str
    url: str


def jira_from_env(environ: Mapping[str, str]) -> JiraConfig | None:
    token, url = environ.get("JIRA_TOKEN", ""), environ.get("JIRA_URL", "")
    if not token and not url:
        return None
    problems = []
    if not token:
        problems.append(ConfigError("JIRA_TOKEN", "is not set, and JIRA_URL is"))
    if url and not url.startswith("https://"):
        problems.append(ConfigError("JIRA_URL", "is not an https:// address"))
    if problems:
        raise ConfigError.gathered(problems)
    return JiraConfig(token, url)


JIRA_SETTINGS = SettingsOf(
    "jira",
    jira_from_env,
    token=lambda config: config.token,
    token_name="JIRA_TOKEN",
    secrets=lambda config: (config.token,),
)


def test_a_capability_reads_its_own_settings_with_the_relays_and_their_problems_together() -> None:
    theirs = (*REGISTRY.settings, JIRA_SETTINGS)
    base = {
        "TELEGRAM_BOT_TOKEN": "123456789:AAE-plugin-test-token_abcdefghij",
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": "plugin-test-secret-0123456789",
    }
    quiet = Settings.from_env(base, theirs)
    assert quiet.of(JIRA_SETTINGS) is None
    assert not quiet.acts_on_issues
    with pytest.raises(ConfigError) as refused:
        Settings.from_env(
            {**base, "JIRA_URL": "http://jira", "RELAY_RETRY_WAIT": "0", "SENTRY_URL": "x"},
            theirs,
        )
    # One error, every problem: the core's, Sentry's and the new capability's.
    assert set(refused.value.variables) == {
        "RELAY_RETRY_WAIT",
        "SENTRY_URL",
        "JIRA_TOKEN",
        "JIRA_URL",
    }
    on = Settings.from_env({**base, "JIRA_TOKEN": "jira-token-42", "JIRA_URL": "https://j"}, theirs)
    assert on.of(JIRA_SETTINGS) == JiraConfig("jira-token-42", "https://j")
    assert on.acts_on_issues  # its token puts buttons under its issues
    assert on.telegram_updates == "poll"
    assert "jira-token-42" in on.secrets  # never shown in a log line
    with pytest.raises(ConfigError, match="GLITCHTIP_API_TOKEN or SENTRY_API_TOKEN or JIRA_TOKEN"):
        Settings.from_env({**base, "TELEGRAM_UPDATES": "poll"}, theirs)
    with pytest.raises(ValueError, match="settings are named jira"):
        Capability("tracker", settings=JIRA_SETTINGS)
