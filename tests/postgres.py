"""A real PostgreSQL server for the tests: `initdb` in a temporary directory, `pg_ctl` on a free
port of 127.0.0.1, an empty database per test. Debian's `postgresql` package provides the
programs (.ci/run installs it when `pg_ctl` is missing). As root, the server runs as the
`postgres` user, since PostgreSQL refuses to run as root."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

PASSWORD = "pg-test-password-never-logged"  # a throwaway test server's
USER = "relay"
_databases = itertools.count(1)


def _programs() -> Path | None:
    found = shutil.which("pg_ctl")
    if found is not None:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return versions[-1].parent if versions else None


def available() -> bool:
    return _programs() is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    def __init__(self) -> None:
        bin_dir = _programs()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self._bin = bin_dir
        self.port = _free_port()
        # Databases lent to a test and emptied since, for the next (lend_database).
        self._lent_back: list[str] = []
        self._root = Path(tempfile.mkdtemp(prefix="relay-pg-"))
        self.data = self._root / "data"
        self.socket_dir = self._root / "sockets"
        self.socket_dir.mkdir()
        self.log = self._root / "server.log"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self._root, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        password_file = self._root / "password"
        password_file.write_text(PASSWORD + "\n")
        if self._as_user:
            shutil.chown(password_file, "postgres", "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            USER,
            "--auth=scram-sha-256",
            f"--pwfile={password_file}",
            "--no-sync",
            "-E",
            "UTF8",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "max_connections = 200\n"
            )
        self.start()

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [*self._as_user, str(self._bin / program), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")

    def _processes(self) -> list[int]:
        """The postmaster (data/postmaster.pid's first line) and every process it started."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        # Every process's parent read from /proc, not /proc/<pid>/task/<pid>/children, which
        # the kernel documents as unreliable while children are being created.
        return [postmaster, *(pid for pid, parent in _parents().items() if parent == postmaster)]

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The server stops answering, as in a failover, a long lock or a network blip: its
        processes stopped (SIGSTOP), every connection left open and silent; continued after."""
        # The postmaster first, so that it forks no backend while its children are listed; then
        # its children, listed again until none appears that a fork in progress left out.
        postmaster, *_ = self._processes()
        os.kill(postmaster, signal.SIGSTOP)
        stopped = [postmaster]
        for _ in range(10):
            new = [pid for pid in self._processes() if pid not in stopped]
            if not new:
                break
            for pid in new:
                os.kill(pid, signal.SIGSTOP)
            stopped += new
        # A signal is delivered when its process next runs: on a loaded machine, some time
        # after kill() returns. The test's statements start once every one has stopped.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(_stopped(pid) for pid in stopped):
            time.sleep(0.01)
        try:
            yield
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def restart(self) -> None:
        self.stop()
        self.start()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    @property
    def programs(self) -> Path:
        """Where the server's programs are (pg_dump beside pg_ctl)."""
        return self._bin

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"relay_test_{os.getpid()}_{next(_databases)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            # A copy of the template's files: on PostgreSQL 15 and later the default writes
            # the whole template through the WAL, 40% slower for the suite's hundred databases.
            copy = " STRATEGY FILE_COPY" if connection.info.server_version >= 150000 else ""
            connection.execute(f"CREATE DATABASE {name}{copy}")
        return self.url(name)

    def lend_database(self) -> str:
        """An empty database for one test, its URL: one given back before (`give_back`), or a
        new one. Made once and emptied after each test, as a fresh one would be: a `CREATE
        DATABASE` costs the server two checkpoints, about eight times an emptying's processor
        time, and a session makes one per test that asks."""
        return self._lent_back.pop() if self._lent_back else self.new_database()

    def give_back(self, url: str) -> None:
        """A lent database emptied for the next test: its sessions ended, its schema `public`
        made again as `initdb` makes it (owned by the database's owner, used by anyone). One
        that cannot be emptied now (the server stopped by the test) is dropped instead."""
        name = url.rsplit("/", 1)[1]
        try:
            with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as server:
                server.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                )
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as database:
                database.execute("SET lock_timeout = '10s'")
                database.execute(
                    "DROP SCHEMA public CASCADE;"
                    " CREATE SCHEMA public AUTHORIZATION pg_database_owner;"
                    " GRANT USAGE ON SCHEMA public TO PUBLIC;"
                    " COMMENT ON SCHEMA public IS 'standard public schema'"
                )
        except psycopg.Error:
            with contextlib.suppress(psycopg.Error):
                self.drop_database(url)
            return
        self._lent_back.append(url)

    def drop_database(self, url: str) -> None:
        """Drop a database `new_database` made, connections and all: a session makes a hundred,
        and the server's files (its teardown deletes them) would grow by each one's 8 MB."""
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as connection:
            force = " WITH (FORCE)" if connection.info.server_version >= 130000 else ""
            connection.execute(f"DROP DATABASE IF EXISTS {name}{force}")

    def close(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self.stop("immediate")
        shutil.rmtree(self._root, ignore_errors=True)


def _parents() -> dict[int, int]:
    """Each process's parent, by pid, as /proc says now."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command's name, in parentheses, may hold spaces: the fields after it count.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    return parents


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (or gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("T", "t", "Z", "X")
