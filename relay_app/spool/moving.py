"""What this host's own file held while the spool in PostgreSQL could not take it in time,
moved into the spool once it answers again: the other relays can then send it too, and a
host that is lost later loses none of it.

A move is three units of work, and any of them may be cut short:

1. In the file: the jobs of every lane no attempt holds are lent out, their lanes leased to
   the move (so no attempt of this host starts on them meanwhile).
2. In the spool: each job is added, with the name it arrived with (`local-3@web-1`), unless its
   origin (the file's own name, drawn once, and its id there) is recorded as moved already,
   in the same transaction. A move cut short after this and made again adds nothing, even if
   the spool's copy was delivered (and deleted) in between.
3. In the file: the jobs moved are deleted, and their lanes freed.

So no alert is sent twice across the fleet because of a move: it is in one place to be sent
from at a time (the file, whose lane the move holds, or the spool), and adding it again is
refused by its origin.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from ..core.errors import SpoolError
from . import job_rows as rows
from .holders import Holder, row_is_free
from .model import label_for
from .store import Store, Tx

log = logging.getLogger("relay_app.spool")

# Jobs moved in one go: a storm held in the file moves in a few seconds, each unit of work
# short enough for a webhook waiting on the spool behind it.
MOVE_AT_ONCE = 200
# The moves recorded are kept this long: a move cut short is made again within seconds.
MOVES_KEPT_FOR = 7 * 86400.0


@dataclass(frozen=True)
class Lent:
    """Jobs of the file lent to one move, by id (copy_of's), while its token holds their
    lanes."""

    spool_name: str
    token: str
    copies: dict[int, dict[str, Any]]


class Mover:
    def __init__(self, local: Store, spool: Store) -> None:
        self._local = local
        self._spool = spool

    def move(
        self, *, holder: Holder, in_flight: Container[str], lease_for: float, now: float
    ) -> int:
        """Move what waits in the file into the spool; how many jobs were added there. Raises
        SpoolError when either cannot be used (what was lent is given back when it can)."""
        token = secrets.token_hex(8)
        lent = self._local.write(lambda tx: _lend(tx, holder, token, in_flight, lease_for), now=now)
        if not lent.copies:
            return 0
        try:
            added = self._spool.write(lambda tx: _adopt(tx, lent), now=now)
        except SpoolError:
            self._local.write(lambda tx: _free(tx, token), now=now)
            raise
        self._local.write(lambda tx: _forget(tx, lent), now=now)
        log.info(
            "%d job(s) that waited in this host's file %s are in the spool now (%d added, the "
            "rest moved before)",
            len(lent.copies),
            self._local.path,
            added,
        )
        return added


def _lend(tx: Tx, holder: Holder, token: str, in_flight: Container[str], lease_for: float) -> Lent:
    name = str(tx.one("SELECT name FROM spool_name")["name"])
    copies: dict[int, dict[str, Any]] = {}
    for lane in tx.all("SELECT lane, holder, token, until FROM lanes ORDER BY lane"):
        free = row_is_free(lane, now=tx.at.db, me=holder, in_flight=in_flight)
        found = tx.all(
            "SELECT * FROM jobs WHERE lane = ? ORDER BY id LIMIT ?",
            (lane["lane"], MOVE_AT_ONCE - len(copies)),
        )
        if not free or not found:
            continue
        tx.execute(
            "UPDATE lanes SET holder = ?, token = ?, until = ? WHERE lane = ?",
            (str(holder), token, tx.at.db + lease_for, lane["lane"]),
        )
        for row in found:
            label = row["label"] or label_for("local", int(row["id"]))
            copies[int(row["id"])] = rows.copy_of(row, tx.at, label=label)
        if len(copies) >= MOVE_AT_ONCE:
            break
    return Lent(name, token, dict(sorted(copies.items())))


def _adopt(tx: Tx, lent: Lent) -> int:
    added = 0
    for job_id, copy in lent.copies.items():
        first = tx.one(
            "INSERT INTO moved (origin, at) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING origin",
            (f"{lent.spool_name}:{job_id}", tx.at.db),
        )
        if first is not None:
            rows.insert_copy(tx, copy)
            added += 1
    tx.execute("DELETE FROM moved WHERE at < ?", (tx.at.db - MOVES_KEPT_FOR,))
    if added:
        tx.notify()  # every relay on the spool may take them up now
    return added


def _forget(tx: Tx, lent: Lent) -> None:
    tx.executemany(
        "DELETE FROM jobs WHERE id = ? AND lane IN (SELECT lane FROM lanes WHERE token = ?)",
        [(job_id, lent.token) for job_id in lent.copies],
    )
    _free(tx, lent.token)


def _free(tx: Tx, token: str) -> None:
    tx.execute(
        "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE token = ?", (token,)
    )
