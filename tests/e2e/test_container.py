"""The Dockerfile's recipe, followed without Docker (neither this machine nor CI runs a Docker
engine): its install step is the README's, and the files it copies, installed that way and
started with its environment and command, make a relay that passes its own HEALTHCHECK.
hadolint lints the Dockerfile itself in .ci/run."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.e2e.helpers import delivered_titles, post, titled, wait_until
from tests.e2e.relay_process import ROOT, SECRET, free_port, relay_env
from tests.fake_telegram import FakeTelegram

INSTALL_TIMEOUT = 300.0
# Shared memory, where the image is installed when it has room for it (_image_root).
MEMORY = Path("/dev/shm")
MEMORY_NEEDED = 1024**3
# Sent (200), or queued (202) when a busy host keeps the first attempt past the webhook's budget:
# either way the relay has it, and the chat is where delivery is checked.
TAKEN = {200, 202}


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text()
    logical = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in logical.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, arguments = line.partition(" ")
            found.append((keyword.upper(), arguments.strip()))
    return found


def only(keyword: str, containing: str = "") -> str:
    [arguments] = [a for k, a in instructions() if k == keyword and containing in a]
    return arguments


def readme_run_command() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"\*\*Run the relay\*\*.*?```sh\n(.*?)\n```", readme, re.DOTALL)
    assert match, "the README's run command is not where it should be"
    return match.group(1)


def test_the_images_install_step_is_the_readmes() -> None:
    install = only("RUN", "pip install")
    assert install in readme_run_command()
    assert only("CMD") == '["gunicorn", "wsgi:app"]'
    assert readme_run_command().endswith(" .venv/bin/gunicorn wsgi:app")


@dataclass(frozen=True)
class Image:
    """The image's files, installed by its own RUN step, and its environment."""

    app: Path
    env: dict[str, str]


def _image_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bool]:
    """Where the image's files go, and whether it is in memory (then removed after): in memory
    where the host has room there. The install writes some 250 MB in 9,000 files; on the disk
    the rest of the suite keeps busy (its spools' and databases' writes) it took over three
    minutes, 22 s alone."""
    if MEMORY.is_dir() and shutil.disk_usage(MEMORY).free > MEMORY_NEEDED:
        return Path(tempfile.mkdtemp(prefix="relay-image-", dir=MEMORY)), True
    return tmp_path_factory.mktemp("image"), False


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    root, in_memory = _image_root(tmp_path_factory)
    app = root / "app"
    app.mkdir()
    for arguments in (a for k, a in instructions() if k == "COPY"):
        *sources, destination = arguments.split()
        target = app / destination if destination not in ("./", ".") else app
        for source in sources:
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(ROOT / source, app)

    image_env = dict(os.environ)
    for name, value in (pair.split("=", 1) for pair in shlex.split(only("ENV"))):
        image_env[name] = value.replace("$PATH", image_env.get("PATH", ""))
    image_env["PATH"] = image_env["PATH"].replace("/app/", f"{app}/")
    image_env.pop("VIRTUAL_ENV", None)
    # pip unpacks beside the image, not on the disk.
    (root / "tmp").mkdir()
    install_env = {**image_env, "TMPDIR": str(root / "tmp")}
    try:
        subprocess.run(
            ["bash", "-c", only("RUN", "pip install")],
            cwd=app,
            env=install_env,
            check=True,
            timeout=INSTALL_TIMEOUT,
            capture_output=True,
        )
        yield Image(app, image_env)
    finally:
        if in_memory:
            shutil.rmtree(root, ignore_errors=True)


@contextmanager
def container(
    image: Image, fake_telegram: FakeTelegram, tmp_path: Path, spool_path: Path
) -> Iterator[tuple[str, dict[str, str]]]:
    """The image's CMD running with its environment, its port and volume moved to the test's;
    yields its URL and that environment, once it answers."""
    command = json.loads(only("CMD"))
    assert shutil.which(command[0], path=image.env["PATH"]) == str(image.app / ".venv/bin/gunicorn")
    port = free_port()
    service_env = {
        **image.env,
        **relay_env(fake_telegram),
        "RELAY_BIND": f"127.0.0.1:{port}",
        "RELAY_SPOOL_PATH": str(spool_path),
    }
    log_path = tmp_path / "relay.log"
    log = log_path.open("wb")
    # The leader's start-up check, as RelayProcess waits for it: a webhook before it may find
    # Telegram not yet known to answer, and be queued (202) rather than sent.
    checked = fake_telegram.start_up_rounds + 1
    relay = subprocess.Popen(
        command, cwd=image.app, env=service_env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return requests.get(f"{url}/healthz", timeout=1).status_code == 200
        except requests.RequestException:  # not listening yet, or a worker still starting
            return False

    try:
        assert wait_until(answers, timeout=20), log_path.read_text()
        started = wait_until(lambda: fake_telegram.start_up_rounds >= checked, timeout=20)
        assert started, log_path.read_text()
        yield url, service_env
    finally:
        relay.terminate()
        relay.wait(40)
        log.close()


def healthcheck(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The image's HEALTHCHECK command, run as Docker runs it."""
    instruction = only("HEALTHCHECK")
    probe = json.loads(instruction[instruction.index("CMD ") + 4 :])
    return subprocess.run(probe, env=env, timeout=10, capture_output=True, text=True, check=False)


def test_the_image_recipe_makes_a_relay_that_passes_its_healthcheck(
    image: Image, tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with container(image, fake_telegram, tmp_path, data / "relay-spool.sqlite3") as (url, env):
        checked = healthcheck(env)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        reply, _ = post(f"{url}/webhook/{SECRET}", titled("From the image recipe"))
        assert reply.status_code in TAKEN
        assert wait_until(lambda: "From the image recipe" in delivered_titles(fake_telegram), 10)
        assert (data / "relay-spool.sqlite3").exists()  # on the volume


def test_the_image_turns_unhealthy_when_its_spool_is_unusable(
    image: Image, tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    # A /data that was never mounted, or mounted where the relay may not write: the relay
    # starts and delivers, but every waiting alert would live in memory only.
    missing = tmp_path / "no-volume" / "relay-spool.sqlite3"
    with container(image, fake_telegram, tmp_path, missing) as (url, env):
        checked = healthcheck(env)
        assert checked.returncode == 1
        assert "not ready (503 from" in checked.stderr
        assert f"spool unusable: the directory {missing.parent} does not exist" in checked.stderr
        reply, _ = post(f"{url}/webhook/{SECRET}", titled("Still delivered"))
        assert reply.status_code in TAKEN
        assert wait_until(lambda: "Still delivered" in delivered_titles(fake_telegram), 10)


def test_the_healthcheck_asks_the_admin_listener_when_there_is_one(
    image: Image, tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with container(image, fake_telegram, tmp_path, data / "relay-spool.sqlite3") as (_, env):
        nobody = free_port()
        checked = healthcheck({**env, "RELAY_ADMIN_BIND": f"127.0.0.1:{nobody}"})
        assert checked.returncode == 1
        assert f"the relay does not answer at http://127.0.0.1:{nobody}/readyz" in checked.stderr
