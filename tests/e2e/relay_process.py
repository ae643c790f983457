"""Starts the real `gunicorn wsgi:app`, with the project's gunicorn.conf.py, as a user would.

Shared by the end-to-end tests and bench/.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import requests

from tests.fake_http import PORTS as FAKE_PORTS
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram
from tests.prometheus import parse, value

ROOT = Path(__file__).resolve().parents[2]
SECRET = "e2e-webhook-secret-0123456789abcdef"
CHAT_ID = "-1001234567890"
SEND_TIMEOUT = 1.0  # short, so the tests that wait it out stay quick
BOOT_TIMEOUT = 20.0
# A relay takes the lead within a look of its leader (1 s) when nobody holds it.
LEADS_WITHIN = 3.0


def relay_env(fake: FakeTelegram, **overrides: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_CHAT_ID": CHAT_ID,
        "TELEGRAM_THREAD_ID": "77",
        "TELEGRAM_API_URL": fake.url,
        "RELAY_WEBHOOK_SECRET": SECRET,
        "RELAY_SEND_TIMEOUT": str(SEND_TIMEOUT),
        "RELAY_RETRY_ATTEMPTS": "3",
        "RELAY_RETRY_WAIT": "0.3",
        **overrides,
    }


# Ports handed out here: a range of each xdist worker's own, below the fakes' (fake_http.py's
# PORTS) and Linux's ephemeral ports (32768 and up, which the clients' sockets take). A port the
# kernel gave one worker's probe was given to another's too, before either relay had bound it:
# the second relay could not start, and its webhooks went to the first.
FIRST_PORT = 20000
MAX_XDIST_WORKERS = 8  # pyproject.toml's -n, at most
PORTS_PER_WORKER = (FAKE_PORTS[0] - FIRST_PORT) // MAX_XDIST_WORKERS
_next_ports: dict[int, int] = {}


def free_port() -> int:
    """A port nobody listens on now, never the same twice in a run, nor another xdist
    worker's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    if index >= MAX_XDIST_WORKERS:
        raise RuntimeError(
            f"xdist's process gw{index}: the relays' ports are cut for {MAX_XDIST_WORKERS} "
            "processes (tests/e2e/relay_process.py's MAX_XDIST_WORKERS)"
        )
    first = FIRST_PORT + index * PORTS_PER_WORKER
    for _ in range(PORTS_PER_WORKER):
        offset = _next_ports.get(index, 0)
        _next_ports[index] = (offset + 1) % PORTS_PER_WORKER
        port = first + offset
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: the next one
            return port
    raise RuntimeError(f"no free port in {first}-{first + PORTS_PER_WORKER - 1}")


def gunicorn_command(app: str = "wsgi:app") -> list[str]:
    script = Path(sys.executable).with_name("gunicorn")
    return [str(script) if script.exists() else "gunicorn", app]


def run_here(
    command: list[str],
    environ: dict[str, str],
    *,
    inherit: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`command` run to its end (30 s at most) from the project's directory, as an operator
    would, with these variables on top of the test's own environment (`inherit` False: these
    alone), and `input` on its stdin."""
    return subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, **environ} if inherit else environ,
        input=input,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def gunicorn_that_stops(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`gunicorn wsgi:app` with these variables, run until it exits (as it must, at start)."""
    return run_here(gunicorn_command(), env)


