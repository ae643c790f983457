"""The package's shape, as the design says it (docs/development.md): the core's packages in
layers, the capabilities above them all, each module importing only from its own layer and those
below it, without cycles, so the core imports no capability; at most two module-level
objects that hold state; at most three functions of radon rank C (closures ranked as the
functions they are), none worse; a relay on a file loads no PostgreSQL driver. How long the
modules are, and how many functions sit near a rank's edge, is a report (bench/house.py), not a
gate: a module is as long as its one job needs."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path, PurePath
from types import MappingProxyType, ModuleType
from typing import Any

from radon.complexity import cc_rank, cc_visit
from radon.visitors import Function

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "relay_app"
# The core, bottom first: what every capability stands on, knowing none of them.
CORE = [
    "core",
    "words",
    "issue_api",
    "routes",
    "message",
    "telegram",
    "spool",
    "delivery",
    "cards",
    "intake",
    "operating",
]
# One layer: each registers what it adds when the relay is assembled; one may use another's
# parts (a press mutes), never in a cycle.
CAPABILITIES = [
    "glitchtip",
    "takes",
    "silences",
    "snoozes",
    "oncall",
    "watch",
    "summaries",
    "chat",
    "sentry",
    "rooms",
    "board",
    "charts",
]
# A capability talks to another through a service the core defines (operating/capability.py),
# never by importing it. What is left of before, by importer: the list only shrinks, and is
# empty now.
STILL_IMPORTED: dict[str, set[str]] = {}
# Above them: the relay's HTTP server. The wiring (relay_app/__init__.py, cli.py,
# capabilities.py) sits above them all.
TOP = ["web"]
LAYERS = [*CORE, "capabilities", *TOP]
MAX_STATEFUL_MODULE_OBJECTS = 2
MAX_RANK_C = 3
# Values that hold no state of their own: what a module may keep at its top level freely.
IMMUTABLE = (
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type(None),
    tuple,
    frozenset,
    range,
    re.Pattern,
    Enum,
    MappingProxyType,
    type,
    ModuleType,
    PurePath,  # a path is a value: its methods make new ones
)
# The methods by which a dict, list or set at a module's top level would be changed.
MUTATORS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "remove"}
    | {"discard", "clear", "sort", "reverse", "__setitem__", "__delitem__"}
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The relay_app modules `name` imports, type-only imports included."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from package import module` imports the module.
            targets = [f"{source}.{alias.name}" for alias in node.names]
            targets = [t if t in known else source for t in targets]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def is_wiring(name: str) -> bool:
    """The package's own modules (relay_app/__init__.py, cli.py, capabilities.py)."""
    parts = name.split(".")
    return len(parts) == 1 or (len(parts) == 2 and (PACKAGE / f"{parts[1]}.py").is_file())


def layer_of(name: str) -> int:
    parts = name.split(".")
    if is_wiring(name):
        return len(LAYERS)
    return LAYERS.index("capabilities" if parts[1] in CAPABILITIES else parts[1])


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def test_every_module_sits_in_a_layer_of_the_design() -> None:
    strays = [
        name
        for name in modules()
        if not is_wiring(name) and name.split(".")[1] not in [*CORE, *CAPABILITIES, *TOP]
    ]
    assert strays == []


def test_no_import_runs_back_up_a_layer() -> None:
    upward = [
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(name)
    ]
    assert upward == []


def test_a_capability_imports_no_other_but_those_left_to_undo() -> None:
    found: dict[str, set[str]] = {}
    for name, targets in graph().items():
        importer = name.split(".")[1] if not is_wiring(name) else None
        for target in targets:
            imported = target.split(".")[1] if not is_wiring(target) else None
            if importer in CAPABILITIES and imported in CAPABILITIES and imported != importer:
                found.setdefault(importer, set()).add(imported)
    # One gone: take it off STILL_IMPORTED. One more: ask for it through a service instead.
    assert found == STILL_IMPORTED


