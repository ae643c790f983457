"""Acting from the chat, as a capability: what handles a person's message (a command, a reply,
a link: the `message` kind of Telegram's updates, which the core routes here beside its own
presses: telegram/updates.py), and the budget that keeps what people type behind the alerts,
which the core's presses that write an answer (a chart) spend too (`PRESS_ANSWER_BUDGET`). It
starts last: the commands of the capabilities before it are its to list and answer. It
provides the core's COMMANDS (the list Telegram offers)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..cards.card import SentMessage
from ..cards.presses.presses import PRESS_ANSWER_BUDGET
from ..cards.sent import THREAD_CARD
from ..cards.takers import ON_IT
from ..cards.team import met_by
from ..core.routing import chat_key
from ..core.trackers import ISSUE_ACTIONS, TRACKERS
from ..core.typed import user_id_of
from ..message.open_issues import CHAT_ISSUES
from ..operating.capability import Capability, Core, Running
from ..operating.config import Settings
from ..spool import Spool
from ..telegram.bot_commands import COMMANDS, BotCommand
from ..telegram.people import PEOPLE, People
from ..words import Words
from . import link_card
from .answers import Answering, Asker, Served
from .commands import Askers, BotName, Commands, Status, status_command
from .counters import ANSWERS_REFUSED, LINK_CARDS, REPLIES
from .counters import COMMANDS as COMMANDS_COUNTED
from .issues import issues_command
from .links import LINKS, Links, LinkSource
from .messages import Messages
from .replies import Replies
from .scope import ChatScope

log = logging.getLogger(__name__)


def _start(core: Core) -> Running:
    """With GLITCHTIP_API_TOKEN or Sentry's (and a spool to keep the sent messages in): what
    handles a person's message (a command, a reply, a link: the `message` kind of update), and
    the typed-input budget the presses that write an answer spend too."""
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
    core.services.provide(PRESS_ANSWER_BUDGET, answered_under(answering))
    team = core.team(spool, trackers)
    links = _links(core, spool, answering, link_sources(core))
    if links is not None:
        core.services.provide(LINKS, links)
    listed = _listed(core, spool)
    core.services.provide(COMMANDS, listed)
    commands = _commands(core, spool, answering, people, listed)
    replies = Replies(
        team,
        answering,
        bot_id=bot_id(settings.telegram_bot_token),
        # On it's, which every capability started before the chat's provides.
        taking=core.services.find(ON_IT),
        # Off the thread that read the update, on the threads the presses are handled on.
        acting=core.acting,
        thread_card=core.services.find(THREAD_CARD),
    )

    def stop() -> None:
        if links is not None:
            links.shutdown()

    return Running(updates={"message": Messages(replies, commands, links)}, stop=stop)


def _listed(core: Core, spool: Spool) -> tuple[BotCommand, ...]:
    """The chat's commands, in the order Telegram lists them: `/issues`, those of the
    capabilities started before (`/oncall`, `/cover`, `/start`, `/silences`), `/status`."""
    health = core.health

    def status(words: Words, chat: str) -> Status:
        telegram = health.current().sending
        counts = spool.admin.counts()
        services = (line(chat, words) for line in core.before.service_status)
        more = (line(chat, words) for line in core.before.status)
        return Status(
            telegram=words.status_telegram_up if telegram else words.status_telegram_down,
            services=tuple(said for said in services if said),
            queue=words.status_queue.format(pending=counts["pending"], dead=counts["dead"]),
            more=tuple(said for said in more if said),
        )

    return (
        issues_command(
            core.lending.of(CHAT_ISSUES, spool),
            core.sources,
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


def link_sources(core: Core) -> list[LinkSource]:
    """The sources with a token whose issue links get cards, each at its home's address (and
    any other its links are written at: sentry.io's customer domains)."""
    trackers = core.services.find(TRACKERS)
    if trackers is None:
        return []
    found = []
    for source, home in core.homes.homes:
        api = trackers.api_of(source)
        if api is not None:
            written_as = home.written_as or _none_of_its
            found.append(LinkSource(home.origin, api, source, written_as))
    return found


def _none_of_its(link: str) -> str | None:
    return None


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
        homes=core.homes,
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
