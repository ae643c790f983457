"""How far a newcomer reads before seeing an alert: the README measured, printed as a table.

    .venv/bin/python bench/readme.py

Counts the README's lines and words up to the quick start step whose command puts the first
alert in the chat (the curl of a sample payload), and in all, and the commands typed on the way.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
FIRST_ALERT = "the alert is in your chat"


def main() -> None:
    text = README.read_text()
    lines = text.splitlines()
    until = next(n for n, line in enumerate(lines, 1) if FIRST_ALERT in line)
    before = "\n".join(lines[:until])
    quick_start = before.split("## Quick start", 1)[1]
    commands = [
        line
        for block in re.findall(r"```sh\n(.*?)```", quick_start, re.DOTALL)
        for line in block.splitlines()
        if line.strip()
    ]
    rows = [
        ("lines until the first alert", str(until)),
        ("words until the first alert", str(len(before.split()))),
        ("commands typed in the quick start until then", str(len(commands))),
        ("README lines in all", str(len(lines))),
        ("README bytes in all", str(len(text.encode()))),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"| {'README.md'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|------:|")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value:>5} |")


if __name__ == "__main__":
    main()
