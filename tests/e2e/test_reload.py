"""A reload (`systemctl reload`: SIGHUP to gunicorn's master) keeps the port open: GlitchTip
sends each alert once, so a steady stream of webhooks through a reload is answered throughout
and every alert arrives. An upgrade is new code in place, then a reload: the new workers run the
code on disk, not the code the master read at start."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import requests

from relay_app.routes.table import MAX_ROUTES, MAX_ROUTES_BYTES
from tests.e2e.helpers import delivered_titles, titled, wait_until
from tests.e2e.relay_process import CHAT_ID, ROOT, RelayProcess, children_of, relay_env
from tests.fake_telegram import FakeTelegram, running_fake_telegram

STREAM_GAP = 0.04
STREAM_LIMIT = 600  # posts: the stream's bound, whatever happens


def _installed_copy(directory: Path) -> Path:
    """The relay's code as an install directory holds it (what the unit's WorkingDirectory
    is), in a place the test may change."""
    target = directory / "install"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "relay_app", target / "relay_app", ignore=ignore)
    for name in ("wsgi.py", "gunicorn.conf.py"):
        shutil.copy(ROOT / name, target / name)
    return target


def two_workers(fake: FakeTelegram, directory: Path, **more: str) -> dict[str, str]:
    return relay_env(
        fake,
        WEB_CONCURRENCY="2",
        RELAY_SPOOL_PATH=str(directory / "spool.sqlite3"),
        RELAY_TIME_SCALE="0.25",
        **more,
    )


class Stream:
    """Posts one alert every STREAM_GAP seconds, each on a connection of its own, as
    GlitchTip's workers do, and keeps each answer (or the error in its place)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[tuple[str, int | str]] = []
        self.seconds: list[float] = []  # each answer's wait
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        for number in range(STREAM_LIMIT):
            if self._stop.is_set():
                return
            title = f"ReloadError: stream alert {number}"
            started = time.monotonic()
            try:
                answer: int | str = requests.post(
                    self.url, json=titled(title), timeout=10
                ).status_code
            except requests.RequestException as exc:
                answer = type(exc).__name__
            self.answers.append((title, answer))
            self.seconds.append(time.monotonic() - started)
            self._stop.wait(STREAM_GAP)

    def posted(self) -> int:
        return len(self.answers)


def test_a_reload_with_new_code_in_place_answers_every_webhook_and_runs_the_new_code(
    tmp_path: Path,
) -> None:
    install = _installed_copy(tmp_path)
    with running_fake_telegram() as fake:
        fake.add_chat(CHAT_ID)
        env = two_workers(fake, tmp_path, PYTHONPATH=str(install))
        relay = RelayProcess(env, tmp_path / "relay.log", directory=install).wait_ready()
        try:
            with Stream(relay.webhook_url) as stream:
                assert wait_until(lambda: stream.posted() >= 15, 10), relay.logs()
                # The upgrade: new code in the install directory, then the reload.
                catalogue = install / "relay_app" / "words" / "en.py"
                catalogue.write_text(
                    catalogue.read_text().replace(
                        'field_project="Project"', 'field_project="Service"'
                    )
                )
                before = set(relay.workers())
                os.kill(relay.process.pid, signal.SIGHUP)
                assert wait_until(
                    lambda: len(now := set(relay.workers())) == 2 and not now & before, 30
                ), relay.logs()
                assert "relay_app reloading: relay_app " in relay.logs(), relay.logs()
                reloaded_at = stream.posted()
                assert wait_until(lambda: stream.posted() >= reloaded_at + 15, 10), relay.logs()
            refused = [
                (title, answer) for title, answer in stream.answers if answer not in (200, 202)
            ]
            assert not refused, f"{refused}\n{relay.logs()}"
            titles = [title for title, _ in stream.answers]
            assert wait_until(lambda: set(titles) <= set(delivered_titles(fake)), 30), relay.logs()
            # Each alert's text is built when it is taken: before the reload by the code the
            # relay started with, after it by the new code.
            texts = [text for text in fake.texts() if "stream alert" in text]
            assert "Project: backend" in texts[0], texts
            assert "Service: backend" in texts[-1], texts
            assert "Project:" not in texts[-1], texts
        finally:
            relay.stop()
        logs = relay.logs()
        assert "Traceback" not in logs, logs


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_gunicorns_usr2_re_exec_hands_the_socket_over_and_answers_every_webhook(
    tmp_path: Path,
) -> None:
    """gunicorn's own upgrade, where no service manager tracks the master: USR2 starts a new
    master on the same listening socket (inherited, so the start-up check must not call its
    own port taken), then TERM ends the old one. Metrics keep working after the old master has
    gone (gunicorn re-executes with the environment it started with: the new master makes its
    own metrics directory)."""
    with running_fake_telegram() as fake:
        fake.add_chat(CHAT_ID)
        env = two_workers(fake, tmp_path)
        relay = RelayProcess(env, tmp_path / "relay.log").wait_ready()
        old = relay.process.pid
        new_master = None
        try:
            with Stream(relay.webhook_url) as stream:
                assert wait_until(lambda: stream.posted() >= 15, 10), relay.logs()
                before = set(children_of(old))
                os.kill(old, signal.SIGUSR2)

                def new_one() -> int | None:
                    for child in set(children_of(old)) - before:
                        if len(children_of(child)) == 2:
                            return child
                    return None

                assert wait_until(lambda: new_one() is not None, 30), relay.logs()
                new_master = new_one()
                assert wait_until(lambda: relay.logs().count("Booting worker") >= 4, 20)
                os.kill(old, signal.SIGTERM)  # the old master and its workers, gracefully
                relay.process.wait(40)
                handed_over = stream.posted()
                assert wait_until(lambda: stream.posted() >= handed_over + 15, 10), relay.logs()
            refused = [(t, answer) for t, answer in stream.answers if answer not in (200, 202)]
            assert not refused, f"{refused}\n{relay.logs()}"
            titles = [title for title, _ in stream.answers]
            assert wait_until(lambda: set(titles) <= set(delivered_titles(fake)), 30), relay.logs()
            scraped = requests.get(f"{relay.url}/metrics", timeout=5)
            assert scraped.status_code == 200
            assert "relay_webhooks_total" in scraped.text
        finally:
            if new_master is not None and _running(new_master):
                os.kill(new_master, signal.SIGTERM)
                assert wait_until(lambda: not _running(new_master), 40)
            relay.stop()
        logs = relay.logs()
        assert "cannot start" not in logs
        assert "Traceback" not in logs, logs


