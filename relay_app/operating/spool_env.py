"""Where the spool is, as the service and the CLI read it: RELAY_SPOOL_PATH (the SQLite file),
RELAY_SPOOL_URL (PostgreSQL) and RELAY_LOCAL_SPOOL_PATH (this host's own file beside it). Apart
from config.py so that what keeps files beside the spool (routes_file.py) reads them too."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from .env_values import ConfigError

DEFAULT_SPOOL_PATH = "relay-spool.sqlite3"
# With the spool in PostgreSQL: this host's own file, for alerts it could not take in time.
DEFAULT_LOCAL_SPOOL = "relay-local-spool.sqlite3"
# RELAY_SPOOL_PATH=off: no spool, retries held in memory only (lost with the process).
SPOOL_OFF = "off"


def spool_url_from_env(environ: Mapping[str, str]) -> str | None:
    """RELAY_SPOOL_URL: postgresql://user:password@host:5432/dbname (or postgres://). Never
    echoed in an error: it holds a password."""
    name = "RELAY_SPOOL_URL"
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
        raise ConfigError(
            name,
            "is not a PostgreSQL URL; use postgresql://user:password@host:5432/dbname",
        )
    if not parts.path.strip("/"):
        raise ConfigError(name, "names no database; end it with /dbname")
    if environ.get("RELAY_SPOOL_PATH", "").strip():
        raise ConfigError(
            name, "and RELAY_SPOOL_PATH are both set; the relay keeps one spool: unset one"
        )
    return raw


def local_spool_path_from_env(environ: Mapping[str, str]) -> str | None:
    """RELAY_LOCAL_SPOOL_PATH, with the spool in PostgreSQL only: this host's own SQLite file,
    by default in systemd's state directory for the unit (STATE_DIRECTORY), else the working
    directory; `off`: such alerts wait in memory only."""
    raw = environ.get("RELAY_LOCAL_SPOOL_PATH", "").strip()
    if not environ.get("RELAY_SPOOL_URL", "").strip():
        if raw:
            raise ConfigError("RELAY_LOCAL_SPOOL_PATH", "is for RELAY_SPOOL_URL only: unset it")
        return None
    if raw:
        return None if raw.lower() == SPOOL_OFF else raw
    state = environ.get("STATE_DIRECTORY", "").split(":")[0]
    return os.path.join(state, DEFAULT_LOCAL_SPOOL) if state else DEFAULT_LOCAL_SPOOL


def spool_path_from_env(environ: Mapping[str, str]) -> str | None:
    """RELAY_SPOOL_PATH as the service reads it (the CLI reads it the same way)."""
    raw = environ.get("RELAY_SPOOL_PATH", "").strip()
    if not raw:
        return DEFAULT_SPOOL_PATH
    if raw.lower() == SPOOL_OFF:
        return None
    if raw.endswith(("/", os.sep)):
        raise ConfigError(
            "RELAY_SPOOL_PATH", f"{raw!r} names a directory; name a file in it instead"
        )
    return raw
