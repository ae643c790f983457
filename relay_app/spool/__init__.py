"""The spool: every write to a chat, from when it is asked for until Telegram has it or it is
declared dead (an alert's dead letter is kept), and what the relay keeps beside it.

- `opening.py`: the one place a spool is opened, from the settings (`open_spool`), this
  host's own file beside a spool in PostgreSQL (`open_local`), or in memory (`open_memory`);
- `moving.py`: what that file held, moved into the spool once it answers again;
- `queue.py`: the scheduled queue (add, claim, settle), written once for every store;
- `precedence.py`: alerts first, which of a chat's writes takes its next turn;
- `answers.py`: answers to what people typed, at most so many waiting for a chat;
- `job_rows.py`: the jobs table, and every change to a job's ledger;
- `store.py`: what those statements run on (a unit of work, the store's time, the dialect);
- `database.py`: the SQLite file, or a private in-memory database (open, upgrade, repair);
- `postgres/`: the database several relays share (RELAY_SPOOL_URL);
- `pacer.py`: Telegram's rate limits shared through the spool;
- `health_store.py`: Telegram's health shared through the spool;
- `leader.py`: the fleet's leader's lease, and the updates' offset its term fences;
- `admin.py`: what `relay-app spool` and the metrics read;
- `holders.py`: who holds a lease, and whether it still can;
- `model.py`, `schema.py`: the data and the file's schema.

A capability keeps its own store (its tables' statements) in its package, made on a spool by
`Spool.of`; the schema's one history (history.py) holds every table's steps.
"""

from __future__ import annotations

from .admin import Admin
from .holders import Holder, this_process
from .model import (
    Claim,
    Job,
    JobKind,
    Lane,
    Later,
    NewJob,
    Precedence,
    Settled,
    Settlement,
    State,
)
from .opening import LocalSpool, Spool, on_store, open_local, open_memory, open_spool, open_store
from .queue import Claimant, Queue, Taking

__all__ = [
    "Admin",
    "Claim",
    "Claimant",
    "Holder",
    "Job",
    "JobKind",
    "Lane",
    "Later",
    "LocalSpool",
    "NewJob",
    "Precedence",
    "Queue",
    "Settled",
    "Settlement",
    "Spool",
    "State",
    "Taking",
    "on_store",
    "open_local",
    "open_memory",
    "open_spool",
    "open_store",
    "this_process",
]
