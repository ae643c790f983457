"""How far each capability is a plug-in, as counts (a report, not a gate):

- the lines of relay_app that name a capability, inside its package, in the wiring, and in the
  core and the other capabilities (by the words of its name: `silenc`, `snooz`, ...);
- the modules outside a capability that import it (the wiring apart);
- the tables named in SQL by more than one package (tests/test_tables.py's reading);
- the walk of one webhook (from the view to Telegram's `sendMessage`) and of one press (from
  the update to its answer and the card's edit): the relay's frames, its files, and how often it
  changes package, and how often back into one it had left.

Run by hand:

    .venv/bin/python bench/capabilities.py
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relay_app import assemble  # noqa: E402
from relay_app.cards.card import callback_data  # noqa: E402
from relay_app.cards.sent import SentStore  # noqa: E402
from relay_app.operating.config import Settings  # noqa: E402
from relay_app.takes.buttons import TAKE  # noqa: E402
from relay_app.web.relay import EXTENSION  # noqa: E402
from relay_app.web.views import RelayFlask, blueprint  # noqa: E402
from tests.conftest import (  # noqa: E402
    API_URL,
    CHAT_ID,
    SECRET,
    TOKEN,
    glitchtip_on,
)
from tests.in_process import GLITCHTIP_ON, PAYLOAD, ScriptedTelegram  # noqa: E402
from tests.test_presses import SENT, press  # noqa: E402

PACKAGE = ROOT / "relay_app"
WIRING = {"__init__.py", "parts.py", "capabilities.py", "cli.py"}
# The words a line names each capability by.
NAMED_BY = {
    "glitchtip": r"glitchtip",
    # "take" alone is everyday English (a step takes, a unit takes its Tx): the words On it's
    # own names are counted.
    "takes": r"\btakers?\b|\btaken_by|\bissue_takes|\btakes/|\btakes\.|let[_ ]go|👀|\bon_it\b",
    "silences": r"silenc|\bmute|unmute",
    "snoozes": r"snooz",
    "oncall": r"on[_ ]?call|escalat|rotation|handoff|\bcover",
    "watch": r"watcher|\bwatch(ed)?\b|in_step|in step",
    "summaries": r"summar|\breport",
    "sentry": r"sentry",
    "chat": r"\brepl(y|ies)\b|\bcommands?\b|link_card|links?'? card",
    "rooms": r"\brooms?\b|forumtopic|per_issue",
    "board": r"\bboards?\b",
    "charts": r"\bcharts?\b|📈",
}


def package_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return "(wiring)" if len(relative.parts) == 1 else relative.parts[0]


def mentions() -> list[tuple[str, int, int, int]]:
    rows = []
    files = sorted(PACKAGE.rglob("*.py"))
    for name, words in NAMED_BY.items():
        pattern = re.compile(words, re.IGNORECASE)
        inside = wiring = outside = 0
        for path in files:
            hits = sum(1 for line in path.read_text().splitlines() if pattern.search(line))
            where = package_of(path)
            if where == name:
                inside += hits
            elif where == "(wiring)":
                wiring += hits
            else:
                outside += hits
        rows.append((name, inside, wiring, outside))
    return rows


def importers() -> dict[str, list[str]]:
    """Each capability, and the modules outside it (the wiring apart) that import it."""
    found: dict[str, set[str]] = {name: set() for name in NAMED_BY}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = package_of(path)
        if where == "(wiring)":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = (node.module or "").split(".")[0] if node.level == 2 else where
                if target in found and target != where:
                    found[target].add(str(path.relative_to(PACKAGE)))
    return {name: sorted(paths) for name, paths in found.items()}


class Walk:
    """The relay's frames called on any thread while it is on: their files, in order."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.frames = 0
        self._on = False

    def _profile(self, frame: FrameType, event: str, arg: object) -> None:
        if self._on and event == "call":
            path = frame.f_code.co_filename
            if path.startswith(str(PACKAGE)):
                self.frames += 1
                self.files.append(str(Path(path).relative_to(PACKAGE)))

    def __enter__(self) -> Walk:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        self._on = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._on = False
        sys.setprofile(None)
        threading.setprofile(None)

    def stages(self, package: str) -> list[str]:
        """The stages of `package` (intake, cards/presses) the walk entered, in order
        (tests/test_pipeline.py's maps)."""
        try:
            from tests.test_pipeline import PRESS_STAGE_OF, STAGE_OF
        except ImportError:  # a commit from before the stages were named
            return []
        stage_of = STAGE_OF if package == "intake" else PRESS_STAGE_OF
        entered: list[str] = []
        for file in self.files:
            folder, _, name = file.rpartition("/")
            stage = stage_of.get(name) if folder == package else None
            if stage is not None and (not entered or entered[-1] != stage):
                entered.append(stage)
        return entered

    def report(self) -> tuple[int, int, int, int]:
        packages = [f.split("/")[0] if "/" in f else "(wiring)" for f in self.files]
        changes = back = 0
        seen = {packages[0]} if packages else set()
        for before, after in itertools.pairwise(packages):
            if before != after:
                changes += 1
                back += after in seen
                seen.add(after)
        return self.frames, len(set(self.files)), changes, back


