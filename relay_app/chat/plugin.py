"""Acting from the chat, as a capability: what handles each of Telegram's updates (a press, a
reply, a command, a link, and the kinds of update the capabilities before it registered), this
process's poller for them (TELEGRAM_UPDATES=poll, run where the fleet's leader is), and the
budget that keeps what people type behind the alerts. It starts last: the buttons' presses, the
commands and the kinds of update of the capabilities before it are its to dispatch. It provides
the core's UPDATES (the webhook's view hands it what Telegram posts) and COMMANDS (the list
Telegram offers)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..cards.card import SentMessage
from ..cards.ignore_choices import SNOOZING
from ..cards.presses import PRESS_THREADS, PRESSES_WAITING, PressActions, Presses
from ..cards.sent import THREAD_CARD
from ..cards.taking import Taking
from ..cards.team import Person, Team
from ..cards.verbs import CALLS
from ..core.errors import SpoolError
from ..core.off_thread import OffThread
from ..core.routing import chat_key
from ..core.typed import user_id_of
from ..glitchtip.api import ISSUE_ACTIONS
from ..message.open_issues import CHAT_ISSUES
from ..operating.capability import Capability, Core, Running
from ..operating.config import Settings
from ..spool import Spool
from ..telegram.bot_commands import COMMANDS, BotCommand
from ..telegram.client import TelegramClient
from ..telegram.people import PEOPLE, People
from ..telegram.poller import Poller
from ..telegram.updates_webhook import UPDATES
from ..words import Words
from . import link_card
from .answers import Answering, Asker, Served
from .commands import Askers, BotName, Commands, Status, status_command
from .counters import ANSWERS_REFUSED, LINK_CARDS, REPLIES
from .counters import COMMANDS as COMMANDS_COUNTED
from .issues import issues_command
from .links import LINK_SOURCES, LINKS, Links, LinkSource
from .replies import Replies
from .scope import ChatScope
from .updates import route_updates

log = logging.getLogger(__name__)


def _start(core: Core) -> Running:
    """With GLITCHTIP_API_TOKEN or Sentry's (and a spool to keep the sent messages in): what
    handles each update, and with TELEGRAM_UPDATES=poll this process's poller for them, which
    polls while this process leads the fleet."""
    settings, spool = core.settings, core.spool
    trackers = core.services.find(ISSUE_ACTIONS)
    if not settings.acts_on_issues or spool is None or trackers is None:
        return Running()
    people = core.services.find(PEOPLE)
    answering = Answering(
        core.outbox,
        spool.answers,
        first_in=lambda key, window: core.sent_store(spool).first_in(
            key, window=window, at=core.clock()
        ),
        refused=lambda reason: core.metrics.of(ANSWERS_REFUSED).labels(reason).inc(),
        shared=spool.warnings.says,
        clock=core.clock,
    )
    team = Team(
        store=core.sent_store(spool),
        glitchtip=trackers,
        allowed_users=settings.action_user_ids,
        words=core.words,
        metrics=core.metrics,
        clock=core.clock,
        met=met_by(people),
    )
    sources = core.services.find(LINK_SOURCES)
    links = _links(core, spool, answering, sources if sources is not None else ())
    if links is not None:
        core.services.provide(LINKS, links)
    # Presses and replies' comments are handled off the thread that read their update: polled,
    # the one that reads them all; posted, the request Telegram waits on before it posts the
    # next (an update answered at once lets the next come). Off, no update comes.
    acting = (
        OffThread("relay-presses", threads=PRESS_THREADS, most_waiting=PRESSES_WAITING)
        if settings.telegram_updates != "off"
        else None
    )
    calls = core.services.find(CALLS)
    actions = PressActions(
        buttons=core.buttons,
        theirs=core.before.presses,
        calls=calls,
        snoozing=lambda: core.services.find(SNOOZING),
        pressed_elsewhere=people.pressed_privately if people is not None else None,
        budget=answered_under(answering),
        sources=core.sources,
    )
    listed = _listed(core, spool)
    core.services.provide(COMMANDS, listed)
    commands = _commands(core, spool, answering, people, listed)
    route = route_updates(
        Presses(team, core.telegram, core.outbox, actions, core.zone_of, acting=acting),
        Replies(
            team,
            answering,
            bot_id=bot_id(settings.telegram_bot_token),
            taking=Taking(team.store, core.outbox, calls, clock=core.clock),
            acting=acting,
            thread_card=core.services.find(THREAD_CARD),
        ),
        commands,
        links,
        by_kind=core.before.updates,
    )
    core.services.provide(UPDATES, route)
    poller = _poller(settings, spool, core.term, route)

    def stop() -> None:
        for part in (poller, links, acting):
            if part is not None:
                part.shutdown()

    return Running(chores=(poller,) if poller is not None else (), stop=stop)


def _poller(
    settings: Settings, spool: Spool, term: Callable[[], str | None], route: Callable[..., None]
) -> Poller | None:
    """With TELEGRAM_UPDATES=poll: this process's poll for the updates, while it leads."""
    if settings.telegram_updates != "poll":
        return None
    return Poller(
        client=TelegramClient(settings.telegram_api_url, settings.telegram_bot_token),
        offset=spool.leader,
        term=term,
        handle=route,
        attempt_timeout=settings.send_timeout,
        timing=settings.timing,
    )


