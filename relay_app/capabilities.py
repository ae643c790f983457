"""The registry: every capability the relay has, one line each (operating/capability.py says what
one declares). The core knows none of them; the wiring (relay_app/__init__.py, cli.py) hands
it theirs, asks each once whether it is on, and starts those that are."""

from __future__ import annotations

from .board import plugin as board
from .charts import plugin as charts
from .chat import plugin as chat
from .glitchtip import plugin as glitchtip
from .oncall import plugin as oncall
from .operating.capability import Registry
from .rooms import plugin as rooms
from .sentry import plugin as sentry
from .silences import plugin as silences
from .snoozes import plugin as snoozes
from .summaries import plugin as summaries
from .takes import plugin as takes
from .watch import plugin as watch

REGISTRY = Registry(
    (
        # The relay's first source: its issues' ids have no prefix. It starts first: the
        # watcher follows the cards it keeps in step.
        glitchtip.CAPABILITY,
        # Its buttons lead every open issue's row.
        takes.CAPABILITY,
        oncall.CAPABILITY,
        silences.CAPABILITY,
        summaries.CAPABILITY,
        watch.CAPABILITY,
        snoozes.CAPABILITY,
        sentry.CAPABILITY,
        rooms.CAPABILITY,
        board.CAPABILITY,
        charts.CAPABILITY,
        # It dispatches the others' presses, commands and kinds of update: it starts last.
        chat.CAPABILITY,
    ),
)
