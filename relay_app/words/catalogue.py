"""Every word the relay writes to the chat, in one catalogue per language (`RELAY_LANGUAGE`):
en.py and ru.py each build one `Words`, and a dataclass without defaults cannot be built with a
field left out. Templates take named fields (`str.format`); a word that changes with a number
is a `Plural` with its language's forms (English: one, other; Russian: one, few, many, as in
1 алерт, 2 алерта, 5 алертов, 21 алерт). tests/test_words.py checks that every language has
every word, with the same fields and all its plural forms.

Logs, metrics and the command line stay English: operators grep them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..core.sources import Sources, has_prefix


@dataclass(frozen=True)
class Plural:
    """A template whose words follow the number `{n}`: one form per plural category."""

    forms: tuple[str, ...]


def english_plural(n: int) -> int:
    return 0 if n == 1 else 1


def russian_plural(n: int) -> int:
    """The CLDR rule: one (1, 21, 101), few (2-4, 22-24), many (0, 5-20, 11-14, 25...)."""
    if n % 10 == 1 and n % 100 != 11:
        return 0
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return 1
    return 2


@dataclass(frozen=True)
class Words:
    language: str
    plural_forms: int
    plural_rule: Callable[[int], int]

    # Durations and times ('3 min 12 s', '12:04 UTC').
    unit_day: str
    unit_hour: str
    unit_minute: str
    unit_second: str

    # An issue alert: GlitchTip's heading (its own words, translated when they are GlitchTip's
    # fixed ones), the issue's parts, GlitchTip's field names, and what was left out.
    glitchtip_alert: str
    glitchtip_alert_issues: Plural
    # An alert's heading with its source named, where the relay serves two ('Sentry · Checkout').
    source_heading: str
    untitled_issue: str
    raised_in: str
    field_project: str
    field_environment: str
    field_release: str
    field_server: str
    more_issues: Plural
    more_issues_named: Plural  # with GLITCHTIP_API_TOKEN: named in a message of their own
    issue_label: str
    unknown_payload: str

    # An uptime monitor's alert.
    monitor_down: str
    monitor_warning: str
    monitor_up: str
    monitor_unknown: str
    unnamed_monitor: str
    site_down: str
    site_up: str
    more_monitors: Plural
    back_up_after: str

    # What GlitchTip's API says of an issue.
    frame_where: str
    level: str
    value: str
    seen_times: Plural
    new_issue: str
    first_seen: str

    # Digests, backlogs, lateness and repeats.
    alerts: Plural
    digest_head: str
    digest_sent_after: str
    cut_note: str
    more_in_backlog: Plural
    late_note: str
    repeat_note: str
    repeat_note_digest: str

    # Buttons, and what presses did.
    button_resolve: str
    button_ignore: str
    # Ignore's choices (snoozes/snoozing.py), its card's suffix, the press's answer, and the
    # reply when the issue is back.
    button_ignore_forever: str
    button_snooze_hour: str
    button_snooze_day: str
    button_snooze_events: str
    button_back: str
    snoozed_until: str
    snoozed_events: str
    notice_choose: str
    # An issue's last 24 hours in its details, when the watcher has read them.
    trend_24h: str
    # A link's card (chat/link_card.py): its first line.
    link_card: str
    link_card_unresolved: str
    link_card_resolved: str
    link_card_ignored: str
    # A link to an issue the chat does not follow (chat/links.py): said without its title.
    link_not_followed: str
    # What people type is bounded (chat/answers.py): a person who asks again too soon.
    answer_busy: str
    # The chat's commands (chat/commands.py): their descriptions and answers.
    command_issues: str
    command_oncall: str
    command_silences: str
    command_status: str
    issues_answer: str
    issues_read: str
    issues_read_asking: str
    issues_not_read: str
    issues_none: str
    oncall_answer: str
    oncall_line: str
    oncall_none: str
    oncall_covering: str  # after who is on duty, when they cover another's turn
    oncall_covers: str  # the covers to come, below the rotations
    oncall_cover_line: str
    # Covers from the chat (oncall/command.py): /cover, and why one is refused.
    command_cover: str
    cover_made: str
    cover_usage: str
    cover_not_allowed: str
    cover_no_rotation: str
    cover_no_person: str
    cover_unreadable_time: str
    cover_past: str
    cover_backwards: str
    cover_too_long: str
    cover_too_far: str
    cover_not_kept: str
    # Calls that reach a person: /start in a private chat with the bot, a private call, and
    # the hint in the chat for someone who has not started one (oncall/direct.py).
    command_start: str
    start_answer: str
    start_unknown: str
    start_not_kept: str
    direct_call: str
    direct_open: str
    direct_hint: str
    direct_alert: str  # a private call at the alert's delivery (a route's `direct = true`)
    with_hint: str  # a call, and below it the hint for those it could not call privately
    # An on-call handoff said in the chat (oncall/handoff_text.py).
    handoff: str
    silences_answer: str
    silences_line: str
    silences_none: str
    status_answer: str
    status_telegram_up: str
    status_telegram_down: str
    status_queue: str
    # The daily summary (summaries/text.py).
    summary_head: str
    summary_new: str
    summary_escalating: str
    summary_regressed: str
    summary_open: str
    summary_open_line: str
    summary_taken: str
    summary_more: str
    summary_counts: str
    summary_quiet: str
    notice_cannot_snooze: str
    notice_snoozed_until: str
    notice_snoozed_events: str
    snooze_back_time: str
    snooze_back_events: str
    button_reopen: str
    button_mute: str
    button_unmute: str
    resolved_by: str
    ignored_by: str
    reopened_by: str
    issue_resolved_by: str
    issue_ignored_by: str
    issue_reopened_by: str
    # The same, changed in GlitchTip itself (its UI or API): GlitchTip does not say by whom.
    resolved_in_glitchtip: str
    ignored_in_glitchtip: str
    reopened_in_glitchtip: str
    issue_resolved_in_glitchtip: str
    # Whom its source says the issue is assigned to ('Ada Lovelace'), and when.
    issue_ignored_in_glitchtip: str
    issue_reopened_in_glitchtip: str
    notice_resolved: str
    notice_ignored: str
    notice_reopened: str
    # A press answered while its tracker has not answered yet; and, under the card, that the
    # change did not happen after all.
    notice_asking: str
    press_failed_late: str
    not_updated: str
    press_unknown: str
    press_not_allowed: str
    press_unavailable: str
    press_out_of_date: str

    # A taker who went quiet (a route's `take_for`): called first, then the issue is nobody's
    # again and the calls go on (docs/oncall.md). On it's own words are its (takes/plugin.py).
    recall_taker: str
    recall_lapsed: str
    # What on call cost (summaries/report_text.py): `relay-app report`, and the weekly part of
    # a daily summary (a route's `report`).
    report_head: str
    report_alerts: str
    report_take: str
    report_take_none: str
    report_resolve: str
    report_resolve_none: str
    report_calls: str
    report_takers: str
    report_open: str
    report_open_none: str
    report_open_line: str
    report_more: str
    span_seconds: str  # a route's `take_for`, as a call says it
    span_minutes: str
    span_hours: str
    escalation_call: str
    escalation_call_issues: str  # a step of a message about several issues: those left
    escalating: str
    named_hidden: str  # the first line of the issues an alert counted but did not attach

    # Silences.
    notice_muted: str
    notice_unmuted: str
    notice_not_muted: str
    silence_over: str
    silence_listed_first: str
    matcher_issue: str
    matcher_project: str
    matcher_environment: str
    matcher_title: str

    # Replies that become GlitchTip comments.
    comment_author: str
    comment_posted: str
    comment_not_posted: str
    reply_which_issue: str
    reply_not_kept: str

    # GlitchTip failing a press or a reply.
    glitchtip_timeout: str
    glitchtip_refused_connection: str
    glitchtip_unresolvable: str
    glitchtip_connection_failed: str
    glitchtip_unreachable: str
    glitchtip_failing: str
    # GlitchTip refused the relay's setup (its token, its scope, GLITCHTIP_URL): the presser is
    # told that much; the operator's fix is in the log (glitchtip/notices.py).
    glitchtip_operator: str
    glitchtip_issue_gone: str
    glitchtip_refused: str

    # `relay-app check --send`'s message to the chat (HTML: it may hold <b> and <code>).
    test_message: str

    # The people a route calls (routes/table.py), in the last line of its alerts' message; one
    # without a username is named by a link, its text this.
    mention_line: str
    mention_user: str
    # An alert whose route's people could not be worked out (a cover the spool cannot read).
    mentions_lost: str

    # The capabilities' own words (operating/capability.py), by name: what `word` finds beside
    # the catalogue's.
    theirs: tuple[tuple[str, str], ...] = ()
    # The sources' names as people read them (core/sources.py): the words about an issue are
    # said of its source (`of_source`).
    sources: Sources = field(default_factory=lambda: Sources(()))

    def word(self, name: str) -> str:
        """A word's template by its name, the catalogue's or a capability's. Raises KeyError
        for one neither has."""
        template = (
            getattr(self, name, None) if name not in ("language", "theirs", "sources") else None
        )
        if isinstance(template, str):
            return template
        for their_name, text in self.theirs:
            if their_name == name:
                return text
        raise KeyError(f"the catalogue has no word {name!r}")

    def count(self, word: Plural, n: int) -> str:
        """`word` for the number `n`: '5 alerts', '5 алертов'."""
        return word.forms[self.plural_rule(n)].format(n=n)

    def duration(self, seconds: float) -> str:
        """'48 s', '3 min 12 s', '2 h 5 min', '1 d 3 h': two units are enough to judge a
        delay."""
        total = max(0, round(seconds))
        units = (
            (self.unit_day, 86400),
            (self.unit_hour, 3600),
            (self.unit_minute, 60),
            (self.unit_second, 1),
        )
        index = next(i for i, (_, size) in enumerate(units) if total >= size or size == 1)
        unit, size = units[index]
        said = f"{total // size} {unit}"
        if index + 1 < len(units):
            next_unit, next_size = units[index + 1]
            if remainder := total % size // next_size:
                said += f" {remainder} {next_unit}"
        return said


@dataclass(frozen=True)
class Said:
    """Words to be written in the chat later, as data: a catalogue word's name and the values
    of its fields (themselves text, or words of their own), made text in the chat's language
    when the write is sent. A job keeps this, never the text."""

    word: str
    values: Mapping[str, str | Said] = field(default_factory=dict)
    # The source the words are about, where not GlitchTip ("Sentry": `in_source`).
    source: str | None = None

    def text(self, words: Words) -> str:
        if self.source is not None:
            words = in_source(words, self.source)
        template = words.word(self.word)
        shown = {
            name: value.text(words) if isinstance(value, Said) else value
            for name, value in self.values.items()
        }
        return template.format(**shown)

    def as_json(self) -> dict[str, Any]:
        said: dict[str, Any] = {
            "word": self.word,
            "values": {
                name: value.as_json() if isinstance(value, Said) else value
                for name, value in self.values.items()
            },
        }
        if self.source is not None:
            said["source"] = self.source
        return said

    @classmethod
    def from_json(cls, raw: object) -> Said:
        """What `as_json` wrote. Raises KeyError for anything else."""
        if not isinstance(raw, dict) or not isinstance(raw.get("word"), str):
            raise KeyError(f"not words to say: {raw!r:.80}")
        values = raw.get("values", {})
        source = raw.get("source")
        return cls(
            raw["word"],
            {
                str(name): cls.from_json(value) if isinstance(value, dict) else str(value)
                for name, value in (values.items() if isinstance(values, dict) else ())
            },
            source=source if isinstance(source, str) else None,
        )


# The source every word names unless said otherwise.
NAMED_SOURCE = "GlitchTip"


@functools.lru_cache(maxsize=8)
def in_source(words: Words, source: str) -> Words:
    """The catalogue, its words about GlitchTip said of another source ("Sentry"): the
    source's name is a name in every language, and its variable's (GLITCHTIP_API_TOKEN) too."""
    if source == NAMED_SOURCE:
        return words
    upper = (NAMED_SOURCE.upper(), source.upper())

    def moved(text: str) -> str:
        return text.replace(NAMED_SOURCE, source).replace(*upper)

    changed: dict[str, Any] = {}
    for name, value in templates(words).items():
        if isinstance(value, Plural):
            changed[name] = Plural(tuple(moved(form) for form in value.forms))
        else:
            changed[name] = moved(value)
    return replace(words, **changed)


def of_source(words: Words, relay_id: str) -> Words:
    """The catalogue, its words said of the source of the issue the relay's id names."""
    return in_source(words, source_shown(words, relay_id))


def source_shown(words: Words, relay_id: str) -> str:
    """The name people read for the source of an issue: the catalogue's own for the first
    source's (its ids have no prefix), else its source's, else (a source no longer
    declared) the name its ids carry."""
    if not has_prefix(relay_id):
        return NAMED_SOURCE
    found = words.sources.of(relay_id)
    return found.shown if found is not None else relay_id.partition(":")[0]


def templates(words: Words) -> dict[str, str | Plural]:
    """Every word of the catalogue by its field's name (what the tests compare)."""
    return {
        field.name: value
        for field in fields(words)
        if isinstance(value := getattr(words, field.name), str | Plural)
        and field.name != "language"
    }
