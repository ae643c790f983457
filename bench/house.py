"""The shape of the house: relay_app and tests by package, as a report, not a gate.

For each package of relay_app (and the tests as one): its modules, its lines, its longest
module, the functions of each radon rank (closures ranked as the functions they are) and those
at complexity 9 or 10, and the functions that take seven parameters or more. Counts are for
reading, not for meeting: a module is as long as its one job needs, and a function is cut along
its jobs, never to sit under a number (tests/test_layout.py keeps the layering and the rank C
limit). Run by hand:

    .venv/bin/python bench/house.py
"""

from __future__ import annotations

import ast
import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from radon.complexity import cc_rank, cc_visit
from radon.visitors import Function

ROOT = Path(__file__).resolve().parents[1]
MANY_PARAMETERS = 7


def with_closures(blocks: list[Any]) -> Iterator[Any]:
    for block in blocks:
        yield block
        if isinstance(block, Function):
            yield from with_closures(block.closures)


def parameters(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """Each function's name and its parameters, `self` and `cls` left out."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
            names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
            yield node.name, len([n for n in names if n not in ("self", "cls")])


def package_of(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if parts[0] == "tests":
        return "tests/" + (parts[1] + "/" if len(parts) > 2 else "")
    return "/".join(parts[:2]) + "/" if len(parts) > 2 else parts[0] + "/ (the wiring)"


def main() -> None:
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    longest: dict[str, tuple[int, str]] = {}
    many: list[str] = []
    files = sorted([*(ROOT / "relay_app").rglob("*.py"), *(ROOT / "tests").rglob("*.py")])
    for path in files:
        text = path.read_text()
        package = package_of(path)
        lines = len(text.splitlines())
        row = rows[package]
        row["modules"] += 1
        row["lines"] += lines
        if lines > longest.get(package, (0, ""))[0]:
            longest[package] = (lines, path.name)
        if package.startswith("tests"):
            continue
        for block in with_closures(cc_visit(text)):
            row[f"rank {cc_rank(block.complexity)}"] += 1
            row["at 9 or 10"] += block.complexity in (9, 10)
        for name, count in parameters(ast.parse(text)):
            if count >= MANY_PARAMETERS:
                many.append(f"{path.relative_to(ROOT)}: {name} ({count})")
    print("| package | modules | lines | longest | rank A / B / C | at 9 or 10 |")
    print("|---|---:|---:|---|---|---:|")
    for package in sorted(rows):
        row = rows[package]
        ranks = " / ".join(str(row[f"rank {r}"]) for r in "ABC")
        code = not package.startswith("tests")
        print(
            f"| `{package}` | {row['modules']} | {row['lines']:,} "
            f"| {longest[package][1]} ({longest[package][0]}) "
            f"| {ranks if code else ''} | {row['at 9 or 10'] if code else ''} |"
        )
    for whole in ("relay_app", "tests"):
        total = sum(r["lines"] for p, r in rows.items() if p.startswith(whole))
        print(f"\n{whole}: {total:,} lines", end="")
    print(f"\n\nFunctions of {MANY_PARAMETERS} parameters or more: {len(many)}")
    for each in many:
        print(f"- {each}")


if __name__ == "__main__":
    main()
