"""An incident room's life against a real GlitchTip (../shared/glitchtip-live, started with its
run_glitchtip.sh), run by hand: the relay under gunicorn with a per-issue route and a board,
against the fake Telegram (a forum where the bot may manage topics and pin).

GlitchTip sends its real webhook for a new issue; the relay makes the issue's topic, posts the
card there and a line in the route's topic, and pins the board. A message written in the topic
becomes a comment in GlitchTip. The issue is resolved in GlitchTip as its UI does it (the
organization's issues, bulk PUT by id): the watcher reads it, and the topic is renamed and
closed, the board all clear. Unresolved again in GlitchTip: the topic reopens. Prints what it
saw at each step, and how long each took.

    GT_ROOT=/tmp/glitchtip .venv/bin/python bench/rooms_glitchtip.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from tests.e2e.helpers import wait_until  # noqa: E402
from tests.e2e.relay_process import CHAT_ID, RelayProcess, relay_env  # noqa: E402
from tests.fake_telegram import FakeTelegram, Posted, running_fake_telegram  # noqa: E402

GT = Path(os.environ.get("GT_ROOT", Path(tempfile.gettempdir()) / "glitchtip"))
GLITCHTIP = "http://127.0.0.1:18000"
ORG = "local-org"
ROUTES = '[[route]]\nname = "ops"\nthread = 77\ntopics = "per_issue"\nboard = true\n'


SHARED = ROOT.parent / "shared" / "glitchtip-live"


def glitchtip_token(*more: str) -> str:
    """A token for GlitchTip's admin, minted through its ORM (gt_token.py, in GT_ROOT or in
    ../shared/glitchtip-live): the relay's scopes, and `more`."""
    script = GT / "gt_token.py" if (GT / "gt_token.py").exists() else SHARED / "gt_token.py"
    scopes = " ".join(("event:read", "event:write", "org:read", *more))
    minted = subprocess.run(
        ["bash", "-c", f". ./env.sh && venv/bin/python {script} {scopes}"],
        cwd=GT,
        capture_output=True,
        text=True,
        check=True,
    )
    return minted.stdout.strip().splitlines()[-1]


@dataclass(frozen=True)
class Live:
    """A relay under gunicorn against the fake Telegram and the real GlitchTip: the token it
    acts with, a session of GlitchTip's API with it (the bench's own questions), and its
    spool's file."""

    fake: FakeTelegram
    relay: RelayProcess
    token: str
    api: requests.Session
    spool: str


@contextmanager
def relay_against_glitchtip(
    *scopes: str,
    prepare: Callable[[FakeTelegram, Path], Mapping[str, str]] = lambda fake, directory: {},
    **env: str,
) -> Iterator[Live]:
    """The relay with GLITCHTIP_API_TOKEN (the relay's scopes and `scopes`) and GLITCHTIP_URL,
    a fresh spool, `env`, and what `prepare` makes of the fake Telegram and the directory (a
    routes file's variable, say); stopped after."""
    token = glitchtip_token(*scopes)
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {token}"
    with running_fake_telegram() as fake, tempfile.TemporaryDirectory() as directory:
        spool = f"{directory}/spool.sqlite3"
        more = prepare(fake, Path(directory))
        variables = relay_env(
            fake,
            GLITCHTIP_API_TOKEN=token,
            GLITCHTIP_URL=GLITCHTIP,
            RELAY_SPOOL_PATH=spool,
            **{**env, **more},
        )
        relay = RelayProcess(variables, Path(directory) / "relay.log", telegram=fake)
        relay.wait_ready()
        try:
            yield Live(fake, relay, token, api, spool)
        finally:
            relay.stop()


def step(said: str, started: float, condition: Callable[[], object], timeout: float) -> None:
    ok = wait_until(condition, timeout=timeout)
    print(f"{'ok  ' if ok else 'FAIL'} {time.monotonic() - started:6.1f} s  {said}")
    if not ok:
        raise SystemExit(1)


