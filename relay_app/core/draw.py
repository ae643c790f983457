"""The drawing process: `python -P relay_app/core/draw.py MEMORY CPU` reads a figure's spec
(JSON) on stdin and writes its PNG on stdout (run as a file: the relay's package is never
imported here). It bounds itself before it imports anything large: its
address space to MEMORY bytes and its processor time to CPU seconds (the parent also kills it
after its wall-clock deadline: drawing.py). Matplotlib is imported here and nowhere else, so
the relay's processes never load it: their start and the webhook's answer do not pay for it.

A spec is numbers and words alone, made by the relay (never a request's bytes): a title, and
panels one above the other, each bars (`counts`), stacked bars (`stacks`: a name and its
counts, each with its colour) or horizontal bars (`values` with their `names`), with tick
labels, dashed marks and a note at its right.
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


def _bars(ax: Any, panel: dict[str, Any]) -> None:
    if "stacks" in panel:
        bottom = [0] * len(panel["labels"])
        for stack in panel["stacks"]:
            counts = [int(n) for n in stack["counts"]]
            ax.bar(
                range(len(counts)),
                counts,
                bottom=bottom,
                color=str(stack["colour"]),
                width=0.8,
                label=str(stack["name"]),
            )
            bottom = [b + n for b, n in zip(bottom, counts, strict=True)]
        if panel["stacks"]:
            ax.legend(fontsize=8, loc="upper left", frameon=False)
    else:
        counts = [int(n) for n in panel["counts"]]
        ax.bar(range(len(counts)), counts, color=str(panel.get("colour") or "#d9534f"), width=0.8)
    ticks = [int(n) for n in panel.get("ticks", range(len(panel["labels"])))]
    ax.set_xticks(ticks, [str(panel["labels"][n]) for n in ticks], fontsize=8)
    ax.set_xlim(-0.6, len(panel["labels"]) - 0.4)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.grid(axis="y", alpha=0.3)


def _horizontal(ax: Any, panel: dict[str, Any]) -> None:
    values = [float(n) for n in panel["values"]]
    names = [str(name) for name in panel["names"]]
    ax.barh(range(len(values)), values, color=str(panel.get("colour") or "#5bc0de"))
    ax.set_yticks(range(len(values)), names, fontsize=8)
    ax.invert_yaxis()
    for n, text in enumerate(panel.get("shown") or ()):
        ax.annotate(
            str(text),
            (values[n], n),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    ax.grid(axis="x", alpha=0.3)
    ax.margins(x=0.18)  # room for the words at the longest bar's end


def _panel(ax: Any, panel: dict[str, Any]) -> None:
    (_horizontal if panel.get("kind") == "horizontal" else _bars)(ax, panel)
    ax.set_title(str(panel["title"]), fontsize=10, loc="left")
    if panel.get("note"):
        ax.set_title(str(panel["note"]), fontsize=8, loc="right", color="#555555")
    ax.tick_params(axis="both", labelsize=8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    bars = len(panel.get("labels") or ())
    for mark in panel.get("marks") or ():
        at = float(mark["at"])
        ax.axvline(at, color="#555555", linestyle="--", linewidth=1)
        # Its words on the side with room: left of a mark near the right edge.
        right = at > 0.75 * bars
        ax.annotate(
            str(mark["label"]),
            (at, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-3 if right else 3, -10),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize=8,
            color="#333333",
        )


def render(spec: dict[str, Any]) -> bytes:
    """The figure as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    panels = list(spec["panels"])
    heights = [float(panel.get("height", 1)) for panel in panels]
    figure = Figure(figsize=(8, 1.0 + 1.2 * sum(heights)), dpi=100, layout="constrained")
    axes = figure.subplots(len(panels), 1, height_ratios=heights, squeeze=False)
    figure.suptitle(str(spec["title"]), fontsize=12, x=0.01, ha="left", fontweight="bold")
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        _panel(ax, panel)
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
