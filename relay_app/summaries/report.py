"""What on call cost (docs/oncall.md): over a period, in a place (a chat, or a topic of it) or in
every chat, read from what the spool already records of the messages with buttons it sent
(cards/sent.py: when each went, what became of it), of who took each issue and when (as On it
lends them: cards/takers.py) and of the calls (as on call lends them, cards/calls_made.py: the
escalation steps fired, the takers called again):

- alerts: the messages sent about issues, and the issues they were about; each day's (in the
  place's time zone) by level, a message counted at its most severe issue's; and each place's;
- time to take: from an issue's first message of the period to On it (median, worst);
- time to resolve: to Resolve in the chat, or GlitchTip's own as the watcher saw it;
- calls made; who took what; the issues still open, with who has each.

For `relay-app report` and the weekly part of a place's daily summary (`report = "monday"`).
The records are kept a week at least (RELAY_RETRY_MAX_AGE's longer), so a longer period may find
its start forgotten. Data only: summaries/report_text.py writes it in words."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from ..cards import records
from ..cards.calls_made import CallsMade
from ..cards.takers import TAKES, Takes
from ..core.routing import Destination
from ..core.services import Lending
from ..message.open_issues import OpenIssue
from ..spool.store import Row, Store, Tx, float_or_null, text_or_null

# The open issues a report or a handoff names; the rest are counted.
OPEN_LISTED = 10


@dataclass(frozen=True)
class Report:
    start: float
    end: float
    alerts: int = 0
    issues: int = 0
    taken: int = 0
    take_median: float | None = None
    take_worst: float | None = None
    resolved: int = 0
    resolve_median: float | None = None
    resolve_worst: float | None = None
    calls: int = 0
    takers: dict[str, int] = field(default_factory=dict)
    open_count: int = 0
    open: list[OpenIssue] = field(default_factory=list)
    # Alerts each day of the period ('2026-12-01', in the place's zone, every day listed), by
    # level ('other': none said); and by place ('-100123', or '-100123/42' for a topic).
    by_day: dict[str, dict[str, int]] = field(default_factory=dict)
    by_place: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Report:
        kept = {**raw, "open": [OpenIssue(**issue) for issue in raw.get("open", [])]}
        return cls(**kept)


class ReportStore:
    def __init__(self, store: Store, takes: Takes | None = None) -> None:
        """`takes`: who took each issue, and when (lent by On it's capability; None: nobody
        took any)."""
        self._store = store
        self._takes = takes

    @classmethod
    def lent(cls, store: Store, lending: Lending) -> ReportStore:
        """As it is made where the capabilities lend: with the takes."""
        return cls(store, lending.beside(TAKES, store))

    def report(
        self,
        place: Destination | None,
        *,
        start: float,
        now: float,
        zone: tzinfo = UTC,
        calls: CallsMade | None = None,
    ) -> Report:
        """What happened in `place` (None: every chat) from `start` to now, its days in
        `zone`; the calls made as `calls` lends them (None: without on call, none)."""
        made = calls.made_since(start, now=now) if calls is not None else []
        takes = self._takes
        return self._store.read(lambda tx: _report(tx, takes, place, start, zone, made), now=now)

    def still_open(
        self, place: Destination, *, since: float, now: float
    ) -> tuple[int, list[OpenIssue]]:
        """The issues shown in `place` since `since` that are still open (not resolved or
        ignored, as the chat or the watcher last knew it): how many, and the first of them."""

        def read(tx: Tx) -> tuple[int, list[OpenIssue]]:
            issues = _issues(tx, self._takes, place, tx.at.to_db(since))
            found = [i.as_open() for i in issues if i.open]
            return len(found), found[:OPEN_LISTED]

        return self._store.read(read, now=now)


@dataclass(frozen=True)
class _Issue:
    """An issue as its latest message of the period shows it, and when it was first shown."""

    chat: str
    issue_id: str
    label: str
    title: str
    taken_by: str | None
    status: str | None
    acted_at: float | None
    first_at: float

    @property
    def open(self) -> bool:
        return self.status not in ("resolved", "ignored")

    def as_open(self) -> OpenIssue:
        return OpenIssue(self.label, self.title, self.taken_by)


def _issues(
    tx: Tx, takes: Takes | None, place: Destination | None, since_db: float
) -> list[_Issue]:
    """Each issue shown since then (one per chat and issue), in the order first shown, with
    who has it on its latest card."""
    rows = records.shown_since(tx, place, since_db)
    latest: dict[tuple[str, str], Row] = {}
    first: dict[tuple[str, str], float] = {}
    for row in rows:
        key = (str(row["chat"]), str(row["issue_id"]))
        first.setdefault(key, float(row["sent_at"]))
        latest[key] = row
    return [
        _Issue(
            str(row["chat"]),
            str(row["issue_id"]),
            str(row["label"]),
            str(row["title"] or ""),
            _taker(tx, takes, str(row["key"])),
            text_or_null(row["status"]),
            float_or_null(row["acted_at"]),
            first[key],
        )
        for key, row in latest.items()
    ]


def _taker(tx: Tx, takes: Takes | None, key: str) -> str | None:
    """Who has the issue on this card's row, if anyone."""
    take = takes.of_row(tx, key) if takes is not None else None
    return take.by if take is not None else None


