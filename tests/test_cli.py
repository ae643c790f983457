from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from relay_app.cli import main, parse_duration
from relay_app.formatting import format_alert
from relay_app.glitchtip import parse_alert
from relay_app.spool import Database, SpoolAdmin
from tests.conftest import CHAT_ID, put_in_spool
from tests.payloads import issue, issue_alert, uptime_alert


def run(spool_path: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), environ={"RELAY_SPOOL_PATH": spool_path}, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def spool(spool_path: str) -> SpoolAdmin:
    """One pending alert (#1) and two dead ones (#2 received a day ago, #3 now)."""
    now = time.time()
    put_in_spool(spool_path, format_alert(parse_alert(issue_alert(issue(1)))), received_at=now)
    for received_at, payload in (
        (now - 86400, issue_alert(issue(2, title="Old <dead> alert"))),
        (now, uptime_alert(down=True, name="Checkout API")),
    ):
        put_in_spool(
            spool_path,
            format_alert(parse_alert(payload)),
            received_at=received_at,
            dead_because="Telegram refused the message (403): Forbidden: bot was kicked",
        )
    return SpoolAdmin(Database(spool_path, for_service=False))


def test_list_shows_pending_alerts_by_default(spool: SpoolAdmin) -> None:
    code, out, _ = run(spool.path, "spool", "list")
    assert code == 0
    header, first, blank, summary = out.splitlines()
    assert header.split()[:3] == ["ID", "RECEIVED", "(UTC)"]
    assert first.startswith("1  ")
    assert f"  {CHAT_ID}  " in first  # where it goes
    assert "🔴 GlitchTip Alert · ZeroDivisionError: division by zero #1…  -" in first
    assert blank == ""
    assert summary == f"1 pending, 2 dead in {spool.path}"


def test_list_dead_shows_the_last_error(spool: SpoolAdmin) -> None:
    code, out, _ = run(spool.path, "spool", "list", "--dead")
    assert code == 0
    lines = out.splitlines()
    assert "DIED (UTC)" in lines[0]
    assert lines[1].startswith("2  ")
    assert "Old <dead> alert" in lines[1]
    assert lines[1].endswith("Telegram refused the message (403): Forbidden: bot was kicked")
    assert lines[2].startswith("3  ")
    assert "🔴 DOWN · Checkout API" in lines[2]


def test_retry_makes_dead_alerts_pending_again(spool: SpoolAdmin) -> None:
    code, out, err = run(spool.path, "spool", "retry", "2", "#1")
    assert (code, err) == (0, "")
    assert "#2: pending again" in out
    assert "#1: already pending; left as it is" in out
    assert [a.id for a in spool.alerts("pending")] == [1, 2]
    assert spool.alerts("pending")[1].attempts == 0  # a fresh start, horizon included


def test_retry_of_an_unknown_id_fails_and_says_which(spool: SpoolAdmin) -> None:
    code, out, err = run(spool.path, "spool", "retry", "3", "42")
    assert code == 1
    assert "#3: pending again" in out
    assert err == f"relay-app: error: no such alert in {spool.path}: #42\n"


def test_retry_all_dead(spool: SpoolAdmin) -> None:
    code, out, _ = run(spool.path, "spool", "retry", "--all-dead")
    assert code == 0
    assert out.startswith("2 dead alert(s) are pending again.")
    assert spool.counts() == {"pending": 3, "dead": 0}


def test_purge_deletes_only_dead_alerts_older_than_asked(spool: SpoolAdmin) -> None:
    code, out, _ = run(spool.path, "spool", "purge", "--dead", "--older-than", "12h")
    assert code == 0
    assert out.startswith("Deleted 1 dead alert(s) received before ")
    assert [a.id for a in spool.alerts("dead")] == [3]
    run(spool.path, "spool", "purge", "--dead", "--older-than", "0")
    assert spool.counts() == {"pending": 1, "dead": 0}


@pytest.mark.parametrize(
    "argv",
    [
        ["spool"],
        ["spool", "retry"],
        ["spool", "retry", "2", "--all-dead"],
        ["spool", "retry", "two"],
        ["spool", "purge", "--older-than", "7d"],  # --dead is required: pending ones never go
        ["spool", "purge", "--dead", "--older-than", "a week"],
        ["spool", "drop"],
    ],
)
def test_wrong_usage_exits_2(
    spool: SpoolAdmin, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(spool.path, *argv)[0] == 2
    assert "usage: relay-app" in capsys.readouterr().err


def test_a_missing_spool_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "typo.sqlite3"
    code, _, err = run(str(path), "spool", "list")
    assert code == 1
    assert err == f"relay-app: error: there is no spool at {path}\n"
    assert not path.exists()


def test_a_relative_spool_path_that_finds_nothing_names_the_directory_it_looked_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("relay-spool.sqlite3", "spool", "list")
    assert code == 1
    assert err == (
        f"relay-app: error: there is no spool at {tmp_path / 'relay-spool.sqlite3'} "
        f"(relay-spool.sqlite3 in {tmp_path}): run this in the relay's working directory, or set "
        "RELAY_SPOOL_PATH to the spool's full path\n"
    )


def test_a_switched_off_spool_is_a_configuration_error() -> None:
    code, _, err = run("off", "spool", "list")
    assert code == 2
    assert "RELAY_SPOOL_PATH is 'off'" in err


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("3600", 3600), ("90s", 90), ("15m", 900), ("12h", 43200), ("7d", 604800), ("1d12h", 129600)],
)
def test_durations(raw: str, seconds: float) -> None:
    assert parse_duration(raw) == seconds
