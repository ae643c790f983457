"""The package's shape, as the design says it: modules grouped by role into layers, each
importing only from its own layer and those below it, without cycles; no module over 500
lines; at most two `global` statements; at most three functions of radon rank C, none worse."""

from __future__ import annotations

import ast
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

PACKAGE = Path(__file__).resolve().parents[1] / "relay_app"
# Bottom first. The app's wiring (relay_app/__init__.py) sits above them all.
LAYERS = [
    "core",
    "words",
    "glitchtip",
    "message",
    "telegram",
    "spool",
    "delivery",
    "acting",
    "operating",
    "web",
]
MAX_LINES = 500
MAX_GLOBALS = 2
MAX_RANK_C = 3


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


def layer_of(name: str) -> int:
    parts = name.split(".")
    if len(parts) == 1:
        return len(LAYERS)  # the wiring
    return LAYERS.index(parts[1])


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def test_every_module_sits_in_a_layer_of_the_design() -> None:
    strays = [name for name in modules() if "." in name and name.split(".")[1] not in LAYERS]
    assert strays == []


def test_no_import_runs_back_up_a_layer() -> None:
    upward = [
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(name)
    ]
    assert upward == []


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


def test_no_module_is_over_500_lines() -> None:
    long = {
        name: lines
        for name, path in modules().items()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_globals_are_rare() -> None:
    statements = [
        f"{name}:{node.lineno}"
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
    ]
    assert len(statements) <= MAX_GLOBALS, statements


def test_functions_stay_simple() -> None:
    ranked = [
        (f"{name}.{block.fullname}", cc_rank(block.complexity))
        for name, path in modules().items()
        for block in cc_visit(path.read_text())
    ]
    worse = [(where, rank) for where, rank in ranked if rank > "C"]
    rank_c = [where for where, rank in ranked if rank == "C"]
    assert worse == []
    assert len(rank_c) <= MAX_RANK_C, rank_c


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
        named = "postgres/" if parts[2] == "postgres" else path.name
        if (parts[1], named) not in listed:
            unlisted.append(name)
    assert unlisted == []
