"""Links answered (docs/actions.md): a message in a chat the relay serves that holds a link to
an issue of GlitchTip (at GLITCHTIP_URL's address, or GLITCHTIP_PUBLIC_URL's) gets a reply with
that issue's card, as an alert's message shows it, with its buttons: each linked issue (up to
MOST_CARDS) a card of its own, once per issue per chat in LINK_WINDOW, whichever process or
relay reads the message. The issue is read from GlitchTip's API with the relay's token: the
link only names it, it never decides where the token goes, nor what the chat may see.

A chat sees its own issues (scope.py): the link's path must name the issue's organization
(`<GlitchTip>/<org>/issues/<id>`, read strictly: a path with `..`, an escape or anything after
the id names nothing), and the issue must be one the chat follows. Any other gets, at most once
a message, one short word that it is not one this chat follows: never its title, and the same
word whether the issue exists elsewhere or not at all.

The look-ups run off the thread that read the update (core/off_thread.py): a GlitchTip that
hangs holds up no press, which must be answered within seconds. A message's links cost one
answer of its writer's budget (answers.py), whatever their number.

A reply to one of the relay's own messages is a comment (replies.py), not a question: its links
are left alone. The bot sees other messages only with its privacy mode off, or as an admin.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from ..core.errors import IssueGone, SpoolError, TrackerError
from ..core.off_thread import OffThread
from ..core.services import Key
from ..core.sources import Source
from ..message.subjects import origin_of
from ..words import Said
from .answers import Answering, Asker, Served
from .link_card import link_card_data
from .scope import ChatScope
from .written import Written

log = logging.getLogger(__name__)

# An issue linked again in the same chat within this long gets no second card.
LINK_WINDOW = 600.0
# A message names at most this many issues that get cards: a pasted list is not a storm.
MOST_CARDS = 3
# Look-ups in GlitchTip at once per process, and messages' links waiting for them at most.
LOOKUP_THREADS = 2
LOOKUPS_WAITING = 8
_URL = re.compile(r"https?://[^\s<>\"')\]]+")
# `<org>/issues/<id>` at the end of a path: GlitchTip's address of an issue.
_ORG_ISSUE = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_-]{0,99})/issues/([0-9]{1,20})/?")
_LOOKS_LIKE_AN_ISSUE = re.compile(r"/issues/[^/]")


class IssueReader(Protocol):
    """What a link's card reads of an issue: the issue among its organization's, and the tags
    of its latest event the routes read (glitchtip/api.py; Sentry's: sentry/api.py)."""

    def issue_in(self, org: str, issue_id: str) -> tuple[dict[str, Any], dict[str, str]]: ...


@dataclass(frozen=True)
class LinkSource:
    """A source whose issue links get cards: the address its links have, what reads its
    issues, and the source it is (its name, its issues' ids: core/sources.py)."""

    origin: str
    reader: IssueReader
    source: Source
    # Another address its issues have (sentry.io's customer domains), as the link at `origin`
    # that names the same issue; None for a link that is none of its.
    written_as: Callable[[str], str | None] = lambda link: None

    @property
    def name(self) -> str:
        return self.source.name

    def relay_id(self, issue_id: str) -> str:
        """The relay's id of the source's issue."""
        return self.source.relay_id(issue_id)


@dataclass(frozen=True)
class Linked:
    """An issue a pasted link names: its organization, its id at its source, and the link as
    the source writes it (without a query or fragment)."""

    org: str
    issue_id: str
    link: str
    source: LinkSource | None = None

    @property
    def relay_id(self) -> str:
        return self.source.relay_id(self.issue_id) if self.source else self.issue_id


def linked_issue(link: str, origin: str) -> Linked | None:
    """The issue a link at `origin` names, read strictly; None for any other link, and for a
    path with a dot segment, an escape or an empty segment
    (`…/acme/issues/../../secret/issues/1002` names nothing)."""
    try:
        parts = urlsplit(link)
    except ValueError:
        return None
    path = parts.path
    segments = path.strip("/").split("/")
    if origin_of(link) != origin or "%" in path or "\\" in path:
        return None
    if any(segment in ("", ".", "..") for segment in segments):
        return None
    found = _ORG_ISSUE.search(path)
    if found is None or found.end() != len(path):
        return None
    canonical = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return Linked(found.group(1), found.group(2), canonical)


class Links:
    def __init__(
        self,
        *,
        served: Served,
        sources: Sequence[LinkSource],
        answering: Answering,
        scope: ChatScope,
        count: Callable[[str], None] = lambda outcome: None,
    ) -> None:
        """`sources`: whose links get cards, each at its address (GlitchTip's:
        GLITCHTIP_PUBLIC_URL, else GLITCHTIP_URL; Sentry's: SENTRY_URL)."""
        self._served = served.chats
        self._sources = tuple(sources)
        self._answering = answering
        self._scope = scope
        self._count = count
        self.look_ups = OffThread(
            "relay-links", threads=LOOKUP_THREADS, most_waiting=LOOKUPS_WAITING
        )

    def handle_update(self, update: Mapping[str, Any]) -> None:
        """A message's links, looked up off this thread (answered when they are)."""
        message = update.get("message")
        said = Written.of(message)
        if said is None or said.chat not in self._served or _answers_a_bot(message):
            return
        linked = self._issues_linked(said.text)[:MOST_CARDS]
        if not linked:
            return
        asker = said.asker
        try:
            if not self._answering.may_answer(asker):
                return  # its budget is spent: counted, and said once a minute
        except SpoolError as exc:
            log.warning("links in chat %s get no card now: %s", asker.chat, exc)
            return
        if not self.look_ups.submit(lambda: self._answer(asker, linked)):
            self._answering.refused("lookups", asker)

    def shutdown(self) -> None:
        self.look_ups.shutdown()

    def _issues_linked(self, text: str) -> list[Linked]:
        found: dict[str, Linked] = {}
        for found_link in _URL.findall(text):
            link, source = self._at_a_source(found_link)
            if source is None:
                continue
            linked = linked_issue(link, source.origin)
            if linked is not None:
                linked = replace(linked, source=source)
                found.setdefault(linked.relay_id, linked)
            elif _LOOKS_LIKE_AN_ISSUE.search(link):
                # Before the budget: counted, and said at DEBUG only, or a flood of such links
                # would cost a line each.
                log.debug("a link in a chat names no issue as GlitchTip writes them: left alone")
                self._count("unreadable")
        return list(found.values())

    def _at_a_source(self, link: str) -> tuple[str, LinkSource | None]:
        """The link as its source writes it at its address, and the source; None when no
        source's."""
        for source in self._sources:
            if origin_of(link) == source.origin:
                return link, source
            if (written := source.written_as(link)) is not None:
                return written, source
        return link, None

    def _answer(self, asker: Asker, linked: list[Linked]) -> None:
        """Each linked issue's card, and one word for all those the chat does not follow."""
        outcomes = [self._card(asker, each) for each in linked]
        if "not_followed" not in outcomes:
            return
        try:
            self._answering.answer(asker, Said("link_not_followed"))
        except SpoolError as exc:
            log.warning("chat %s could not be told a link is not followed: %s", asker.chat, exc)

    def _card(self, asker: Asker, linked: Linked) -> str:
        chat, issue_id = asker.chat, linked.relay_id
        assert linked.source is not None  # every link read here is a source's
        source = linked.source.source
        try:
            if not self._answering.first_in(f"link:{chat}:{linked.org}:{issue_id}", LINK_WINDOW):
                log.info("issue %s linked again in chat %s: no second card", issue_id, chat)
                return self._counted("repeated")
            issue, tags = linked.source.reader.issue_in(linked.org, linked.issue_id)
            if not self._scope.follows(chat, linked.org, issue_id, issue, tags, source=source):
                return self._not_followed(linked, chat)
            card = link_card_data(issue, linked.link, source=source)
            states = {issue_id: str(card["status"])}  # its buttons offer what it is now
            if not self._answering.link_card(asker, card, states=states):
                return self._counted("failed")  # the chat has as many answers waiting as it may
        except IssueGone:
            return self._not_followed(linked, chat)  # said alike: no such issue, or not this org's
        except TrackerError as exc:
            log.info("issue %s, linked in chat %s, cannot be read: %s", issue_id, chat, exc)
            return self._counted("failed")
        except SpoolError as exc:
            log.warning("issue %s, linked in chat %s, gets no card now: %s", issue_id, chat, exc)
            return self._counted("failed")
        log.info("issue %s, linked in chat %s, gets its card", issue_id, chat)
        return self._counted("posted")

    def _not_followed(self, linked: Linked, chat: str) -> str:
        log.info(
            "issue %s of %s, linked in chat %s, is not one this chat follows: no card",
            linked.issue_id,
            linked.org,
            chat,
        )
        return self._counted("not_followed")

    def _counted(self, outcome: str) -> str:
        self._count(outcome)
        return outcome


def _answers_a_bot(message: Any) -> bool:
    """Whether the message replies to a bot's (the relay's alerts: a comment, not a question)."""
    answered = message.get("reply_to_message") if isinstance(message, dict) else None
    sender = answered.get("from") if isinstance(answered, dict) else None
    return isinstance(sender, dict) and bool(sender.get("is_bot"))


# The links' look-ups of this relay (acting from the chat's): a test waits for them to end.
LINKS: Key[Links] = Key("links")
