"""A figure drawn as a PNG, in a process of its own (draw.py): off the webhook's and the
dispatcher's threads, bounded in memory (DRAW_MEMORY, its address space) and in time (its
processor time, and DRAW_WITHIN on the wall clock, after which it is killed), and given no
variable of the relay's environment (no token reaches it). Its spec is the caller's, made of
numbers and words (a chart of an issue, the weekly report)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from .errors import DrawingFailed

log = logging.getLogger(__name__)

# A drawing process, at most: its address space (matplotlib and numpy take about 80 MB of
# memory, and reserve more), its processor time and its time on the wall clock.
DRAW_MEMORY = 512 * 1024 * 1024
DRAW_CPU = 10
DRAW_WITHIN = 15.0
# What a PNG of a figure's size may be, at most (Telegram takes 10 MB; one is about 40 KB).
MOST_BYTES = 2 * 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n"
# The drawing process's program, run as a file and not as a module of the package: importing
# relay_app (Flask, the whole relay) would cost each picture half a second. `-P` keeps its
# directory off the import path, so no module beside it shadows one of the standard library's.
DRAW_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "draw.py")
# Bars by level, in the colours the cards' and the topics' icons say them; one not said, grey.
LEVEL_COLOURS = {
    "fatal": "#8b0000",
    "error": "#d9534f",
    "warning": "#f0ad4e",
    "info": "#5bc0de",
    "other": "#999999",
}


def draw(
    spec: dict[str, Any],
    *,
    within: float = DRAW_WITHIN,
    memory: int = DRAW_MEMORY,
    cpu: int = DRAW_CPU,
) -> bytes:
    """The figure's PNG. Raises DrawingFailed: the process ran out of time or memory, failed,
    or wrote something that is not a PNG of a sensible size."""
    started = time.monotonic()
    try:
        done = subprocess.run(  # noqa: S603 (this interpreter, this module: no input of anyone's)
            [sys.executable, "-P", DRAW_SCRIPT, str(memory), str(cpu)],
            input=json.dumps(spec).encode(),
            capture_output=True,
            timeout=within,
            env=_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DrawingFailed(f"the picture was not drawn within {within:.0f} s (killed)") from None
    except OSError as exc:
        raise DrawingFailed(f"the drawing process could not start: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1][:300] if said else f"exit status {done.returncode}"
        raise DrawingFailed(f"the drawing process failed: {why}")
    png = done.stdout
    if not png.startswith(PNG) or len(png) > MOST_BYTES:
        raise DrawingFailed(f"the drawing process wrote {len(png)} bytes, not a PNG")
    log.debug("a picture drawn in %.2f s (%d bytes)", time.monotonic() - started, len(png))
    return png


def _environment() -> dict[str, str]:
    """The drawing process's: where Python and matplotlib's font cache are, and nothing of
    the relay's (its tokens and secrets stay in the relay)."""
    cache = os.path.join(tempfile.gettempdir(), f"relay-app-matplotlib-{os.getuid()}")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    kept = {name: os.environ[name] for name in ("PATH", "LANG", "TZ") if name in os.environ}
    return {
        **kept,
        "MPLCONFIGDIR": cache,
        "MPLBACKEND": "Agg",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(path for path in sys.path if path),
    }
