"""The spool's store in PostgreSQL (`RELAY_SPOOL_URL`), shared by every relay pointed at the
database: `database.py` (pool, schema, the database's clock, notifications, errors) and
`schema.py`. The spool's statements are the same as for the file (spool/queue.py and beside)."""

from __future__ import annotations

from .database import PgDatabase

__all__ = ["PgDatabase"]
