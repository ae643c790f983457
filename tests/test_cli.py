from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay_app.cli import main
from relay_app.core.logs import redacted_url
from relay_app.operating.cli import parse_duration
from relay_app.spool import Admin
from relay_app.spool.database import Database
from relay_app.spool.postgres import PgDatabase
from tests.conftest import CHAT_ID, put_in_spool, store_at
from tests.payloads import issue, issue_alert, uptime_alert
from tests.postgres import PASSWORD


def run(spool: Admin | str, *argv: str) -> tuple[int, str, str]:
    """relay-app with the environment that names `spool`: a path, or a spool's admin."""
    if isinstance(spool, Admin) and "://" in spool.path:
        # The admin names the database without its password, as every tool shows it.
        environ = {"RELAY_SPOOL_URL": spool.path.replace(":***@", f":{PASSWORD}@")}
    else:
        environ = {"RELAY_SPOOL_PATH": spool if isinstance(spool, str) else spool.path}
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), environ=environ, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(params=["sqlite", "postgres"])
def spool(request: pytest.FixtureRequest, spool_path: str) -> Iterator[Admin]:
    """One pending alert (#1) and two dead ones (#2 received a day ago, #3 now), in the spool
    file or in PostgreSQL."""
    where = spool_path if request.param == "sqlite" else request.getfixturevalue("pg_url")
    now = time.time()
    put_in_spool(where, issue_alert(issue(1)), received_at=now)
    for received_at, payload in (
        (now - 86400, issue_alert(issue(2, title="Old <dead> alert"))),
        (now, uptime_alert(down=True, name="Checkout API")),
    ):
        put_in_spool(
            where,
            payload,
            received_at=received_at,
            dead_because="Telegram refused the message (403): Forbidden: bot was kicked",
        )
    admin: Admin
    if request.param == "sqlite":
        admin = Admin(Database(spool_path, for_service=False))
    else:
        admin = Admin(PgDatabase(where, for_service=False))
    yield admin
    admin.close()


def test_list_shows_pending_alerts_by_default(spool: Admin) -> None:
    code, out, _ = run(spool, "spool", "list")
    assert code == 0
    header, first, blank, summary = out.splitlines()
    assert header.split()[:3] == ["ID", "RECEIVED", "(UTC)"]
    assert first.startswith("1  ")
    assert f"  {CHAT_ID}  " in first  # where it goes
    assert "🔴 GlitchTip Alert · ZeroDivisionError: division by zero #1  -" in first
    assert blank == ""
    assert summary == f"1 pending, 2 dead in {spool.path}"


def test_list_dead_shows_the_last_error(spool: Admin) -> None:
    code, out, _ = run(spool, "spool", "list", "--dead")
    assert code == 0
    lines = out.splitlines()
    assert "DIED (UTC)" in lines[0]
    assert lines[1].startswith("2  ")
    assert "Old <dead> alert" in lines[1]
    assert lines[1].endswith("Telegram refused the message (403): Forbidden: bot was kicked")
    assert lines[2].startswith("3  ")
    assert "🔴 DOWN · Checkout API" in lines[2]


def test_list_names_what_an_alert_is_about_never_its_second_chances_note(
    spool_path: str,
) -> None:
    """An alert sent again after a lost answer begins with a note that it may repeat an
    earlier message; the table shows its issues' titles instead."""
    now = time.time()
    payload = issue_alert(issue(7, title="Payment failed"), issue(8, title="Disk full"))
    job_id = put_in_spool(spool_path, payload, received_at=now)
    store = store_at(spool_path)
    try:
        store.write(
            lambda tx: tx.execute("UPDATE jobs SET second_chance = TRUE WHERE id = ?", (job_id,))
        )
    finally:
        store.close()
    code, out, _ = run(spool_path, "spool", "list")
    assert code == 0
    row = out.splitlines()[1]
    assert "🔴 GlitchTip Alert (2 issues) · Payment failed · Disk full" in row
    assert "Sent again" not in row


def test_retry_makes_dead_alerts_pending_again(spool: Admin) -> None:
    code, out, err = run(spool, "spool", "retry", "2", "#1")
    assert (code, err) == (0, "")
    assert "#2: pending again" in out
    assert "#1: already pending; left as it is" in out
    assert [a.id for a in spool.alerts("pending")] == [1, 2]
    assert spool.alerts("pending")[1].attempts == 0  # a fresh start, horizon included


def test_retry_of_an_unknown_id_fails_and_says_which(spool: Admin) -> None:
    code, out, err = run(spool, "spool", "retry", "3", "42")
    assert code == 1
    assert "#3: pending again" in out
    assert err == f"relay-app: error: no such alert in {spool.path}: #42\n"


def test_retry_all_dead(spool: Admin) -> None:
    code, out, _ = run(spool, "spool", "retry", "--all-dead")
    assert code == 0
    assert out.startswith("2 dead alert(s) are pending again.")
    assert spool.counts() == {"pending": 3, "dead": 0}


def test_purge_deletes_only_dead_alerts_older_than_asked(spool: Admin) -> None:
    code, out, _ = run(spool, "spool", "purge", "--dead", "--older-than", "12h")
    assert code == 0
    assert out.startswith("Deleted 1 dead alert(s) received before ")
    assert [a.id for a in spool.alerts("dead")] == [3]
    run(spool, "spool", "purge", "--dead", "--older-than", "0")
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
    spool: Admin, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(spool, *argv)[0] == 2
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


def test_a_database_without_a_spool_says_so_and_never_shows_the_password(pg_url: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["spool", "list"], environ={"RELAY_SPOOL_URL": pg_url}, out=out, err=err)
    assert code == 1
    shown = redacted_url(pg_url)
    assert err.getvalue() == f"relay-app: error: there is no relay spool in the database {shown}\n"
    assert ":***@" in shown
    assert PASSWORD not in out.getvalue() + err.getvalue()