def _listed(core: Core, spool: Spool) -> tuple[BotCommand, ...]:
    """The chat's commands, in the order Telegram lists them: `/issues`, those of the
    capabilities started before (`/oncall`, `/cover`, `/start`, `/silences`), `/status`."""
    health = core.health

    def status(words: Words, chat: str) -> Status:
        telegram = health.current().sending
        paused = spool.glitchtip_health.paused()
        counts = spool.admin.counts()
        more = (line(chat, words) for line in core.before.status)
        return Status(
            telegram=words.status_telegram_up if telegram else words.status_telegram_down,
            glitchtip=(
                words.status_glitchtip_off
                if core.settings.glitchtip_api_token is None
                else words.status_glitchtip_failing
                if paused
                else words.status_glitchtip_up
            ),
            queue=words.status_queue.format(pending=counts["pending"], dead=counts["dead"]),
            more=tuple(said for said in more if said),
        )

    return (
        issues_command(
            core.lending.of(CHAT_ISSUES, spool),
            every=core.settings.watching.every,
            clock=core.clock,
        ),
        *core.before.commands,
        status_command(status),
    )


def _commands(
    core: Core,
    spool: Spool,
    answering: Answering,
    people: People | None,
    listed: Sequence[BotCommand],
) -> Commands:
    """What answers the chat's commands: what the relay knows, in the chats it serves."""
    settings, clock = core.settings, core.clock
    served = Served(
        frozenset(served_chats(settings)),
        BotName(settings.telegram_api_url, settings.telegram_bot_token),
    )
    return Commands(
        commands=listed,
        served=served,
        first_time=lambda keys: core.sent_store(spool).first_time(keys, at=clock()),
        answering=answering,
        words=core.words,
        count=lambda command: core.metrics.of(COMMANDS_COUNTED).labels(command).inc(),
        askers=Askers(
            may_act=lambda person: (
                not settings.action_user_ids or person.id in settings.action_user_ids
            ),
            met=met_by(people),
        ),
    )


def _links(
    core: Core, spool: Spool, answering: Answering, sources: Sequence[LinkSource]
) -> Links | None:
    """Links to the sources' issues pasted in the chats the relay serves, answered with cards
    of the issues each chat follows."""
    settings = core.settings
    if not sources:
        return None
    scope = ChatScope(
        settings.routes,
        settings.default_destination,
        watched=core.lending.of(CHAT_ISSUES, spool),
        sent=core.sent_store(spool),
        glitchtip_orgs=settings.glitchtip_organizations,
    )
    return Links(
        served=Served(frozenset(served_chats(settings))),
        sources=sources,
        answering=answering,
        scope=scope,
        count=lambda outcome: core.metrics.of(LINK_CARDS).labels(outcome).inc(),
    )


def answered_under(answering: Answering) -> Callable[[int, SentMessage], bool]:
    """Whether a press may have an answer written under its card (a chart): the presser's and
    the chat's typed-input budget, spent when it may."""

    def may(by: int, card: SentMessage) -> bool:
        return answering.may_answer(Asker(card.chat, card.thread, card.message_id, str(by)))

    return may


def met_by(people: People | None) -> Callable[[Person], None]:
    """Keep the name and username of someone who asked or acted in a chat the relay serves
    (a call by `tg:<id>` shows the name), where someone keeps them (on call); what the spool
    cannot keep now waits for next time."""

    def met(person: Person) -> None:
        if people is None or person.id is None or person.id <= 0:
            return
        try:
            people.met(person.id, person.username, person.name)
        except SpoolError as exc:
            log.debug("%s could not be kept as met: %s", person.handle, exc)

    return met


def served_chats(settings: Settings) -> set[str]:
    """The chats the relay posts to, which its commands and links answer in."""
    return {
        chat_key(settings.default_destination.chat),
        *settings.allowed_chat_ids,
        *(chat_key(chat) for chat in settings.routes.chats),
    }


def bot_id(token: str) -> int | None:
    """The bot's own user id: the part of its token before the colon."""
    head = token.partition(":")[0]
    return user_id_of(head)


CAPABILITY = Capability(
    "chat",
    counters=(REPLIES, COMMANDS_COUNTED, LINK_CARDS, ANSWERS_REFUSED),
    shapes=(link_card.SHAPE,),
    start=_start,
    dispatches=True,
)
