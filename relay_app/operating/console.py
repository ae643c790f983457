"""What every `relay-app` command writes to, and the two ways one fails (cli.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO


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