def _report(
    tx: Tx,
    takes: Takes | None,
    place: Destination | None,
    start: float,
    zone: tzinfo,
    made: Sequence[tuple[str, int]],
) -> Report:
    since = tx.at.to_db(start)
    issues = _issues(tx, takes, place, since)
    first_takes = _first_takes(tx, takes, place, since)
    take = [
        taken_at - issue.first_at
        for issue in issues
        if (taken_at := first_takes.get((issue.chat, issue.issue_id), (None, None))[1]) is not None
    ]
    resolve = [
        i.acted_at - i.first_at for i in issues if i.status == "resolved" and i.acted_at is not None
    ]
    takers = _takers(first_takes.values())
    still = [i.as_open() for i in issues if i.open]
    return Report(
        start=start,
        end=tx.at.local,
        alerts=_alerts(tx, place, since),
        issues=len(issues),
        taken=len(take),
        take_median=_median(take),
        take_worst=max(take, default=None),
        resolved=len(resolve),
        resolve_median=_median(resolve),
        resolve_worst=max(resolve, default=None),
        calls=_calls(tx, place, since, made),
        takers=takers,
        open_count=len(still),
        open=still[:OPEN_LISTED],
        **_counted(tx, place, since, (start, tx.at.local), zone),
    )


# Levels from the most severe: a message is counted at its most severe issue's.
LEVELS = ("fatal", "error", "warning", "info", "other")


def _counted(
    tx: Tx, place: Destination | None, since: float, period: tuple[float, float], zone: tzinfo
) -> dict[str, Any]:
    """The alerts of the period by day (every day of it, in `zone`) and level, and by place."""
    worst: dict[tuple[str, int], tuple[int, float, str]] = {}
    for row in records.alerts_since(tx, place, since):
        level = str(row["level"] or "other")
        rank = LEVELS.index(level) if level in LEVELS else LEVELS.index("other")
        where = str(row["chat"]) + (f"/{row['thread']}" if row["thread"] is not None else "")
        key = (where, int(row["message_id"]))
        sent_at = tx.at.to_local(float(row["sent_at"]))
        if key not in worst or rank < worst[key][0]:
            worst[key] = (rank, sent_at, where)
    days = _days(*period, zone)
    by_day: dict[str, dict[str, int]] = {day: {} for day in days}
    by_place: dict[str, int] = {}
    for rank, sent_at, where in worst.values():
        day = by_day.setdefault(datetime.fromtimestamp(sent_at, zone).strftime("%Y-%m-%d"), {})
        day[LEVELS[rank]] = day.get(LEVELS[rank], 0) + 1
        by_place[where] = by_place.get(where, 0) + 1
    return {"by_day": dict(sorted(by_day.items())), "by_place": by_place}


def _days(start: float, end: float, zone: tzinfo) -> list[str]:
    """Every day from `start`'s to `end`'s, in `zone`."""
    first = datetime.fromtimestamp(start, zone).date()
    last = datetime.fromtimestamp(end, zone).date()
    return [str(first + timedelta(days=n)) for n in range((last - first).days + 1)]


@dataclass(frozen=True)
class _Taker:
    """Who took an issue: their Telegram id (None for a take kept without one), and their name
    as shown then."""

    id: int | None
    shown: str


def _takers(takes: Iterable[tuple[_Taker, float]]) -> dict[str, int]:
    """Issues taken, by person: counted by Telegram's id, never by the name shown (two people
    may show one name, and anyone may take another's), each named as last shown, and their id
    said where two share a name. Most first."""
    counted: dict[int | str, int] = {}
    named: dict[int | str, str] = {}
    for taker, _ in takes:
        who: int | str = taker.id if taker.id is not None else taker.shown
        counted[who] = counted.get(who, 0) + 1
        named[who] = taker.shown
    shared = {name for name, people in Counter(named.values()).items() if people > 1}
    shown = {
        who: f"{name} (id {who})" if name in shared and isinstance(who, int) else name
        for who, name in named.items()
    }
    ranked = sorted(((shown[who], n) for who, n in counted.items()), key=lambda kv: (-kv[1], kv[0]))
    return dict(ranked)


def _first_takes(
    tx: Tx, takes: Takes | None, place: Destination | None, since: float
) -> dict[tuple[str, str], tuple[_Taker, float]]:
    """Each issue's first take in the period (kept after a Let go): who, and when."""
    found: dict[tuple[str, str], tuple[_Taker, float]] = {}
    for take in takes.since(tx, place, since) if takes is not None else []:
        found.setdefault((take.chat, take.issue_id), (_Taker(take.by_id, take.by), float(take.at)))
    return found


def _alerts(tx: Tx, place: Destination | None, since: float) -> int:
    return len(records.messages_since(tx, place, since))


def _calls(tx: Tx, place: Destination | None, since: float, made: Sequence[tuple[str, int]]) -> int:
    """The calls made (as on call lends them) under the period's messages in the place."""
    messages = set(records.messages_since(tx, place, since))
    return sum(1 for call in made if call in messages)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None
