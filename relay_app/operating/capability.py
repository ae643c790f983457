"""The capability contract: what one feature adds to the relay, declared in one object and reached
only through the registry (relay_app/capabilities.py). The core builds itself, asks each
capability once whether it is on (`on`, from the settings), and hands the ones that are its
services (`Core`); a capability's running parts come back as `Running`.

What a capability may declare, each optional:
- `settings`: what it reads of the environment itself (operating/settings_of.py: GlitchTip's
  GLITCHTIP_* variables, Sentry's SENTRY_*), read with every other variable, its problems
  reported with theirs;
- `source`: the source of alerts it is (core/sources.py), and where its issues get buttons;
- `counters`: its metrics (core/metrics.py registers them, their names and help its own);
- `shapes` and `notes`: the alerts its jobs hold and the first lines it puts above a webhook's
  message (delivery/render.py);
- `buttons`: the buttons it adds to every issue's row of a card, and (from `start`) what a
  press of each does (cards/verbs.py);
- `marks`: what it says of an issue on each of the issue's cards in a chat (a mute, until when,
  by whom), read from its own tables with the card (cards/marks.py); never kept in the card;
  `row_marks`: the same, kept by each card's row rather than by the issue (who is on it), told
  when a card's rows are kept and forgotten;
- `words`: the words its buttons and answers say, per language, beside the catalogue's;
- `cli`: its `relay-app` subcommands; `checks`: what `relay-app check` asks of its settings;
  `readers`: how `preview` and `routes test` read its source's webhooks (operating/readers.py);
  `roster`: who is on duty for `relay-app routes test` (on call's); `says`: for a source of
  alerts, its state in the start-up line and `relay-app check` (asked of every capability, on
  or off: off, it says what would turn it on);
- `tables`: the tables it owns: only its own modules name them in SQL (tests/test_tables.py);
  a table it adds after the history's last step its own store makes where it is not yet
  (`CREATE TABLE IF NOT EXISTS`, in the spool's types: `spool.dialects.types_of`);
- `lends`: what the others may read of its tables, each a store named by a key of the core's
  (`core.services.Lent`), made on a spool where it is asked for (`Core.lending`, and
  `CommandLine.lending` for its commands): the relay and a command-line run alike;
- `writers`: its kinds of write to the chat: a job kind, and the Bot API write it makes
  (delivery/render.py's `Writer`), queued through the outbox (`Outbox.write`);
- `start`: given the core's services, its running parts: the presses of its buttons, the
  chat's commands it answers, its upkeep (run by the fleet's leader, at each look at the
  queue), what follows a delivery, where an alert goes when it is sent (`places`,
  delivery/placing.py's `Placing`), its lines of `/status` (`service_status` for an outside
  service it calls, beside Telegram's), its writes as they run (`writers`, with its store),
  for a source its issues' details (`details`, core/lookups.py), and how it stops; what it
  provides to other capabilities and to the core it provides then (`core.services.provide`:
  what follows a webhook, `intake/record.py`'s AFTER_WEBHOOK; the cards the watcher's rounds
  keep in step, `cards/in_step.py`'s FOLLOWS_ROUNDS).

A capability talks to another only through a service the core defines (a Protocol in the core,
such as `cards.verbs.Calls`, named by a `core.services.Key`) and the other provides; never by
importing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from typing import Any

from ..cards.in_step import CardsInStep
from ..cards.marks import MarkReader, Marks, RowMarks
from ..cards.sent import SentStore
from ..cards.team import Team, met_by
from ..cards.verbs import CALLS, Button, Press
from ..core.lookups import DetailSource
from ..core.metrics import CounterSpec, Metrics
from ..core.off_thread import OffThread
from ..core.services import Lending, Lent, Services
from ..core.sources import Source, Sources
from ..core.trackers import IssueActions, TrackerApi
from ..delivery.health import Health
from ..delivery.job import FollowUp
from ..delivery.leadership import Chore
from ..delivery.outbox import Outbox
from ..delivery.placing import Placing
from ..delivery.render import Note, Shape, Writer
from ..intake.pages import Feed, Page
from ..intake.record import LastWebhook
from ..message.subjects import Home, IssueHomes
from ..spool import Spool
from ..telegram.bot_commands import BotCommand
from ..telegram.courier import Telegram
from ..telegram.people import PEOPLE
from ..telegram.updates_webhook import Handler
from ..words import Words
from .config import Settings
from .console import AddCommands
from .readers import PayloadReader
from .routes_cli import RosterOf
from .selfcheck import MoreChecks
from .settings_of import SettingsOf
from .sources import SaysState

Clock = Callable[[], float]


@dataclass(frozen=True)
class Core:
    """The core's services, as a capability's `start` gets them."""

    settings: Settings
    spool: Spool | None  # None with RELAY_SPOOL_PATH=off
    shared: Spool  # the spool, or with RELAY_SPOOL_PATH=off this process's memory
    metrics: Metrics
    clock: Clock
    outbox: Outbox
    words: Words
    services: Services
    # The zone a chat reads times in: its routes' `timezone`, else RELAY_TIMEZONE.
    zone_of: Callable[[str], tzinfo]
    # Telegram's Bot API (a press's answer), whether it answers, and this process's term as
    # the fleet's leader while it leads (None otherwise).
    telegram: Telegram
    health: Health
    term: Callable[[], str | None]
    # When a source last reached the relay (/readyz, `check`): a page of a capability's notes it.
    last_webhook: LastWebhook
    # The sources of alerts (an issue's source, from its id or its alert's name), and where
    # each one's issue links must be for its issues to get buttons (those with a token).
    sources: Sources
    homes: IssueHomes
    # The buttons of the capabilities that are on, and what those started before this one
    # added (their commands, lines of /status): acting from the chat starts last.
    buttons: tuple[Button, ...] = ()
    before: Started = field(default_factory=lambda: Started())
    # The stores the capabilities that are on lend one another (their `lends`).
    lending: Lending = field(default_factory=Lending)
    # What the capabilities that are on mark on an issue's cards (a mute), read with a card.
    marks: Marks = field(default_factory=Marks)
    # The threads a press or a comment is handled on, off the one that read its update (None:
    # no update comes, TELEGRAM_UPDATES=off): the core's presses and the chat's replies share
    # them, and the relay stops them.
    acting: OffThread | None = None

    def sent_store(self, spool: Spool) -> SentStore:
        """The cards kept on `spool`, each read with the marks of the capabilities that are
        on: what every capability that reads a card asks for."""
        return spool.of(lambda store: SentStore(store, self.marks))

    def team(self, spool: Spool, trackers: IssueActions) -> Team:
        """Who may act from the chat (TELEGRAM_ACTION_USER_IDS), what they act on and with, and
        who they are kept as once met (on call's people): a press's and a reply's alike."""
        return Team(
            store=self.sent_store(spool),
            trackers=trackers,
            allowed_users=self.settings.action_user_ids,
            words=self.words,
            metrics=self.metrics,
            clock=self.clock,
            met=met_by(self.services.find(PEOPLE)),
        )

    def cards_in_step(self, spool: Spool, *, origin: str, source: str) -> CardsInStep:
        """The cards kept in step with what a source says of its issues (cards/in_step.py),
        for the buttons whose links are `origin`'s: what the watcher's rounds, a snooze that
        comes back and Sentry's issue webhook each bring the cards in step with."""
        return CardsInStep(
            self.sent_store(spool),
            self.outbox,
            origin=origin,
            escalation=self.services.find(CALLS),
            metrics=self.metrics,
            clock=self.clock,
            source=source,
        )


@dataclass(frozen=True)
class Running:
    """A started capability's parts, as the core runs them."""

    presses: Mapping[str, Press] = field(default_factory=dict)  # by its buttons' verbs
    # The chat's commands it answers, in the order Telegram lists them (after the core's
    # `/issues`, before `/status`).
    commands: Sequence[BotCommand] = ()
    # The kinds of Telegram's update it handles (`my_chat_member`), each by its handler.
    updates: Mapping[str, Handler] = field(default_factory=dict)
    # Its threads that run where the fleet's leader is (the updates' poller): started as this
    # process comes to lead, stopped when it no longer does.
    chores: Sequence[Chore] = ()
    # Its pages beside the core's (a path that takes a POST), each made once the relay is
    # assembled (None: not served with these settings).
    pages: Sequence[Callable[[], Page | None]] = ()
    # Its feeds (a prefix whose paths take a GET), each made once the relay is assembled.
    feeds: Sequence[Callable[[], Feed | None]] = ()
    upkeep: Sequence[Callable[[], object]] = ()
    follow_ups: Sequence[FollowUp] = ()
    # Where an alert goes when it is sent, where it says so (a forum topic of its issue's own).
    places: Sequence[Placing] = ()
    # Its kinds of write as they run here, with what they keep of Telegram's answers (its
    # store): in place of those it declares (`Capability.writers`, which write a job it left
    # in the spool when it is off).
    writers: Sequence[Writer] = ()
    # A line of /status for a chat (its id), in the chat's words; None: nothing to say there.
    status: Sequence[Callable[[str, Words], str | None]] = ()
    # Its line of /status about an outside service it calls (GlitchTip's API: answers, or
    # paused after failing), said beside Telegram's, above the queue's.
    service_status: Sequence[Callable[[str, Words], str | None]] = ()
    # Its source's issues' details, looked up for alerts' messages (core/lookups.py): the
    # wiring looks each source's up with a cache, pool and pause of its own.
    details: Sequence[DetailSource] = ()
    stop: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class Started:
    """The capabilities started, their parts together as the core runs them."""

    parts: tuple[Running, ...] = ()

    @property
    def presses(self) -> dict[str, Press]:
        return {verb: press for part in self.parts for verb, press in part.presses.items()}

    @property
    def updates(self) -> dict[str, Handler]:
        return {kind: handler for part in self.parts for kind, handler in part.updates.items()}

    @property
    def commands(self) -> list[BotCommand]:
        return [command for part in self.parts for command in part.commands]

    @property
    def chores(self) -> list[Chore]:
        return [chore for part in self.parts for chore in part.chores]

    @property
    def pages(self) -> list[Callable[[], Page | None]]:
        return [page for part in self.parts for page in part.pages]

    @property
    def feeds(self) -> list[Callable[[], Feed | None]]:
        return [feed for part in self.parts for feed in part.feeds]

    @property
    def upkeep(self) -> list[Callable[[], object]]:
        return [chore for part in self.parts for chore in part.upkeep]

    @property
    def follow_ups(self) -> list[FollowUp]:
        return [each for part in self.parts for each in part.follow_ups]

    @property
    def writers(self) -> list[Writer]:
        return [each for part in self.parts for each in part.writers]

    @property
    def places(self) -> list[Placing]:
        return [each for part in self.parts for each in part.places]

    @property
    def status(self) -> list[Callable[[str, Words], str | None]]:
        return [each for part in self.parts for each in part.status]

    @property
    def service_status(self) -> list[Callable[[str, Words], str | None]]:
        return [each for part in self.parts for each in part.service_status]

    @property
    def details(self) -> list[DetailSource]:
        return [each for part in self.parts for each in part.details]

    def stop(self) -> None:
        for part in self.parts:
            part.stop()


def _always(settings: Settings) -> bool:
    return True


def _no_api(settings: Settings, timeout: float) -> TrackerApi | None:
    return None


@dataclass(frozen=True)
class SourceOf:
    """A source of alerts as the relay is assembled with it: the `Source` the core reads
    (core/sources.py); where its issue links must be for its issues to get buttons, from the
    settings (None: it has no token, and its issues get none); its tracker's API from its token,
    each call within a timeout (None: no token); and the variable that token is."""

    source: Source
    home: Callable[[Settings], Home | None]
    api: Callable[[Settings, float], TrackerApi | None] = _no_api
    token_name: str = ""
    # Whether the settings name where it is (GLITCHTIP_URL): with another source's, an alert's
    # heading that names a rule says whose it is.
    configured: Callable[[Settings], bool] = _always


@dataclass(frozen=True)
class Capability:
    """One feature, all it adds (the module's docstring says what each field is)."""

    name: str
    on: Callable[[Settings], bool] = _always
    counters: tuple[CounterSpec, ...] = ()
    shapes: tuple[Shape, ...] = ()
    notes: tuple[Note, ...] = ()
    buttons: tuple[Button, ...] = ()
    marks: tuple[MarkReader, ...] = ()
    row_marks: tuple[RowMarks, ...] = ()
    # Per language ('en', 'ru'): a word's name, and its text.
    words: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    cli: tuple[AddCommands, ...] = ()
    checks: tuple[MoreChecks, ...] = ()
    readers: tuple[PayloadReader, ...] = ()
    says: tuple[SaysState, ...] = ()
    roster: RosterOf | None = None
    tables: tuple[str, ...] = ()
    lends: tuple[Lent[Any], ...] = ()
    writers: tuple[Writer, ...] = ()
    start: Callable[[Core], Running] | None = None
    # Whether it answers the commands the others add (acting from the chat: it lists them to
    # Telegram): it starts after all of them, wherever the registry lists it. Their presses
    # and kinds of update are the core's to dispatch (cards/presses/, telegram/updates.py).
    dispatches: bool = False
    # The source of alerts it is (its issues' ids and links, its name, where they get buttons).
    source: SourceOf | None = None
    # What it reads of the environment itself (Sentry's SENTRY_* variables), read with every
    # other variable (`Settings.of(...)` gives it back), whether it is on or not: `on` asks it.
    settings: SettingsOf[Any] | None = None

    def __post_init__(self) -> None:
        # Settings are kept by their capability's name (`Settings.of`): one each, as names are.
        if self.settings is not None and self.settings.name != self.name:
            raise ValueError(
                f"the capability {self.name}'s settings are named {self.settings.name}"
            )


@dataclass(frozen=True)
class Registry:
    """The capabilities, in the order their buttons, shapes and subcommands come."""

    capabilities: tuple[Capability, ...]
    # The sources read before those of the capabilities listed (`on` keeps here those of the
    # capabilities it leaves out, so that an issue kept of a source since turned off is never
    # read as another's); the first one's ids have no prefix.
    sources_first: tuple[SourceOf, ...] = ()

    def __post_init__(self) -> None:
        _one_each("capability", [each.name for each in self.capabilities])
        _one_each("button verb", [b.verb for b in self.buttons])
        _one_each("button code", [b.code for b in self.buttons])
        _one_each("table", [table for each in self.capabilities for table in each.tables])
        _one_each("lent store", [lent.key.name for lent in self.lent])
        _one_each("kind of write", [writer.kind for writer in self.writers])
        _one_each("dispatcher", [each.dispatches for each in self.capabilities if each.dispatches])

    def on(self, settings: Settings) -> Registry:
        """Those the settings turn on: asked once, here."""
        # Every source stays known, on or not: an issue kept of a source since turned off is
        # still its, never another's.
        return Registry(
            tuple(each for each in self.capabilities if each.on(settings)),
            self.sources_declared,
        )

    @property
    def sources_declared(self) -> tuple[SourceOf, ...]:
        known = {each.source.name for each in self.sources_first}
        theirs = (
            each.source
            for each in self.capabilities
            if each.source is not None and each.source.source.name not in known
        )
        return (*self.sources_first, *theirs)

    @property
    def sources(self) -> Sources:
        return Sources(each.source for each in self.sources_declared)

    def homes(self, settings: Settings) -> IssueHomes:
        """Where each source's issues get buttons: those with a token, each at its home."""
        found = ((each.source, each.home(settings)) for each in self.sources_declared)
        return IssueHomes(tuple((source, home) for source, home in found if home is not None))

    @property
    def settings(self) -> tuple[SettingsOf[Any], ...]:
        """What every capability reads of the environment itself: `Settings.from_env`'s
        `theirs` (read before the settings say which are on), a source's with its name, which
        a route's `source` may name (`sources_named`)."""
        return tuple(
            replace(each.settings, source=each.source.source.name)
            if each.source is not None
            else each.settings
            for each in self.capabilities
            if each.settings is not None
        )

    @property
    def counters(self) -> list[CounterSpec]:
        return [spec for each in self.capabilities for spec in each.counters]

    @property
    def shapes(self) -> list[Shape]:
        return [shape for each in self.capabilities for shape in each.shapes]

    @property
    def notes(self) -> list[Note]:
        return [note for each in self.capabilities for note in each.notes]

    @property
    def writers(self) -> list[Writer]:
        return [writer for each in self.capabilities for writer in each.writers]

    @property
    def buttons(self) -> list[Button]:
        return [button for each in self.capabilities for button in each.buttons]

    @property
    def marks(self) -> Marks:
        return Marks(
            [read for each in self.capabilities for read in each.marks],
            [rows for each in self.capabilities for rows in each.row_marks],
        )

    @property
    def lent(self) -> list[Lent[Any]]:
        return [lent for each in self.capabilities for lent in each.lends]

    @property
    def lending(self) -> Lending:
        return Lending(self.lent)

    @property
    def cli(self) -> list[AddCommands]:
        return [add for each in self.capabilities for add in each.cli]

    @property
    def checks(self) -> list[MoreChecks]:
        return [check for each in self.capabilities for check in each.checks]

    @property
    def readers(self) -> list[PayloadReader]:
        return [reader for each in self.capabilities for reader in each.readers]

    @property
    def says(self) -> list[SaysState]:
        return [say for each in self.capabilities for say in each.says]

    @property
    def roster(self) -> RosterOf | None:
        return next((each.roster for each in self.capabilities if each.roster), None)

    def words(self, language: str) -> dict[str, str]:
        """Their words in a language, in English where one has none in it."""
        return {
            name: text
            for each in self.capabilities
            for name, text in each.words.get(language, each.words.get("en", {})).items()
        }

    def words_in(self, words: Words) -> Words:
        """The catalogue, with their words in its language (itself when they have none)."""
        theirs = tuple(self.words(words.language).items())
        return replace(words, theirs=theirs, sources=self.sources)

    def start(self, core: Core) -> Started:
        """Each capability that starts, in the registry's order: a service one provides is
        there for those after it, and each is told what those before it started."""
        parts: list[Running] = []
        for each in sorted(self.capabilities, key=lambda capability: capability.dispatches):
            if each.start is not None:
                parts.append(each.start(replace(core, before=Started(tuple(parts)))))
        return Started(tuple(parts))


def _one_each(what: str, names: Iterable[Any]) -> None:
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"the {what} {name!r} is registered twice")
        seen.add(name)
