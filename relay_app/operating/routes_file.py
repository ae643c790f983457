"""RELAY_ROUTES for the relay's processes: the routes file read and checked with the other
variables (Settings.from_env), and the last good one kept in force across reloads.

gunicorn's master checks the file when it starts (a broken one stops the relay, naming the file,
the line or key, and the fix) and again on each reload (SIGHUP: `systemctl reload`). What it
accepted is copied aside and named in RELAY_ROUTES_IN_FORCE, which its workers read; a file it
refuses on a reload is an ERROR, and the workers started by that reload keep the last good copy:
a reload never takes the relay down, nor leaves it without routes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping, MutableMapping

from ..routes import NO_ROUTES, RoutesError, RouteTable, parse_routes, read_routes
from ..routes.table import routes_bytes
from .env_values import ConfigError

NAMED = "RELAY_ROUTES"
IN_FORCE = "RELAY_ROUTES_IN_FORCE"


def routes_from_env(environ: Mapping[str, str]) -> RouteTable:
    """The routes in force: the master's accepted copy, else the file RELAY_ROUTES names; none
    without it. Raises ConfigError naming RELAY_ROUTES."""
    named = environ.get(NAMED, "").strip()
    if not named:
        return NO_ROUTES
    in_force = environ.get(IN_FORCE, "").strip()
    try:
        return read_routes(in_force or named, shown_as=named)
    except RoutesError as exc:
        raise ConfigError(NAMED, str(exc)) from None


def put_in_force(environ: MutableMapping[str, str]) -> RouteTable:
    """Check the file RELAY_ROUTES names now, and make it the one the workers started from now
    on read (gunicorn's master, at start and on each reload). Raises RoutesError, leaving the
    copy in force as it was."""
    named = environ.get(NAMED, "").strip()
    if not named:
        forget_in_force(environ)
        return NO_ROUTES
    raw = routes_bytes(named, named)
    table = parse_routes(raw.decode("utf-8", errors="replace"), named)
    handle, kept = tempfile.mkstemp(prefix="relay-routes-", suffix=".toml")
    with os.fdopen(handle, "wb") as copy:
        copy.write(raw)
    forget_in_force(environ)  # the workers that read it have read it
    environ[IN_FORCE] = kept
    return table


def forget_in_force(environ: MutableMapping[str, str]) -> None:
    """Remove the master's copy (at exit, or when a newer one replaces it)."""
    kept = environ.pop(IN_FORCE, None)
    if kept:
        with contextlib.suppress(OSError):
            os.remove(kept)
