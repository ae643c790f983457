"""Who holds a lease, precisely enough to tell whether it can still be working on it.

A lease names its holder by host, boot, PID namespace, process id and the process's start time.
On the same host, in the same PID namespace, the relay can then ask the kernel: a holder that no
longer exists (crashed, killed, restarted) has its leases freed at once instead of when they
expire, and a holder that does exist keeps them whatever the wall clock says, so a clock stepped
forward during a slow attempt never lets a second job send the same alert. Any other holder is
judged by the time its lease runs out: on another host, or in another container (two
containers can be given one hostname, but each has a PID namespace of its own, where a pid
names some other process or none), or named by an older relay that did not record its
namespace.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Container
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_PROC = "/proc"


@dataclass(frozen=True)
class Holder:
    host: str
    boot: str  # the kernel's boot id: a pid from before a reboot names nobody now
    pid: int
    started: str  # the process's start time in clock ticks since boot; "" where unknown
    pidns: str = ""  # the PID namespace the pid is in; "" where unknown

    def __str__(self) -> str:
        return f"{self.host}/{self.boot}/{self.pid}/{self.started}/{self.pidns}"

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """A holder as `str` wrote it, or as an older relay did (without its PID namespace)."""
        parts = text.split("/")
        if len(parts) == 4:
            parts.append("")
        if len(parts) != 5 or not parts[2].isdigit():
            return None
        host, boot, pid, started, pidns = parts
        return cls(host, boot, int(pid), started, pidns)

    def is_here(self, other: Holder) -> bool:
        """On the same host, in the same boot and PID namespace, as `other`: where this
        process's pid names the same process for both."""
        return (
            self.host == other.host
            and self.boot == other.boot
            and self.pidns == other.pidns
            and self.pidns != ""
        )

    def is_gone(self) -> bool:
        """This process no longer exists. Only meaningful for a holder on this host."""
        if self.started and self.started != _start_time(self.pid):
            return True  # exited, and maybe its pid reused
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # exists, as another user
        return False


def this_process() -> Holder:
    """This process's name on the leases it holds; a forked child gets its own."""
    return _holder(os.getpid())


@lru_cache(maxsize=1)
def _holder(pid: int) -> Holder:
    return Holder(socket.gethostname(), _boot_id(), pid, _start_time(pid), _pid_namespace())


def lease_is_free(
    holder_text: str | None,
    token: str | None,
    until: float | None,
    *,
    now: float,
    me: Holder,
    in_flight: Container[str],
) -> bool:
    """Whether a lease no longer stops `me` from taking over what it covers."""
    if token is None:
        return True
    holder = Holder.parse(holder_text or "")
    if holder is None:
        return until is None or until < now  # not written by this code: only time can tell
    if holder == me:
        # Ours: taken back unless one of our jobs is still on it (a settle that failed
        # leaves a lease nobody works on).
        return token not in in_flight
    if holder.is_here(me):
        return holder.is_gone()  # a live process on this host finishes its own attempt
    return until is None or until < now


def row_is_free(row: Any, *, now: float, me: Holder, in_flight: Container[str]) -> bool:
    """`lease_is_free` for a row of the lanes table (its holder, token and until)."""
    return lease_is_free(
        row["holder"], row["token"], row["until"], now=now, me=me, in_flight=in_flight
    )


def _boot_id() -> str:
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id") as boot:
            return boot.read().strip()[:8]
    except OSError:
        return ""


def _pid_namespace() -> str:
    """This process's PID namespace, as the kernel numbers it ('4026531836')."""
    try:
        link = os.readlink(f"{_PROC}/self/ns/pid")  # 'pid:[4026531836]'
    except OSError:
        return ""
    return "".join(char for char in link if char.isdigit())


def _start_time(pid: int) -> str:
    try:
        with open(f"{_PROC}/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return ""
    # Field 22 of the file, counted after the command name (which may hold spaces and ')').
    return fields[19] if len(fields) > 19 else ""
