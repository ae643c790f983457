"""A chat sees its own issues (docs/security.md): a link's card is shown in a chat only for an
issue that chat follows, whatever the link says and whatever the token may read:

- one the relay alerted on in that chat (the watcher keeps each issue's last alert for 7 days,
  and lends what it keeps: message/open_issues.py; the cards the relay keeps show which chats
  saw it: cards/sent.py); or
- one of an organisation the relay was alerted on, as the tracker's own answers showed it
  (the watcher asks for each alerted issue among its organization's issues; a webhook's link
  alone proves nothing) and, with GLITCHTIP_ORGANIZATIONS, one of those (the token may read
  others), that the routes send to that chat: its facts as GlitchTip's API gives them (its
  project, level, title and short id, and its latest event's environment, server and release),
  routed as a webhook's issue would be with no chat in the webhook's URL (so to
  TELEGRAM_CHAT_ID when no route takes it; nowhere when one drops it). A relay that has had no
  alert yet follows no organisation.

The organisation a link names must be the issue's (glitchtip/api.py: `issue_in` asks for the
issue among that organisation's). A press acts only on the issue of a button the relay keeps for
that very chat and message (presses.py), so a card's buttons keep to the same scope, and
`/issues` lists only what the chat was alerted on (commands.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cards.sent import SentStore
from ..core.json_values import json_object
from ..core.routing import Destination
from ..core.sources import Source
from ..message.open_issues import ChatIssues
from ..message.subjects import NO_HOMES, IssueHomes
from ..routes.split import chat_for
from ..routes.table import RouteTable, facts_of_issue


class ChatScope:
    def __init__(
        self,
        routes: RouteTable,
        default: Destination,
        *,
        watched: ChatIssues | None,
        sent: SentStore,
        homes: IssueHomes = NO_HOMES,
    ) -> None:
        """`default`: TELEGRAM_CHAT_ID's destination, where what no route takes goes;
        `watched`: what the watcher lends of its table (None without one: a chat then follows
        the issues of the cards it was shown alone); `homes`: each source's, with the
        organizations the relay acts in where it names them (GLITCHTIP_ORGANIZATIONS; None:
        any its tracker showed)."""
        self._routes = routes
        self._default = default
        self._watched = watched
        self._sent = sent
        self._homes = homes

    def follows(
        self,
        chat: str,
        org: str,
        issue_id: str,
        issue: Mapping[str, Any],
        tags: Mapping[str, str],
        *,
        source: Source,
    ) -> bool:
        """Whether `chat` follows the issue (`issue_id`: the relay's id of it; `issue`: its
        source's answer for it, of `org`'s; `tags`: its latest event's that the routes read).
        Raises SpoolError."""
        home = self._homes.of(source.name)
        allowed = home.orgs if home is not None else None
        if allowed is not None and org not in allowed:
            return False  # whatever a webhook named
        watched = self._watched
        if self._sent.shows(chat, issue_id) or (watched and watched.alerted_in(chat, issue_id)):
            return True
        if watched is None or org not in watched.organizations():
            return False
        facts = {**facts_of(issue, tags, source=source), "source": source.name}
        return chat_for(facts, self._routes, self._default) == chat


def facts_of(
    issue: Mapping[str, Any], tags: Mapping[str, str], *, source: Source
) -> dict[str, str | None]:
    """What a route's matchers read of an issue, from its source's API: as its webhook would
    give them (the project as its webhooks name it, `Source.project_named_by`; then the tags'
    fields), with its own level."""
    project = json_object(issue.get("project"))
    other = "slug" if source.project_named_by == "name" else "name"
    name = project.get(source.project_named_by) or project.get(other)
    fields = [("Project", str(name))] if name else []
    level, short_id = issue.get("level"), issue.get("shortId")
    return facts_of_issue(
        str(issue.get("title") or ""),
        short_id if isinstance(short_id, str) else None,
        "warning",  # the shade of an issue whose source marks no colour
        [*fields, *tags.items()],
        level if isinstance(level, str) else None,
    )
