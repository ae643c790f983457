"""What every `relay-app` command writes to, the two ways one fails, the spool its spool and
silence commands open (cli.py), and what a capability's subcommands are given when they are
added (`CommandLine`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from ..core.services import Lending
from ..core.sources import Sources
from .config import Settings
from .settings_of import SettingsOf, sources_named

if TYPE_CHECKING:
    from ..delivery.render import Shape
    from ..spool import Spool


class Failed(Exception):
    """Reported on stderr; exit code 1."""


class Usage(Exception):
    """Reported on stderr; exit code 2."""


@dataclass(frozen=True)
class Console:
    environ: Mapping[str, str]
    out: TextIO
    err: TextIO
    stdin: TextIO
    # What the capabilities read of the environment themselves (the registry's), read with
    # the rest wherever a command reads the relay's settings (`settings`).
    theirs: Sequence[SettingsOf[Any]]

    def settings(self) -> Settings:
        """The relay's settings from this environment. Raises ConfigError."""
        return Settings.from_env(self.environ, self.theirs)

    @property
    def route_sources(self) -> tuple[str, ...]:
        """What a route's `source` may name: the registry's sources."""
        return sources_named(self.theirs)


OpenSpool = Callable[[Mapping[str, str]], "Spool"]
SpoolCommand = Callable[["Spool", argparse.Namespace, Console], int]
# '7d', '12h' or seconds, as a command's argument (cli.py's parse_duration).
Duration = Callable[[str], float]


@dataclass(frozen=True)
class CommandLine:
    """What a capability's `relay-app` subcommands are added with (relay_app/cli.py registers
    them): argparse's subparsers, how a command opens the spool, how it reads a duration, the
    alerts' shapes the capabilities registered (to show a job's text), and the stores they
    lend one another (`lending.of(KEY, spool)`)."""

    commands: Any  # argparse's _SubParsersAction, a private name
    open_spool: OpenSpool
    duration: Duration
    sources: Sources
    shapes: Sequence[Shape] = ()
    lending: Lending = field(default_factory=Lending)


AddCommands = Callable[[CommandLine], None]


def with_spool(
    open_spool: OpenSpool, command: SpoolCommand
) -> Callable[[argparse.Namespace, Console], int]:
    """A command that works on the spool the environment names, closed when it is done."""

    def run(args: argparse.Namespace, console: Console) -> int:
        spool = open_spool(console.environ)
        try:
            return command(spool, args, console)
        finally:
            spool.close()

    return run


def print_table(rows: Sequence[Sequence[str]], out: TextIO, *, indent: str = "") -> None:
    """Rows in columns as wide as their widest cell; the last column as long as it is."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print((indent + "  ".join([*cells, row[-1]])).rstrip(), file=out)