def in_thread(fake: FakeTelegram, thread: int, *starts: str) -> list[Posted]:
    """What is in the chat's topic (beginning with one of `starts`, when given)."""
    return [
        p
        for p in fake.posted_to(CHAT_ID)
        if p.thread == thread and (not starts or p.text.startswith(starts))
    ]


def commented(api: requests.Session, issue_id: str) -> list[dict[str, Any]]:
    """The issue's comments in GlitchTip written from the topic."""
    found = api.get(f"{GLITCHTIP}/api/0/issues/{issue_id}/comments/", timeout=5).json()
    return [c for c in found if "from the topic" in str(c)]


def main() -> None:
    def forum(fake: FakeTelegram, directory: Path) -> dict[str, str]:
        fake.add_chat(CHAT_ID, rights={"can_manage_topics": True, "can_pin_messages": True})
        routes = directory / "routes.toml"
        routes.write_text(ROUTES)
        return {"RELAY_ROUTES": str(routes)}

    with relay_against_glitchtip(prepare=forum, RELAY_WATCH_INTERVAL="2") as live_relay:
        live(live_relay.fake, live_relay.api, live_relay.relay)


def live(fake: FakeTelegram, api: requests.Session, relay: RelayProcess) -> None:
    started = time.monotonic()
    subprocess.run([str(GT / "trigger_alert.sh"), relay.webhook_url], check=True)
    step("GlitchTip's webhook: a topic made", started, lambda: fake.topics_of(CHAT_ID), 30)
    [topic] = fake.topics_of(CHAT_ID)
    print(f"       topic {topic.thread}: {topic.name!r} (icon {topic.icon_color:#x})")
    step("the card in the topic", started, lambda: in_thread(fake, topic.thread), 30)
    [card] = in_thread(fake, topic.thread)
    labels = [b["text"] for b in card.buttons()]
    print(f"       card: {card.visible().splitlines()[0]!r}, buttons {labels}")
    folded = card.text.split("<blockquote expandable>")[1:]
    print(
        f"       its stack, folded: {folded[0].split('</blockquote>')[0]!r}"
        if folded
        else "       no stack"
    )
    issue_id = card.text.split("/issues/")[1].split('"')[0].split("/")[0]
    step("a line in the route's topic points to it", started, lambda: in_thread(fake, 77, "🧵"), 30)
    print(f"       {in_thread(fake, 77, '🧵')[0].text!r}")

    def pinned() -> bool:
        return bool(in_thread(fake, 77, "📋", "✅") and fake.pinned.get(str(CHAT_ID)))

    step("the board posted and pinned", started, pinned, 60)
    board = in_thread(fake, 77, "📋", "✅")[-1]

    fake.say(CHAT_ID, "looking at it from the topic", thread=topic.thread, user_id=4242)
    step("a message in the topic: a comment", started, lambda: commented(api, issue_id), 30)
    print(f"       {commented(api, issue_id)[0]['data']['text']!r}")

    bulk = f"{GLITCHTIP}/api/0/organizations/{ORG}/issues/?id={issue_id}"
    api.put(bulk, json={"status": "resolved"}, timeout=5).raise_for_status()
    step("resolved in GlitchTip: the topic closed", started, lambda: topic.closed, 60)
    print(f"       renamed {topic.name!r}")

    def all_clear() -> bool:
        return "All clear" in fake.message(str(CHAT_ID), board.message_id).text

    step("the board all clear", started, all_clear, 60)
    api.put(bulk, json={"status": "unresolved"}, timeout=5).raise_for_status()
    step("unresolved in GlitchTip: the topic reopened", started, lambda: not topic.closed, 60)
    step("and named as before", started, lambda: not topic.name.startswith("✅"), 30)
    print(f"       {topic.name!r}")
    print(f"       forum writes: {[w['method'] for w in fake.forum_writes]}")


if __name__ == "__main__":
    main()