def without_file_permission_override() -> list[str]:
    """A command prefix that makes even root respect file permissions (it drops the
    capabilities that override them), so a read-only directory is read-only in the test."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise RuntimeError("running as root needs setpriv (util-linux) to test a read-only spool")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--"]


class RelayProcess:
    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        *,
        app: str = "wsgi:app",
        prefix: list[str] | None = None,
        directory: Path = ROOT,
        telegram: FakeTelegram | None = None,
    ) -> None:
        """With `telegram`, the fake it talks to, `wait_ready` also waits until the start-up
        check of its leader has been answered (a relay joining a fleet another leads asks
        nothing): a test that then makes Telegram fail sees the relay meet that failure with
        its alerts, not with its start-up questions."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.webhook_url = f"{self.url}/webhook/{env.get('RELAY_WEBHOOK_SECRET', SECRET)}"
        # /healthz, /readyz and /metrics: on the admin listener when the relay has one.
        admin_bind = env.get("RELAY_ADMIN_BIND")
        self.admin_url = f"http://{admin_bind}" if admin_bind else self.url
        self.log_path = log_path
        # A wrapper (setpriv) may not pass a signal on to gunicorn: it then gets the
        # whole process group's.
        self._wrapped = bool(prefix)
        self._log: IO[bytes] = log_path.open("wb")
        self._start_up_rounds: tuple[FakeTelegram, int] | None = None
        if telegram is not None and telegram.listening and env["TELEGRAM_API_URL"] == telegram.url:
            self._start_up_rounds = telegram, telegram.start_up_rounds + 1
        self.process = subprocess.Popen(
            [*(prefix or []), *gunicorn_command(app)],
            cwd=directory,
            env={**os.environ, "RELAY_BIND": f"127.0.0.1:{self.port}", **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self) -> RelayProcess:
        deadline = time.monotonic() + BOOT_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited at start:\n{self.logs()}")
            try:
                if requests.get(f"{self.admin_url}/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass  # not listening yet, or a worker still booting on a busy host
            time.sleep(0.1)
        else:
            raise RuntimeError(f"gunicorn did not become ready:\n{self.logs()}")
        if self._start_up_rounds is not None:
            telegram, rounds = self._start_up_rounds
            if self._leads(deadline):
                while telegram.start_up_rounds < rounds:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the start-up check did not end:\n{self.logs()}")
                    time.sleep(0.05)
            if telegram.behaviour.mode == "ok":
                self._wait_until_telegram_up(deadline)
        return self

    def _leads(self, deadline: float) -> bool:
        """Whether one of its workers came to lead the fleet (and so asks the start-up
        check): within LEADS_WITHIN, or never (another relay on its spool leads)."""
        until = min(deadline, time.monotonic() + LEADS_WITHIN)
        while time.monotonic() < until:
            if "this process leads the fleet's chores now" in self.logs():
                return True
            time.sleep(0.05)
        return False

    def _wait_until_telegram_up(self, deadline: float) -> None:
        """Until the relay holds Telegram for up. A start-up getMe the relay gave up on (a fake
        slower than RELAY_SEND_TIMEOUT on a loaded host) has it hold every alert until its
        prober hears Telegram, and a test's first alerts would meet that, not what they test.
        The relay says so before the round's connection closes (setup_watch.py), so once the
        rounds are counted this reading is not stale."""
        while True:
            try:
                reply = requests.get(f"{self.admin_url}/metrics", timeout=1)
            except requests.RequestException:
                reply = None  # a worker slow to answer on a busy host: ask again
            if reply is not None and reply.status_code == 404:
                return  # RELAY_METRICS=off: nothing to read it from
            answered = reply if reply is not None and reply.status_code == 200 else None
            if answered and value(parse(answered.text), "relay_telegram_up") == 1:
                return  # a 500 (a scrape that failed) is asked again too
            if time.monotonic() > deadline:
                raise RuntimeError(f"the relay still holds Telegram for down:\n{self.logs()}")
            time.sleep(0.05)

    def logs(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def workers(self) -> list[int]:
        """The pids of gunicorn's workers now: the master's children."""
        return children_of(self.process.pid)

    def crash(self) -> None:
        """SIGKILL the master and its workers at once, as an OOM kill or a power cut would:
        no hook runs, nothing is given back."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
        self._log.close()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40.0) -> int:
        self.signal_stop(sig)
        return self.wait_stopped(timeout)

    def signal_stop(self, sig: int = signal.SIGTERM) -> None:
        """Ask it to stop (`wait_stopped` waits): several relays stop together this way."""
        if self.process.poll() is None:
            if self._wrapped:
                os.killpg(self.process.pid, sig)
            else:
                self.process.send_signal(sig)

    def wait_stopped(self, timeout: float = 40.0) -> int:
        """Until it has stopped (SIGKILL past `timeout`); its exit code."""
        if self.process.poll() is None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        if self._wrapped:
            self._wait_for_the_group(timeout)
        self._log.close()
        return self.process.returncode

    def _wait_for_the_group(self, timeout: float) -> None:
        """Until gunicorn, under its wrapper, has gone too: nothing of a test's relay may outlive
        it (SIGKILL past `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not _running_in_group(self.process.pid):
                return
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def stop_all(relays: Sequence[RelayProcess]) -> None:
    """Stop them together, each gracefully: the time of the slowest, not of them all."""
    for relay in relays:
        relay.signal_stop()
    for relay in relays:
        relay.wait_stopped()


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid`, now."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if parent == pid:
            children.append(int(stat.parent.name))
    return children


def _running_in_group(group: int) -> bool:
    """Whether a process of this group still runs. Not `killpg(group, 0)`: that finds zombies
    too, and gunicorn's, orphaned by its wrapper, may never be reaped here."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        state, process_group = fields[0], int(fields[2])
        if process_group == group and state != "Z":
            return True
    return False


def rss_mb(pid: int) -> float:
    """A process's resident memory, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


@contextlib.contextmanager
def relay_of_its_own(
    directory: Path, *, workers: int, **overrides: str
) -> Iterator[tuple[RelayProcess, FakeTelegram]]:
    """One relay, and a fake Telegram with the bot in the default chat, for all the tests of
    a module that do not stop it. When they are done: its workers were never restarted (none
    hung, died or was killed), nothing raised, and no secret reached its log."""
    with running_fake_telegram() as fake:
        fake.add_chat(CHAT_ID)
        env = relay_env(
            fake,
            WEB_CONCURRENCY=str(workers),
            RELAY_SPOOL_PATH=str(directory / "spool.sqlite3"),
            **overrides,
        )
        relay = RelayProcess(env, directory / "relay.log", telegram=fake).wait_ready()
        try:
            yield relay, fake
        finally:
            relay.stop()
        logs = relay.logs()
        assert logs.count("Booting worker") == workers, logs
        assert "Traceback" not in logs
        assert TOKEN not in logs
        assert SECRET not in logs
