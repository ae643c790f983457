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
from pathlib import Path

import requests

from tests.e2e.helpers import post, titled, wait_until
from tests.e2e.relay_process import ROOT, SECRET, free_port, relay_env
from tests.fake_telegram import FakeTelegram

INSTALL_TIMEOUT = 300.0


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


def test_the_image_recipe_makes_a_relay_that_passes_its_healthcheck(
    tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    app = tmp_path / "app"
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
    # The image's own places and port, moved to the test's.
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    image_env["RELAY_BIND"] = f"127.0.0.1:{port}"
    image_env["RELAY_SPOOL_PATH"] = str(data / "relay-spool.sqlite3")
    image_env.pop("VIRTUAL_ENV", None)

    subprocess.run(
        ["bash", "-c", only("RUN", "pip install")],
        cwd=app,
        env=image_env,
        check=True,
        timeout=INSTALL_TIMEOUT,
        capture_output=True,
    )
    command = json.loads(only("CMD"))
    assert shutil.which(command[0], path=image_env["PATH"]) == str(app / ".venv/bin/gunicorn")
    service_env = {**image_env, **relay_env(fake_telegram)}
    service_env["RELAY_SPOOL_PATH"] = image_env["RELAY_SPOOL_PATH"]
    log = (tmp_path / "relay.log").open("wb")
    relay = subprocess.Popen(
        command, cwd=app, env=service_env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        url = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            try:
                return requests.get(f"{url}/healthz", timeout=1).status_code == 200
            except requests.ConnectionError:
                return False

        assert wait_until(healthy, timeout=20), (tmp_path / "relay.log").read_text()
        healthcheck = only("HEALTHCHECK")
        probe = json.loads(healthcheck[healthcheck.index("CMD ") + 4 :])
        assert subprocess.run(probe, env=service_env, timeout=10).returncode == 0
        reply, _ = post(f"{url}/webhook/{SECRET}", titled("From the image recipe"))
        assert reply.status_code == 200
        assert (data / "relay-spool.sqlite3").exists()  # on the volume
    finally:
        relay.terminate()
        relay.wait(40)
        log.close()