def routes_at_the_cap(count: int) -> str:
    """`count` routes (none of which the stream's alerts match), in about 250 KB of TOML."""
    return "".join(
        f"# Project {number}'s alerts go to its team's chat, calling its on-call person.\n"
        f"[[route]]\nname = 'project {number}'\nproject = ['project-{number}', "
        f"'project-{number}-api']\nenvironment = 'production'\nchat = {CHAT_ID}\n"
        f"mention = '@oncall_{number:04d}'\n\n"
        for number in range(1, count + 1)
    )


def test_a_reload_to_routes_at_their_caps_answers_every_webhook_and_one_past_is_refused(
    tmp_path: Path,
) -> None:
    # A 50 MB routes file took 45 s to start, and a reload to it left 172 of 400 webhooks
    # unanswered within GlitchTip's 10 s. The caps bound what a reload costs: every webhook is
    # answered, promptly, while the new workers start.
    routes = tmp_path / "routes.toml"
    routes.write_text(routes_at_the_cap(1))
    with running_fake_telegram() as fake:
        fake.add_chat(CHAT_ID)
        env = two_workers(fake, tmp_path, RELAY_ROUTES=str(routes))
        relay = RelayProcess(env, tmp_path / "relay.log").wait_ready()
        try:
            with Stream(relay.webhook_url) as stream:
                assert wait_until(lambda: stream.posted() >= 15, 10), relay.logs()
                at_cap = routes_at_the_cap(MAX_ROUTES)
                assert len(at_cap.encode()) <= MAX_ROUTES_BYTES
                routes.write_text(at_cap)
                before = set(relay.workers())
                os.kill(relay.process.pid, signal.SIGHUP)
                assert wait_until(
                    lambda: len(now := set(relay.workers())) == 2 and not now & before, 30
                ), relay.logs()
                assert f"{MAX_ROUTES} routes from {routes}" in relay.logs()
                reloaded_at = stream.posted()
                assert wait_until(lambda: stream.posted() >= reloaded_at + 15, 10), relay.logs()
                # One route more: refused, naming the cap, and the thousand stay in force.
                routes.write_text(at_cap + routes_at_the_cap(MAX_ROUTES + 1)[len(at_cap) :])
                os.kill(relay.process.pid, signal.SIGHUP)
                refused = f"route {MAX_ROUTES + 1}: the file holds {MAX_ROUTES + 1} routes, over"
                assert wait_until(lambda: refused in relay.logs(), 30), relay.logs()
                assert "RELAY_ROUTES REFUSED on reload" in relay.logs()
                reloaded_at = stream.posted()
                assert wait_until(lambda: stream.posted() >= reloaded_at + 15, 10), relay.logs()
            wrong = [
                (title, answer) for title, answer in stream.answers if answer not in (200, 202)
            ]
            assert not wrong, f"{wrong}\n{relay.logs()}"
            # Answered while the new workers started: never near GlitchTip's 10 s.
            assert max(stream.seconds) < 5.0, sorted(stream.seconds)[-5:]
            titles = [title for title, _ in stream.answers]
            assert wait_until(lambda: set(titles) <= set(delivered_titles(fake)), 30), relay.logs()
        finally:
            relay.stop()
        logs = relay.logs()
        assert "Traceback" not in logs, logs
