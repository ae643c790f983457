"""What each capability adds to the core, registered here and nowhere else: the shapes of alert
its jobs hold and how they are rendered, the first lines it puts above a webhook's message, and
its `relay-app` subcommands. The core (delivery/, spool/, intake/, operating/) knows none of
them; the wiring (relay_app/__init__.py, cli.py) hands these to it."""

from __future__ import annotations

from .chat import link_card
from .delivery.render import Note, Shape
from .intake import hidden
from .oncall import direct, handoff_text
from .oncall.cli import add_oncall_command, roster_with_covers
from .operating.console import AddCommands
from .parts import sentry_page
from .sentry.check import sentry_verdicts
from .silences import summary as silence_summary
from .silences.cli import add_silence_commands
from .summaries import text as summary_text
from .summaries.cli import add_report_command, add_summary_command
from .watch import watcher

# Alerts that are not a webhook's: told apart by the key of their data.
SHAPES: tuple[Shape, ...] = (
    silence_summary.SHAPE,
    summary_text.SHAPE,
    handoff_text.SHAPE,
    link_card.SHAPE,
    direct.SHAPE,
)
NOTES: tuple[Note, ...] = (watcher.ESCALATING, hidden.NAMED_HIDDEN)
# Who is on duty for `relay-app routes test`: the rotations with the covers the spool keeps.
ROSTER = roster_with_covers
# Their pages beside the core's: Sentry's webhook, with SENTRY_CLIENT_SECRET.
PAGES = (sentry_page,)
# What `relay-app check` asks of them: Sentry's token, URL and secret.
CHECKS = (sentry_verdicts,)
# Their `relay-app` subcommands, after the core's own.
COMMANDS: tuple[AddCommands, ...] = (
    add_silence_commands,
    add_oncall_command,
    add_summary_command,
    add_report_command,
)
