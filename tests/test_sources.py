"""The sources of alerts as the core reads them (core/sources.py): each declared by its own
package, found by its name or by the relay's id of one of its issues, never mistaken for
another; and the modules that read issues spell no capability's source in their code."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import replace
from pathlib import Path

import pytest

from relay_app import assemble
from relay_app.capabilities import REGISTRY
from relay_app.core.alerts import Issue, IssueAlert
from relay_app.core.sources import Source, Sources, has_prefix, number_of
from relay_app.glitchtip.settings import GlitchTipConfig
from relay_app.glitchtip.source import GLITCHTIP
from relay_app.glitchtip.webhook import read_heading
from relay_app.message.formatting import message_for
from relay_app.message.subjects import issue_ref
from relay_app.operating.capability import Registry
from relay_app.operating.config import Settings
from relay_app.sentry.settings import SENTRY_SETTINGS, SentryConfig
from relay_app.sentry.source import SENTRY
from relay_app.words import ENGLISH, RUSSIAN
from relay_app.words.catalogue import of_source, source_shown
from tests.conftest import glitchtip_on, sentry_on

ROOT = Path(__file__).resolve().parents[1] / "relay_app"


def test_each_issue_id_names_its_source_and_an_unknown_prefix_names_none() -> None:
    sources = Sources((GLITCHTIP, SENTRY))
    assert sources.of("4242") is GLITCHTIP
    assert sources.of("sentry:4242") is SENTRY
    assert sources.of("jira:4242") is None  # a source since taken out is no other's
    assert Sources((GLITCHTIP,)).of("sentry:4242") is None
    assert sources.named("sentry") is SENTRY
    assert sources.named("jira") is None
    assert (SENTRY.relay_id("7"), SENTRY.own_id("sentry:7"), GLITCHTIP.relay_id("7")) == (
        "sentry:7",
        "7",
        "7",
    )
    assert (has_prefix("sentry:7"), has_prefix("7"), number_of("sentry:7"), number_of("7")) == (
        True,
        False,
        "7",
        "7",
    )


def test_a_source_is_declared_whole_and_once() -> None:
    path = re.compile(r"/issues/(?P<number>[0-9]+)/$")
    with pytest.raises(ValueError, match="prefix"):
        Source("jira", "Jira", "sentry:", path)
    with pytest.raises(ValueError, match="number"):
        Source("jira", "Jira", "jira:", re.compile(r"/issues/([0-9]+)/$"))
    with pytest.raises(ValueError, match="declared twice"):
        Sources((GLITCHTIP, GLITCHTIP))
    with pytest.raises(ValueError, match="no prefix"):
        Sources((GLITCHTIP, Source("jira", "Jira", "", path)))


def test_the_registry_knows_every_source_whether_its_capability_is_on_or_not(
    settings: Settings,
) -> None:
    assert settings.of(SENTRY_SETTINGS) is None  # Sentry's capability is off
    assert REGISTRY.on(settings).sources.names == ("glitchtip", "sentry")
    assert REGISTRY.sources.names == ("glitchtip", "sentry")


def test_each_source_gets_buttons_where_its_capability_or_the_wiring_says(
    settings: Settings,
) -> None:
    assert not REGISTRY.homes(settings)  # no token, no buttons
    both = replace(
        settings,
        theirs=(
            *glitchtip_on(GlitchTipConfig("t", "https://gt.example.org")),
            *sentry_on(SentryConfig("secret", api_token="s", url="https://sentry.example.org")),
        ),
    )
    homes = REGISTRY.homes(both)
    assert [source.name for source, _ in homes.homes] == ["glitchtip", "sentry"]
    sentrys = homes.of("sentry")
    assert sentrys is not None
    assert sentrys.origin == "https://sentry.example.org"
    assert sentrys.written_as is not None  # sentry.io's customer domains: its own links too


def test_a_relay_is_not_assembled_from_a_registry_without_its_first_source(
    settings: Settings,
) -> None:
    without = tuple(each for each in REGISTRY.capabilities if each.name != "glitchtip")
    with pytest.raises(ValueError, match="no first source"):
        assemble(settings, capabilities=Registry(without))


def test_a_link_is_read_as_its_sources_form_alone() -> None:
    sentrys = "https://sentry.example.org/organizations/acme/issues/7/"
    glitchtips = "https://gt.example.org/acme/issues/7"
    found = issue_ref(sentrys, None, source=SENTRY)
    assert found is not None
    assert (found.id, found.org) == ("sentry:7", None)
    found = issue_ref(glitchtips, None, source=GLITCHTIP)
    assert found is not None
    assert (found.id, found.org) == ("7", "acme")
    # The intake, not the link, decides the source: Sentry's form refuses GlitchTip's link.
    assert issue_ref(glitchtips, None, source=SENTRY) is None
    assert issue_ref(sentrys, None, source=None) is None


def test_words_about_an_issue_are_said_of_its_source() -> None:
    words = REGISTRY.words_in(ENGLISH)
    assert (source_shown(words, "7"), source_shown(words, "sentry:7")) == ("GlitchTip", "Sentry")
    assert source_shown(words, "jira:7") == "jira"  # no longer declared: its ids' own name
    assert "Sentry" in of_source(words, "sentry:7").notice_resolved
    assert of_source(words, "7") == words


# The core's modules (and the capabilities' that are no source) that read an issue's id, its
# link or its source's name: a source is a value they are given, never a name they spell
# (comments and docstrings may name one).
SPELL_NO_SOURCE = [
    "message/subjects.py",
    "message/formatting.py",
    "message/open_issues.py",
    "cards/card.py",
    "cards/outgoing.py",
    "delivery/render.py",
    "intake/receive.py",
    "intake/route.py",
    "intake/alerts.py",
    "intake/details.py",
    "cards/presses/presses.py",
    "cards/presses/hold.py",
    "cards/presses/record.py",
    "cards/presses/attempt.py",
    "cards/presses/ignoring.py",
    "cards/ignore_choices.py",
    "chat/replies.py",
    "chat/links.py",
    "charts/asking.py",
    "charts/charting.py",
]


_A_NAME = re.compile(r"""[rbf]*["'][\w:/.-]*sentry[\w:/.-]*["']""")


# Modules that read an issue or a route of any source, and spell neither: what differs between
# sources (how a project is named, a card's heading) is the source's declaration
# (core/sources.py), and the names a route may give are the registry's (`sources_named`).
SPELL_NEITHER = ["chat/scope.py", "chat/link_card.py", "chat/links.py", "routes/table.py"]

_EITHER = re.compile(r"""[rbf]*["'][\w:/.-]*(sentry|glitchtip)[\w:/.-]*["']""")


def _spelled(module: str, names: tuple[str, ...], a_name: re.Pattern[str]) -> list[str]:
    text = (ROOT / module).read_text()
    return [
        f"{token.start[0]}: {token.string}"
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if (token.type == tokenize.NAME and any(n in token.string.lower() for n in names))
        # A value compared or keyed on ("sentry", 'sentry:'); a log line may name one for
        # the operator.
        or (token.type == tokenize.STRING and a_name.fullmatch(token.string.lower()))
    ]


@pytest.mark.parametrize("module", SPELL_NO_SOURCE)
def test_the_modules_that_read_issues_spell_no_other_source_in_their_code(module: str) -> None:
    assert _spelled(module, ("sentry",), _A_NAME) == []


@pytest.mark.parametrize("module", SPELL_NEITHER)
def test_the_modules_that_read_any_source_spell_none_in_their_code(module: str) -> None:
    assert _spelled(module, ("sentry", "glitchtip"), _EITHER) == []


def test_a_heading_a_source_wrote_in_its_own_words_is_said_in_the_chats() -> None:
    """Each source reads its own headings (GlitchTip's: glitchtip/webhook.py); the formatter
    says them in the chat's language for whichever source wrote them."""
    assert [read_heading(h) for h in ("GlitchTip Alert", "GlitchTip Alert (5 issues)")] == [0, 5]
    assert read_heading("GlitchTip Alert (5 issues) for prod") is None
    path = re.compile(r"/browse/(?P<number>[0-9]+)$")

    def jiras(heading: str) -> int | None:
        return 3 if heading == "3 tickets" else None

    jira = Source("jira", "Jira", "jira:", path, reads_heading=jiras)
    sources = Sources((GLITCHTIP, jira))
    issue = Issue("Boom", None, None, "error", None, ())

    def heading(alert: IssueAlert) -> str:
        return message_for(alert, RUSSIAN, sources=sources).text.split("\n")[0]

    assert heading(IssueAlert("3 tickets", (issue,), 3, "jira")) == "🔴 Алерт Jira (3 проблемы)"
    assert heading(IssueAlert("", (issue,), 1, "jira")) == "🔴 Алерт Jira"
    assert heading(IssueAlert("Deploy failed", (issue,), 1, "jira")) == "🔴 Deploy failed"
    # Another source's own words are no heading of GlitchTip's, and the reverse.
    assert heading(IssueAlert("3 tickets", (issue,), 3, "glitchtip")) == "🔴 3 tickets"
    glitchtips = IssueAlert("GlitchTip Alert (5 issues)", (issue,), 5, "glitchtip")
    assert heading(glitchtips) == "🔴 Алерт GlitchTip (5 проблем)"
    assert heading(replace(glitchtips, source="jira")) == "🔴 GlitchTip Alert (5 issues)"


def test_a_source_says_how_its_webhooks_name_a_project() -> None:
    path = re.compile(r"/issues/(?P<number>[0-9]+)/$")
    with pytest.raises(ValueError, match="'name' or 'slug'"):
        Source("jira", "Jira", "jira:", path, project_named_by="key")
    assert (GLITCHTIP.project_named_by, SENTRY.project_named_by) == ("name", "slug")
