"""Which alerts a silence holds back: its matchers, read against an alert's lines (lines.py),
which name each issue's link, short id, title and GlitchTip's fields. Pure functions, no I/O.

Every matcher that is set must match (issue, project, environment, title text), and every
issue the alert names must be matched: an alert about a muted issue and another one still
goes, whole. Uptime alerts, payloads the relay does not know, and alerts that name issues
GlitchTip did not list (a storm's "12 issues") are never held.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..message.formatting import Message
from ..message.lines import MORE, Line
from ..message.subjects import number_in_link
from ..words import Words


@dataclass(frozen=True)
class Matchers:
    issue: str | None = None  # GlitchTip's issue id ('1234') or short id ('BACKEND-1A')
    project: str | None = None
    environment: str | None = None
    title: str | None = None  # text the issue's title contains, in any case

    def __bool__(self) -> bool:
        return any((self.issue, self.project, self.environment, self.title))

    def describe(self, words: Words, *, label: str | None = None) -> str:
        """'issue BACKEND-1A, environment production': what the silence is for, in the chat."""
        parts = []
        if self.issue:
            parts.append(words.matcher_issue.format(value=label or self.issue))
        if self.project:
            parts.append(words.matcher_project.format(value=self.project))
        if self.environment:
            parts.append(words.matcher_environment.format(value=self.environment))
        if self.title:
            parts.append(words.matcher_title.format(value=self.title))
        return ", ".join(parts)

    def plain(self) -> str:
        """'issue=1234 environment=production': as the command line and logs show it."""
        pairs = [
            ("issue", self.issue),
            ("project", self.project),
            ("environment", self.environment),
            ("title", self.title),
        ]
        return " ".join(
            f"{name}={value!r}" if " " in value else f"{name}={value}"
            for name, value in pairs
            if value
        )


def matches(matchers: Matchers, message: Message) -> bool:
    """Whether the silence holds this alert back: an issue alert whose every issue it matches."""
    if not matchers or message.heading is None or not message.lines:
        return False
    if any(line.key == MORE for line in message.lines):
        return False
    return all(_line_matches(matchers, line) for line in message.lines)


def _line_matches(matchers: Matchers, line: Line) -> bool:
    facts = {name: value.casefold() for name, value in line.facts}
    if matchers.issue is not None and not _same_issue(matchers.issue, line):
        return False
    if matchers.project is not None and facts.get("Project") != matchers.project.casefold():
        return False
    if (
        matchers.environment is not None
        and facts.get("Environment") != matchers.environment.casefold()
    ):
        return False
    return matchers.title is None or matchers.title.casefold() in line.title.casefold()


def _same_issue(wanted: str, line: Line) -> bool:
    if wanted.isdigit():
        return number_in_link(line.key) == wanted
    return line.label.casefold() == wanted.casefold()
