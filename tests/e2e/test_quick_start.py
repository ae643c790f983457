"""The README's quick start, followed as a newcomer would, against the fake Telegram: the bot
was added to a group, `relay-app chats` finds its id, the exports set it and a secret, the
relay starts, and the README's own curl command posts the sample alert, which reaches the chat.

The README's commands are read from it and run as written, with three changes a test needs:
the install (this checkout's venv already has the relay; `pip install .` would replace its
editable install), Telegram's URL (the fake's) and the port (a free one, not 8780)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.helpers import wait_until
from tests.e2e.relay_process import ROOT, RelayProcess, run_here
from tests.fake_glitchtip import ADMIN_TOKEN, PROJECT, FakeGlitchTip
from tests.fake_telegram import TOKEN, FakeTelegram

README = (ROOT / "README.md").read_text()
PLACEHOLDER_TOKEN = "123456789:your-token-from-BotFather"
GROUP = {"id": -1001234567890, "type": "supergroup", "title": "Ops"}


def quick_start_blocks() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [
        "\n".join(line.strip() for line in block.splitlines())
        for block in re.findall(r"```sh\n(.*?)\n\s*```", section, re.DOTALL)
    ]


def block_with(text: str) -> str:
    [block] = [block for block in quick_start_blocks() if text in block]
    return block


def shell(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_here(["bash", "-euo", "pipefail", "-c", script], env, inherit=False)


def test_the_readme_quick_start_puts_the_sample_alert_then_glitchtips_own_in_the_chat(
    fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip, tmp_path: Path
) -> None:
    # Step 2: the bot was added to the group, as Telegram tells it.
    fake_telegram.updates = [
        {
            "update_id": 1,
            "my_chat_member": {
                "chat": GROUP,
                "from": {"id": 42, "is_bot": False, "first_name": "Ada"},
                "date": 1796000000,
                "old_chat_member": {"user": {"id": 1}, "status": "left"},
                "new_chat_member": {"user": {"id": 1}, "status": "member"},
            },
        }
    ]
    venv_bin = str(Path(sys.executable).parent)
    base_env = {
        "PATH": f"{venv_bin}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "TELEGRAM_API_URL": fake_telegram.url,
        "RELAY_SPOOL_PATH": str(tmp_path / "spool.sqlite3"),
    }

    # Step 3: find the chat id. The install line is the one line left out.
    finding = block_with("relay-app chats")
    install, *rest = finding.splitlines()
    assert install == "python3 -m venv .venv && .venv/bin/pip install ."
    found = shell(
        "\n".join(rest).replace(PLACEHOLDER_TOKEN, TOKEN).replace(".venv/bin/", f"{venv_bin}/"),
        base_env,
    )
    assert found.returncode == 0, found.stderr
    assert "export TELEGRAM_CHAT_ID='-1001234567890'" in found.stdout  # pasteable as printed

    # ...and set it, and a secret, as the README's exports do.
    exports = block_with("export TELEGRAM_CHAT_ID=")
    assert "TELEGRAM_CHAT_ID='-1001234567890'" in exports  # the id relay-app chats printed
    setting = shell(f"{rest[0]}\n{exports}\nenv", base_env)
    assert setting.returncode == 0, setting.stderr
    env = dict(line.split("=", 1) for line in setting.stdout.splitlines() if "=" in line)
    env["TELEGRAM_BOT_TOKEN"] = TOKEN
    assert len(env["RELAY_WEBHOOK_SECRET"]) >= 32

    # Step 4: start the relay, as written, on a port of the test's.
    start = block_with("gunicorn wsgi:app")
    assert start == ".venv/bin/gunicorn wsgi:app &"
    relay = RelayProcess(env, tmp_path / "relay.log").wait_ready()
    try:
        # Step 5: the README's curl, to that port.
        curl = block_with("curl ")
        assert "http://127.0.0.1:8780/" in curl
        posted = shell(curl.replace("127.0.0.1:8780", f"127.0.0.1:{relay.port}"), env)
        assert posted.returncode == 0, posted.stderr
        assert posted.stdout.strip() == '{"status":"sent"}'
        assert f"`{posted.stdout.strip()}`" in README  # what the README says it answers
        assert wait_until(lambda: len(fake_telegram.messages) == 1, timeout=10)
        [message] = fake_telegram.messages
        assert message["chat_id"] == -1001234567890
        assert fake_telegram.texts()[0].startswith(
            "🔴 GlitchTip Alert\n\nZeroDivisionError: division by zero"
        )

        # Step 6: connect GlitchTip (the fake's address, its token with project:write, its
        # project), and prove the path with a test event of its own.
        connecting = block_with("glitchtip connect")
        assert "--relay-url http://127.0.0.1:8780 --test" in connecting
        script = (
            connecting.replace("https://glitchtip.example.org", fake_glitchtip.url)
            .replace("your-64-hex-token", ADMIN_TOKEN)
            .replace("your-org/your-project", PROJECT)
            .replace("127.0.0.1:8780", f"127.0.0.1:{relay.port}")
            .replace(".venv/bin/", f"{venv_bin}/")
        )
        connected = shell(script, env)
        assert connected.returncode == 0, connected.stdout + connected.stderr
        assert "hop 3: the relay delivered the test alert" in connected.stdout
        assert wait_until(lambda: len(fake_telegram.messages) == 2, timeout=10)
        assert "relay_app connect test " in fake_telegram.texts()[1]
    finally:
        relay.stop()


@pytest.mark.parametrize("line", ["chats", "check --send", "glitchtip connect", "sentry send"])
def test_the_commands_the_quick_start_names_exist(line: str) -> None:
    assert f"relay-app {line}" in README
    usage = run_here(
        [str(Path(sys.executable).with_name("relay-app")), *line.split(), "--help"], {}
    )
    assert usage.returncode == 0, usage.stderr
