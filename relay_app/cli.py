"""`relay-app`, as installed (pyproject.toml): the command line of operating/cli.py with the
subcommands and alert shapes the capabilities register (capabilities.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TextIO

from .capabilities import COMMANDS, SHAPES
from .operating import cli


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    return cli.main(
        argv, environ=environ, out=out, err=err, stdin=stdin, added=COMMANDS, shapes=SHAPES
    )
