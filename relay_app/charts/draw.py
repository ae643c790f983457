"""The drawing process: `python -m relay_app.charts.draw MEMORY CPU` reads a chart's spec (JSON)
on stdin and writes its PNG on stdout. It bounds itself before it imports anything large: its
address space to MEMORY bytes and its processor time to CPU seconds (the parent also kills it
after its wall-clock deadline: drawing.py). Matplotlib is imported here and nowhere else, so
the relay's processes never load it: their start and the webhook's answer do not pay for it.

The spec is made by drawing.py from numbers and words alone (never a request's bytes): bars
over hours and days, their tick labels, where first seen falls, a title and a subtitle.
"""

from __future__ import annotations

import io
import json
import resource
import sys
from typing import Any


def _bounded(memory: int, cpu: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))


def _panel(ax: Any, panel: dict[str, Any], colour: str) -> None:
    counts = [int(n) for n in panel["counts"]]
    ax.bar(range(len(counts)), counts, color=colour, width=0.8)
    ax.set_title(str(panel["title"]), fontsize=10, loc="left")
    ticks = [int(n) for n in panel["ticks"]]
    ax.set_xticks(ticks, [str(panel["labels"][n]) for n in ticks], fontsize=8)
    ax.set_xlim(-0.6, len(counts) - 0.4)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for mark in panel.get("marks") or ():
        ax.axvline(float(mark["at"]), color="#555555", linestyle="--", linewidth=1)
        ax.annotate(
            str(mark["label"]),
            (float(mark["at"]), 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -10),
            textcoords="offset points",
            fontsize=8,
            color="#333333",
        )


def render(spec: dict[str, Any]) -> bytes:
    """The chart as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.8), dpi=100, layout="constrained")
    top, bottom = figure.subplots(2, 1, height_ratios=[3, 2])
    figure.suptitle(str(spec["title"]), fontsize=12, x=0.01, ha="left", fontweight="bold")
    colour = str(spec.get("colour") or "#d9534f")
    _panel(top, spec["hours"], colour)
    _panel(bottom, spec["days"], colour)
    if spec.get("subtitle"):
        bottom.set_title(str(spec["subtitle"]), fontsize=8, loc="right", color="#555555")
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def main(argv: list[str]) -> int:
    memory, cpu = int(argv[1]), int(argv[2])
    _bounded(memory, cpu)
    spec = json.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(render(spec))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
