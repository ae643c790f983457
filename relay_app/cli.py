"""`relay-app`, as installed (pyproject.toml): the command line of operating/cli.py with the
subcommands and alert shapes the capabilities register (capabilities.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from .capabilities import REGISTRY
from .operating import cli
from .operating.console import Console
from .operating.routes_cli import rotations_only


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Its exit code; the environment and streams are the process's unless given."""
    console = Console(
        os.environ if environ is None else environ,
        out or sys.stdout,
        err or sys.stderr,
        stdin or sys.stdin,
        REGISTRY.settings,
    )
    return cli.run(
        argv,
        console,
        sources=REGISTRY.sources,
        added=REGISTRY.cli,
        shapes=REGISTRY.shapes,
        roster_of=REGISTRY.roster or rotations_only,
        checks=REGISTRY.checks,
        readers=REGISTRY.readers,
        said=REGISTRY.says,
        lending=REGISTRY.lending,
    )
