"""RELAY_ROUTES for the relay's processes: the routes file read and checked with the other
variables (Settings.from_env), and the last good one kept in force across reloads and restarts.

gunicorn's master checks the file when it starts and again on each reload (SIGHUP: `systemctl
reload`). What it accepted is copied aside and named in RELAY_ROUTES_IN_FORCE, which its workers
read, and kept beside the spool as the last good routes (`<spool>.last-good-routes.toml`). A file
it refuses is an ERROR, and the workers keep routing by the last good copy: on a reload, the one
in force; at start, the one kept beside the spool. Only a relay that has no good copy at all (its
first start, or no spool file to keep one beside) refuses to start. Either way the refusal is
not said in the log alone: the master tells its workers (RELAY_ROUTES_REFUSED, and when the
routes in force were accepted, RELAY_ROUTES_ACCEPTED_AT), which say it in /readyz and the
metrics, and the fleet's leader says it again at ERROR every minute until the file reads well."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..core.timing import PRODUCTION
from ..routes import NO_ROUTES, RoutesError, RouteTable, parse_routes, read_routes
from ..routes.table import routes_bytes
from .env_values import ConfigError
from .spool_env import local_spool_path_from_env, spool_path_from_env

if TYPE_CHECKING:
    from prometheus_client.core import Metric

log = logging.getLogger(__name__)

NAMED = "RELAY_ROUTES"
IN_FORCE = "RELAY_ROUTES_IN_FORCE"
REFUSED = "RELAY_ROUTES_REFUSED"
ACCEPTED_AT = "RELAY_ROUTES_ACCEPTED_AT"
LAST_GOOD_SUFFIX = ".last-good-routes.toml"


@dataclass(frozen=True)
class RoutesInForce:
    """What gunicorn's master last made of RELAY_ROUTES (`named`), as every worker reads it:
    when the routes in force were accepted (Unix time; None without a master or a routes file),
    why the file on disk was refused since (None: it was not), where the last good copy is
    kept, and why it could not be kept there (None: it was, or there is no place)."""

    named: str | None = None
    accepted_at: float | None = None
    refused: str | None = None
    last_good: str | None = None
    not_kept: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RoutesInForce:
        accepted = environ.get(ACCEPTED_AT, "").strip()
        try:
            accepted_at = float(accepted) if accepted else None
        except ValueError:
            accepted_at = None  # not the master's writing: as if none said it
        named = environ.get(NAMED, "").strip() or None
        if named is None:
            return NOTHING_IN_FORCE
        return cls(named, accepted_at, environ.get(REFUSED) or None, last_good_path(environ))

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        ok = GaugeMetricFamily(
            "relay_routes_reload_ok",
            "1 when the routes file was accepted at the last start or reload; 0 when it was "
            "refused and the relay routes by the last good file",
        )
        good = GaugeMetricFamily(
            "relay_routes_last_good_timestamp_seconds",
            "When the routes in force were accepted (Unix time)",
        )
        # No routes file, or no master that read it: no sample, rather than a made-up one.
        if self.accepted_at is not None:
            ok.add_metric([], 0.0 if self.refused else 1.0)
            good.add_metric([], self.accepted_at)
        yield ok
        yield good


NOTHING_IN_FORCE = RoutesInForce()


def routes_from_env(environ: Mapping[str, str], sources: tuple[str, ...]) -> RouteTable:
    """The routes in force: the master's accepted copy, else the file RELAY_ROUTES names; none
    without it. `sources`: what a route's `source` may name (`sources_named`). Raises
    ConfigError naming RELAY_ROUTES."""
    named = environ.get(NAMED, "").strip()
    if not named:
        return NO_ROUTES
    in_force = environ.get(IN_FORCE, "").strip()
    try:
        return read_routes(in_force or named, sources, shown_as=named)
    except RoutesError as exc:
        raise ConfigError(NAMED, str(exc)) from None


def last_good_path(environ: Mapping[str, str]) -> str | None:
    """Where the last good routes are kept: beside the spool's file, or this host's own file
    when the spool is in PostgreSQL; None when there is no such file (RELAY_SPOOL_PATH=off,
    RELAY_LOCAL_SPOOL_PATH=off) or the variables naming it are wrong (said elsewhere)."""
    try:
        if environ.get("RELAY_SPOOL_URL", "").strip():
            beside = local_spool_path_from_env(environ)
        else:
            beside = spool_path_from_env(environ)
    except ConfigError:
        return None
    return None if beside is None else os.path.abspath(beside + LAST_GOOD_SUFFIX)


def put_in_force(
    environ: MutableMapping[str, str], sources: tuple[str, ...], *, now: float | None = None
) -> RoutesInForce:
    """Check the file RELAY_ROUTES names now (its routes' `source` naming `sources`), and make
    it the one the workers started from now on read (gunicorn's master, at start and on each
    reload), and the last good one. A file it refuses leaves the copy in force as it was, or at
    start puts the last good one in force. Raises RoutesError when it refuses the file and
    there is no good copy to route by."""
    named = environ.get(NAMED, "").strip()
    if not named:
        forget_in_force(environ)
        environ.pop(REFUSED, None)
        environ.pop(ACCEPTED_AT, None)
        return RoutesInForce()
    try:
        raw = routes_bytes(named, named)
        parse_routes(raw.decode("utf-8", errors="replace"), named, sources)
    except RoutesError as exc:
        if not environ.get(IN_FORCE, "").strip():
            _last_good_in_force(environ, named, exc, sources)
        environ[REFUSED] = str(exc)
        return RoutesInForce.from_env(environ)
    _in_force(environ, raw)
    environ[ACCEPTED_AT] = repr(time.time() if now is None else now)
    environ.pop(REFUSED, None)
    return _kept_as_last_good(environ, raw)


def _last_good_in_force(
    environ: MutableMapping[str, str], named: str, refused: RoutesError, sources: tuple[str, ...]
) -> None:
    """At start, with the file refused: the last good copy in force, accepted when it was kept.
    Raises `refused` when there is none, or the code now running refuses it too."""
    last_good = last_good_path(environ)
    if last_good is None:
        raise refused
    try:
        raw = routes_bytes(last_good, last_good)
        parse_routes(raw.decode("utf-8", errors="replace"), named, sources)
        accepted_at = os.path.getmtime(last_good)
    except (RoutesError, OSError):
        raise refused from None
    _in_force(environ, raw)
    environ[ACCEPTED_AT] = repr(accepted_at)


def _in_force(environ: MutableMapping[str, str], raw: bytes) -> None:
    handle, kept = tempfile.mkstemp(prefix="relay-routes-", suffix=".toml")
    with os.fdopen(handle, "wb") as copy:
        copy.write(raw)
    forget_in_force(environ)  # the workers that read it have read it
    environ[IN_FORCE] = kept


def _kept_as_last_good(environ: Mapping[str, str], raw: bytes) -> RoutesInForce:
    """The accepted file kept beside the spool, whole or not at all (written aside, then put in
    place), for a start whose file is refused."""
    in_force = RoutesInForce.from_env(environ)
    if in_force.last_good is None:
        return in_force
    try:
        handle, written = tempfile.mkstemp(
            prefix=".relay-routes-", dir=os.path.dirname(in_force.last_good)
        )
    except OSError as exc:
        return replace(in_force, not_kept=str(exc))
    try:
        with os.fdopen(handle, "wb") as copy:
            copy.write(raw)
        os.replace(written, in_force.last_good)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(written)
        return replace(in_force, not_kept=str(exc))
    return in_force


def forget_in_force(environ: MutableMapping[str, str]) -> None:
    """Remove the master's copy (at exit, or when a newer one replaces it)."""
    kept = environ.pop(IN_FORCE, None)
    if kept:
        with contextlib.suppress(OSError):
            os.remove(kept)


class RefusedAgain:
    """The leader's upkeep: while the file RELAY_ROUTES names is refused, say so at ERROR
    every `every` seconds, reading it again each time; once it reads well, say once that a
    reload puts it in force, and stop."""

    def __init__(
        self,
        in_force: RoutesInForce,
        sources: tuple[str, ...],
        *,
        every: float = PRODUCTION.routes_refused_again,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._in_force = in_force
        self._sources = sources
        self._every = every
        self._clock = clock
        self._next_at = clock() + every
        self._done = in_force.refused is None or in_force.named is None

    def upkeep(self) -> None:
        now = self._clock()
        if self._done or now < self._next_at:
            return
        self._next_at = now + self._every
        named = self._in_force.named or ""
        try:
            read_routes(named, self._sources)
        except RoutesError as exc:
            log.error(
                "RELAY_ROUTES REFUSED: %s; the relay routes by the last good file (accepted at "
                "%s UTC, kept in %s) until the file is fixed and the relay reloaded "
                "(systemctl reload)",
                exc,
                _utc(self._in_force.accepted_at),
                self._in_force.last_good or "memory",
            )
            return
        self._done = True
        log.warning(
            "RELAY_ROUTES %s reads well now; the relay still routes by the last good file "
            "until it is reloaded (systemctl reload)",
            named,
        )


def _utc(at: float | None) -> str:
    return "an unknown time" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))
