"""Silences, as a capability: Mute and Unmute on every card, `relay-app silence`, the alerts a
silence held summed up when it ends, and the tables that keep them."""

from __future__ import annotations

from ..core.routing import Destination
from ..intake.hold import HELD_NOTED, HOLD
from ..operating.capability import Capability, Core, Running
from . import summary
from .buttons import MUTE, UNMUTE, presses
from .cli import add_silence_commands
from .command import silences_command
from .counters import ALERTS_SILENCED
from .gauges import SilenceGauges
from .marks import muted
from .silencing import Silencing
from .store import SilenceStore


def _start(core: Core) -> Running:
    """This process's silencing: it holds alerts (the core's `Hold`), answers Mute and Unmute,
    and ends the silences that ran out where the fleet's leader is."""
    counted = core.metrics.of(ALERTS_SILENCED)

    def held(destination: Destination) -> None:
        counted.inc()
        # Asked when an alert is held: the summaries start in their turn, before or after.
        if (noted := core.services.find(HELD_NOTED)) is not None:
            noted.held(destination)

    silencing = Silencing(
        core.shared.of(SilenceStore),
        core.sent_store(core.shared),
        outbox=core.outbox,
        held=held,
        clock=core.clock,
    )
    core.services.provide(HOLD, silencing)
    if core.spool is not None:
        core.metrics.add_gauges(SilenceGauges(core.spool.of(SilenceStore)))
    listed = silences_command(core.shared.of(SilenceStore), clock=core.clock, zone_of=core.zone_of)
    return Running(presses=presses(silencing), commands=(listed,), upkeep=(silencing.sweep,))


CAPABILITY = Capability(
    "silences",
    counters=(ALERTS_SILENCED,),
    shapes=(summary.SHAPE,),
    buttons=(MUTE, UNMUTE),
    marks=(muted,),
    words={
        "en": {
            "muted_by": "🔇 Muted in this chat by {user} until {until}",
            "issue_muted_by": "🔇 {label} muted in this chat by {user} until {until}",
        },
        "ru": {
            "muted_by": "🔇 Без звука в этом чате до {until} ({user})",
            "issue_muted_by": "🔇 {label}: без звука в этом чате до {until} ({user})",
        },
    },
    cli=(add_silence_commands,),
    tables=("silences", "held_alerts"),
    start=_start,
)
