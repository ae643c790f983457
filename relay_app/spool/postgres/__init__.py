"""The spool in PostgreSQL (`RELAY_SPOOL_URL`), shared by every relay pointed at the database:
`database.py` (pool, schema, the database's clock, errors), `queue.py` (the scheduled queue),
`pacer.py` (the fleet's turns), `health_store.py`, `admin.py`, `schema.py`."""

from __future__ import annotations

from .admin import PgSpoolAdmin
from .database import PgDatabase, redacted_url
from .health_store import PgHealthStore
from .queue import PgQueue

__all__ = ["PgDatabase", "PgHealthStore", "PgQueue", "PgSpoolAdmin", "redacted_url"]