def test_the_imports_have_no_cycle() -> None:
    edges = graph()
    cycles = []
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(edges[name]):
            if state.get(target) == "open":
                cycles.append(" -> ".join([*trail[trail.index(target) :], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def top_level_names(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        names += [target.id for target in targets if isinstance(target, ast.Name)]
    return names


def changed_names(tree: ast.Module) -> set[str]:
    """The names a module rebinds from a function (`global`) or changes in place (an item or
    attribute set, a mutating method called on them)."""
    changed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            changed.update(node.names)
        elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(
            node.ctx, ast.Store | ast.Del
        ):
            if isinstance(node.value, ast.Name):
                changed.add(node.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and isinstance(node.func.value, ast.Name)
        ):
            changed.add(node.func.value.id)
    return changed


def holds_state(value: Any) -> bool:
    """An object at a module's top level that keeps state: anything but a value type, a frozen
    dataclass, a function, a typing construct or a logger (logging owns those)."""
    if isinstance(value, (*IMMUTABLE, logging.Logger)) or callable(value):
        return False
    if dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen:  # type: ignore[union-attr]
        return False
    return type(value).__module__ not in ("typing", "types")


def stateful_module_objects() -> Iterator[str]:
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        module = importlib.import_module(name)
        changed = changed_names(tree)
        for attribute in top_level_names(tree):
            if attribute.startswith("__"):
                continue  # __all__ and the like
            value = getattr(module, attribute)
            mutable_container = isinstance(value, dict | list | set | bytearray)
            if mutable_container and attribute not in changed:
                continue  # a table only read: a constant, whatever its type
            if mutable_container or holds_state(value):
                yield f"{name}.{attribute}"


def test_state_at_a_modules_top_level_is_rare() -> None:
    """State has one owner, an object that a process makes and stops; what a module keeps at
    its top level for the whole process is the exception. Counted as objects, not `global`
    statements: an object changed in place is state all the same."""
    stateful = list(stateful_module_objects())
    assert len(stateful) <= MAX_STATEFUL_MODULE_OBJECTS, stateful


def test_the_state_count_sees_what_holds_state() -> None:
    # Those it must find, and those it must not, so that the gate above cannot pass blind.
    tree = ast.parse(
        "import threading\nseen = {}\nTABLE = {'a': 1}\n_lock = threading.Lock()\n"
        "def f():\n    seen['x'] = 1\n    return TABLE['a']\n"
    )
    assert changed_names(tree) == {"seen"}
    assert top_level_names(tree) == ["seen", "TABLE", "_lock"]
    assert holds_state(logging.Formatter())
    assert not holds_state(re.compile("x"))
    assert not holds_state(logging.getLogger("relay_app"))


def with_closures(blocks: list[Any]) -> Iterator[Any]:
    """Every function, and every function defined inside one (radon ranks a closure apart,
    and does not add it to its parent: a handler written as a closure would pass unseen)."""
    for block in blocks:
        yield block
        if isinstance(block, Function):
            yield from with_closures(block.closures)


def test_functions_stay_simple() -> None:
    ranked = [
        (f"{name}.{block.fullname}", cc_rank(block.complexity))
        for name, path in modules().items()
        for block in with_closures(cc_visit(path.read_text()))
    ]
    worse = [(where, rank) for where, rank in ranked if rank > "C"]
    rank_c = [where for where, rank in ranked if rank == "C"]
    assert worse == []
    assert len(rank_c) <= MAX_RANK_C, rank_c


def test_closures_are_ranked_too() -> None:
    source = "def outer():\n    def inner(x):\n" + "".join(
        f"        if x == {n}:\n            return {n}\n" for n in range(12)
    )
    names = [
        (block.fullname, cc_rank(block.complexity)) for block in with_closures(cc_visit(source))
    ]
    assert ("inner", "C") in names


def test_the_development_guide_lists_every_module_under_its_layer() -> None:
    """docs/development.md's table is the map of the tree: a module it does not name, or names
    under another layer, is a map that misleads."""
    guide = (PACKAGE.parent / "docs" / "development.md").read_text()
    listed: set[tuple[str, str]] = set()
    layer = ""
    for row in guide.splitlines():
        cells = [cell.strip() for cell in row.replace("\\|", "").strip("|").split("|")]
        if not row.startswith("| ") or len(cells) != 3:
            continue
        layer = cells[0].strip("`/") or layer
        listed.update((layer, named.strip()) for named in cells[1].replace("`", "").split(","))
    unlisted = []
    for name, path in modules().items():
        parts = name.split(".")
        if len(parts) < 3:
            continue  # the wiring and the layers' own packages
        within = path.relative_to(PACKAGE / parts[1])  # 'presses/receive.py' in a subpackage
        if within.parts[0] == "postgres":
            named = "postgres/"  # listed whole
        elif len(within.parts) > 1:
            named = f"{within.parts[0]}/" if within.name == "__init__.py" else within.as_posix()
        else:
            named = path.name
        if (parts[1], named) not in listed:
            unlisted.append(name)
    assert unlisted == []


def test_a_relay_on_a_file_does_not_load_the_postgresql_driver(tmp_path: Path) -> None:
    # psycopg (and asyncio, which it imports) are over a quarter of the import (bench/start.py): the
    # gunicorn master, and each `relay-app` run. Only a spool in PostgreSQL needs them.
    environ = {
        "PATH": os.environ.get("PATH", ""),
        "TELEGRAM_BOT_TOKEN": "123456789:AAE-never-used-here-only-imported-0123",
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": "a-secret-of-enough-length-for-the-check",
        "RELAY_SPOOL_PATH": str(tmp_path / "spool.sqlite3"),
    }
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, wsgi, relay_app.cli; print(*sys.modules)"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert "relay_app.cli" in loaded
    assert [name for name in loaded if name.split(".")[0] in ("psycopg", "psycopg_pool")] == []
    # Nor what only a picture or a calendar needs: the relay's start does not pay for them.
    assert [n for n in loaded if n.split(".")[0] in ("matplotlib", "numpy", "icalendar")] == []
