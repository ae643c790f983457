"""On it, as a capability: 👀 On it and ↩️ Let go first on every open issue's row, who has each
issue in a chat shown on its cards (a mark kept by each card's row), On it said by a reply (the
chat's replies ask `ON_IT`), and the takes lent to those that read them (`TAKES`: on call's
recalls, the weekly report, `/issues`, the board). It owns `issue_takes` (who has each row's
issue now) and `takes` (every take, kept after a Let go for the report)."""

from __future__ import annotations

from ..cards.marks import RowMarks
from ..cards.takers import ON_IT, TAKES
from ..cards.verbs import CALLS
from ..core.services import Lent
from ..operating.capability import Capability, Core, Running
from . import store
from .buttons import LET_GO, TAKE, presses
from .store import TakesStore
from .taking import Taking


def _start(core: Core) -> Running:
    """This process's takes: the presses of its buttons, and On it for the chat's replies."""
    taking = core.shared.of(
        lambda kept: Taking(
            kept,
            core.outbox,
            # Asked at each take: on call provides its calls when it starts, before or after.
            lambda: core.services.find(CALLS),
            clock=core.clock,
        )
    )
    core.services.provide(ON_IT, taking)
    return Running(presses=presses(taking))


CAPABILITY = Capability(
    "takes",
    buttons=(TAKE, LET_GO),
    row_marks=(RowMarks(store.marks, store.carried, store.forget),),
    tables=("issue_takes", "takes"),
    # Its reads run in the asker's units of work, whatever spool it is asked on.
    lends=(Lent(TAKES, lambda store: TakesStore()),),
    words={
        "en": {
            "button_take": "👀 On it",
            "taken_by": "👀 {user} is on it since {time}",
            "issue_taken_by": "👀 {user} is on {label} since {time}",
            "notice_taken": "You are on {label}: the chat sees it, and nobody else is called",
            "button_let_go": "↩️ Let go",
            "notice_let_go": "You let {label} go: it is nobody's, and the calls go on",
            "let_go_not_yours": "Only {user} can let it go: it is theirs.",
        },
        "ru": {
            "button_take": "👀 Беру",
            "taken_by": "👀 {user} занимается этим с {time}",
            "issue_taken_by": "👀 {user} занимается {label} с {time}",
            "notice_taken": "{label} за вами: чат это видит, больше никого не зовём",
            "button_let_go": "↩️ Отпустить",
            "notice_let_go": "Вы отпустили {label}: она ничья, вызовы продолжаются",
            "let_go_not_yours": "Отпустить может только {user}: проблема за ним.",
        },
    },
    start=_start,
)
