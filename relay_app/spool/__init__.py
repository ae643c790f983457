"""The spool: every accepted alert, from the webhook until Telegram has it or it is declared dead.

- `database.py`: the SQLite file (open, upgrade, repair, fork) and every unit of work on it;
- `queue.py`: the scheduled queue's interface (admit, claim, settle), and what backends share;
- `sqlite_queue.py`: the queue in the file;
- `memory.py`: the same queue in one process's memory, when the file cannot be used;
- `pacer.py`: Telegram's rate limits shared through the file;
- `health_store.py`: Telegram's health shared through the file;
- `admin.py`: what `relay-app spool` and the metrics read;
- `holders.py`: who holds a lease, and whether it still can;
- `model.py`, `schema.py`: the data and the file's schema;
- `postgres/`: the same spool in PostgreSQL, shared by several relays (RELAY_SPOOL_URL).
"""

from __future__ import annotations

from .admin import Admin, SpoolAdmin
from .database import Database
from .health_store import SqliteHealthStore
from .holders import Holder, this_process
from .memory import MemoryQueue
from .model import Admission, Claim, Lane, Later, SpooledAlert, State
from .queue import Queue
from .sqlite_queue import SqliteQueue

__all__ = [
    "Admin",
    "Admission",
    "Claim",
    "Database",
    "Holder",
    "Lane",
    "Later",
    "MemoryQueue",
    "Queue",
    "SpoolAdmin",
    "SpooledAlert",
    "SqliteHealthStore",
    "SqliteQueue",
    "State",
    "this_process",
]