def settings_for(directory: str) -> Settings:
    return Settings(
        telegram_bot_token=TOKEN,
        telegram_chat_id=CHAT_ID,
        webhook_secret=SECRET,
        telegram_api_url=API_URL,
        send_timeout=2.0,
        spool_path=str(Path(directory) / "spool.sqlite3"),
        theirs=glitchtip_on(GLITCHTIP_ON),
        details_budget=None,
    )


def until(done: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.005)


# The stages one webhook and one press entered, in order (filled by `walks`).
STAGES: dict[str, list[str]] = {}


def walks() -> Iterator[tuple[str, tuple[int, int, int, int]]]:
    with tempfile.TemporaryDirectory() as directory:
        telegram = ScriptedTelegram()
        relay = assemble(settings_for(directory), telegram=telegram)
        app = RelayFlask("relay_app")
        app.extensions[EXTENSION] = relay
        app.register_blueprint(blueprint())
        relay.dispatcher.start()
        try:
            client = app.test_client()
            client.post(f"/webhook/{SECRET}", json=PAYLOAD)  # warm: imports, first renders
            until(lambda: telegram.calls >= 1)
            with Walk() as walk:
                client.post(f"/webhook/{SECRET}", json=PAYLOAD)
                until(lambda: telegram.calls >= 2)
            STAGES["webhook"] = walk.stages("intake")
            yield "one webhook, from the view to sendMessage", walk.report()
            assert relay.spool is not None
            assert relay.updates is not None
            relay.spool.of(SentStore).keep(replace(SENT, chat=str(CHAT_ID)), [])
            relay.updates(press(callback_data(TAKE, "warm"), chat=str(CHAT_ID)))
            answered = len(telegram.answered)
            with Walk() as walk:
                relay.updates(press(callback_data(TAKE, "the-key"), chat=str(CHAT_ID)))
                until(lambda: len(telegram.answered) > answered and len(telegram.edits) >= 1)
            STAGES["press"] = walk.stages("cards/presses")
            yield (
                "one press (On it), from the update to its answer and the card's edit",
                (walk.report()),
            )
        finally:
            relay.dispatcher.shutdown()
            relay.running.stop()


def main() -> None:
    print("\nLines naming each capability (by the words of its name):\n")
    print("| capability | inside | the wiring | the core and the others |")
    print("|---|---:|---:|---:|")
    for name, inside, wiring, outside in mentions():
        print(f"| `{name}/` | {inside} | {wiring} | {outside} |")
    print("\nModules outside a capability that import it (the wiring apart):\n")
    print("| capability | modules | which |")
    print("|---|---:|---|")
    for name, paths in importers().items():
        print(f"| `{name}/` | {len(paths)} | {', '.join(f'`{p}`' for p in paths) or '-'} |")
    print("\n| walk | frames | files | package changes | back into one it had left |")
    print("|---|---:|---:|---:|---:|")
    for what, (frames, files, changes, back) in walks():
        print(f"| {what} | {frames} | {files} | {changes} | {back} |")
    for what, stages in STAGES.items():
        back = sum(1 for i, stage in enumerate(stages) if stage in stages[:i])
        print(f"\nOne {what}'s stages, in order: {' → '.join(stages)} (back into one: {back})")
    try:
        from tests.test_tables import namers
    except ImportError:  # a commit from before its test
        return
    crossed = {t: sorted(p) for t, p in namers().items() if len(p) > 1}
    print(f"\nTables named in SQL by more than one package: {len(crossed)}")
    for table, packages in sorted(crossed.items()):
        print(f"- `{table}`: {', '.join(packages)}")


if __name__ == "__main__":
    main()
