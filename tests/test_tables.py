"""Each table has one owner: only the modules of the package that owns it name it in SQL. A
capability's tables are those it declares (`Capability.tables`); the rest are the core's, each
named by one core package. Another capability reaches them through the owner's functions
(cards/records.py for the cards' tables), never by its own statements. Read from every string
of SQL in the package, so what the import test cannot see (a join across features) is seen.

The schema's past (spool/history.py and legacy_sqlite.py, which take an old spool to today)
names every table, as an upgrade must; the current schema's files are not Python."""

from __future__ import annotations

import ast
import re
import sqlite3
from collections import defaultdict
from pathlib import Path

from relay_app.capabilities import REGISTRY
from relay_app.spool.history import SQLITE, statements_after

PACKAGE = Path(__file__).resolve().parents[1] / "relay_app"
THE_PAST = {"spool/history.py", "spool/legacy_sqlite.py"}
# Crossings not yet undone, each with its reason; the test fails when one is added, and when
# one listed is gone (so the list only shrinks). None is left.
KNOWN_CROSSINGS: set[tuple[str, str]] = set()
_STATEMENT = re.compile(
    r"\b(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(UNIQUE\s+)?"
    r"(TABLE|INDEX|TRIGGER)|ALTER\s+TABLE|DROP\s+(TABLE|INDEX|TRIGGER))\b",
    re.IGNORECASE,
)
_NAMED = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE(?:\s+IF\s+(?:NOT\s+)?EXISTS)?|ON)\s+([a-z_][a-z0-9_]*)",
    re.IGNORECASE,
)


def tables_of_today() -> set[str]:
    """The tables of a fresh spool."""
    connection = sqlite3.connect(":memory:")
    for statement in statements_after(0, SQLITE):
        connection.execute(statement)
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {name for (name,) in rows if not name.startswith("sqlite_")}


def tables_named(source: str, known: set[str]) -> set[str]:
    """The known tables a module's strings of SQL name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _STATEMENT.search(node.value):
                found.update(t for t in _NAMED.findall(node.value) if t in known)
        elif isinstance(node, ast.JoinedStr):  # an f-string: its fixed parts
            text = "".join(
                part.value
                for part in node.values
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
            )
            if _STATEMENT.search(text):
                found.update(t for t in _NAMED.findall(text) if t in known)
    return found


def namers() -> dict[str, set[str]]:
    """Each table, and the packages whose modules name it."""
    known = tables_of_today()
    named: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.as_posix() in THE_PAST or len(relative.parts) < 2:
            continue
        for table in tables_named(path.read_text(), known):
            named[table].add(relative.parts[0])
    return named


def test_the_scanner_sees_joins_subqueries_and_f_strings() -> None:
    known = {"jobs", "issue_buttons", "sent_messages", "takes"}
    source = (
        'A = "SELECT b.x FROM issue_buttons b JOIN sent_messages s ON s.chat = b.chat"\n'
        'B = f"UPDATE takes SET x = 1 WHERE {where}"\n'
        'C = "a sentence from the jobs board"\n'  # words, not SQL
    )
    assert tables_named(source, known) == {"issue_buttons", "sent_messages", "takes"}


def test_every_capability_is_its_own_package_and_declares_real_tables() -> None:
    known = tables_of_today()
    for capability in REGISTRY.capabilities:
        assert (PACKAGE / capability.name / "__init__.py").is_file(), capability.name
        assert set(capability.tables) <= known, capability.name


def test_each_table_is_named_in_sql_by_its_owner_alone() -> None:
    owner = {t: each.name for each in REGISTRY.capabilities for t in each.tables}
    crossings = set()
    for table, packages in namers().items():
        if table in owner:
            crossings |= {(p, table) for p in packages if p != owner[table]}
        elif len(packages) > 1:  # a core table: one core package names it
            crossings |= {(p, table) for p in packages}
    assert crossings == KNOWN_CROSSINGS


def test_every_table_of_the_spool_is_named_by_the_code_of_today() -> None:
    # A table only the past names is one nothing reads or writes: dropped, or forgotten.
    assert set(namers()) == tables_of_today()
