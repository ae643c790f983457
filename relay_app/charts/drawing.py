"""A chart drawn as a PNG, in a process of its own (draw.py): off the webhook's and the
dispatcher's threads, bounded in memory (DRAW_MEMORY, its address space) and in time (its
processor time, and DRAW_WITHIN on the wall clock, after which it is killed), and given no
variable of the relay's environment (no token reaches it). What it draws is made here from
numbers and the catalogue's words: the issue's events by hour over 24 hours and by day over
7 days in the chat's time zone, first seen marked where it falls, the release named."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from ..core.errors import DrawingFailed
from ..words import Words
from .series import DAY, HOUR, Series

log = logging.getLogger(__name__)

# A chart's drawing process, at most: its address space (matplotlib and numpy take about
# 80 MB of memory, and reserve more), its processor time and its time on the wall clock.
DRAW_MEMORY = 512 * 1024 * 1024
DRAW_CPU = 10
DRAW_WITHIN = 15.0
# What a PNG of the chart's size may be, at most (Telegram takes 10 MB; one is about 30 KB).
MOST_BYTES = 2 * 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n"
# The image's title, at most (characters of the title).
TITLE_SHOWN = 70
# Bar colours by level, as the card's and the topic's icons say them.
COLOURS = {"fatal": "#8b0000", "error": "#d9534f", "warning": "#f0ad4e", "info": "#5bc0de"}


def spec_of(
    series: Series,
    *,
    label: str,
    title: str,
    words: Words,
    zone: tzinfo,
    level: str | None = None,
) -> dict[str, Any]:
    """What the drawing process is given: bars, tick labels and marks, and words."""
    hour_start = series.hour_end - HOUR * (len(series.hourly) - 1)
    day_start = series.day_end - DAY * (len(series.daily) - 1)
    hours = [_local(hour_start + HOUR * n, zone).strftime("%H:%M") for n in range(24)]
    days = [_local(day_start + DAY * n, zone).strftime("%d.%m") for n in range(7)]
    heading = title if len(title) <= TITLE_SHOWN else title[: TITLE_SHOWN - 1] + "…"
    subtitle = [str(getattr(zone, "key", "") or zone.tzname(None) or "")]
    if series.release:
        subtitle.insert(0, words.word("chart_release").format(release=series.release))
    return {
        "title": f"{label} · {heading}",
        "subtitle": " · ".join(part for part in subtitle if part),
        "colour": COLOURS.get(level or "", COLOURS["error"]),
        "hours": {
            "title": words.word("chart_hours"),
            "counts": list(series.hourly),
            "labels": hours,
            "ticks": list(range(2, 24, 3)),  # every third hour, the current one last
            "marks": _marks(series.first_seen, hour_start, HOUR, 24, words),
        },
        "days": {
            "title": words.word("chart_days"),
            "counts": list(series.daily),
            "labels": days,
            "ticks": list(range(7)),
            "marks": _marks(series.first_seen, day_start, DAY, 7, words),
        },
    }


def _local(at: float, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(at, zone)


def _marks(
    first_seen: float | None, start: int, span: int, count: int, words: Words
) -> Sequence[dict[str, Any]]:
    """First seen, where it falls within these bars (at its place within its bar)."""
    if first_seen is None or not start <= first_seen < start + span * count:
        return []
    return [{"at": (first_seen - start) / span - 0.5, "label": words.word("chart_first_seen")}]


def draw(
    spec: dict[str, Any],
    *,
    within: float = DRAW_WITHIN,
    memory: int = DRAW_MEMORY,
    cpu: int = DRAW_CPU,
) -> bytes:
    """The chart's PNG. Raises DrawingFailed: the process ran out of time or memory, failed,
    or wrote something that is not a PNG of a sensible size."""
    started = time.monotonic()
    try:
        done = subprocess.run(  # noqa: S603 (this interpreter, this module: no input of anyone's)
            [sys.executable, "-m", "relay_app.charts.draw", str(memory), str(cpu)],
            input=json.dumps(spec).encode(),
            capture_output=True,
            timeout=within,
            env=_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DrawingFailed(f"the chart was not drawn within {within:.0f} s (killed)") from None
    except OSError as exc:
        raise DrawingFailed(f"the chart's drawing process could not start: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1][:300] if said else f"exit status {done.returncode}"
        raise DrawingFailed(f"the chart's drawing process failed: {why}")
    png = done.stdout
    if not png.startswith(PNG) or len(png) > MOST_BYTES:
        raise DrawingFailed(f"the chart's drawing process wrote {len(png)} bytes, not a PNG")
    log.debug("a chart drawn in %.2f s (%d bytes)", time.monotonic() - started, len(png))
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
