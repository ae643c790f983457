"""Starts the real `gunicorn wsgi:app`, with the project's gunicorn.conf.py, as a user would.

Shared by the end-to-end tests and bench/.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import requests

from tests.fake_telegram import TOKEN, FakeTelegram

ROOT = Path(__file__).resolve().parents[2]
SECRET = "e2e-webhook-secret-0123456789abcdef"
CHAT_ID = "-1001234567890"
SEND_TIMEOUT = 1.0  # short, so the tests that wait it out stay quick
BOOT_TIMEOUT = 20.0


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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def gunicorn_command(app: str = "wsgi:app") -> list[str]:
    script = Path(sys.executable).with_name("gunicorn")
    return [str(script) if script.exists() else "gunicorn", app]


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
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.webhook_url = f"{self.url}/webhook/{env.get('RELAY_WEBHOOK_SECRET', SECRET)}"
        # /healthz, /readyz and /metrics: on the admin listener when the relay has one.
        admin_bind = env.get("RELAY_ADMIN_BIND")
        self.admin_url = f"http://{admin_bind}" if admin_bind else self.url
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("wb")
        self.process = subprocess.Popen(
            [*(prefix or []), *gunicorn_command(app)],
            cwd=ROOT,
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
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not become ready:\n{self.logs()}")

    def logs(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def crash(self) -> None:
        """SIGKILL the master and its workers at once, as an OOM kill or a power cut would:
        no hook runs, nothing is given back."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
        self._log.close()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        self._log.close()
        return self.process.returncode
