"""What every `relay-app` command writes to, the two ways one fails, and the spool its spool
and silence commands open (cli.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
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


OpenSpool = Callable[[Mapping[str, str]], "Spool"]
SpoolCommand = Callable[["Spool", argparse.Namespace, Console], int]


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
