"""gunicorn settings for the relay: `gunicorn wsgi:app` reads this file from the working directory.

Command-line options (-b, -w, ...) still override anything set here. gunicorn reads it again on
SIGHUP (`systemctl reload`), the way the relay takes new code without closing its port.
"""

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any


def _forget_relay_app() -> None:
    # gunicorn reads this file at start and again on each reload, in the master, whose workers
    # are forked from it. Forgetting the relay's modules first makes the master, and every
    # worker forked after a reload, import the code now on disk: an upgrade is new code in
    # place, then `systemctl reload`, and the listening socket stays open throughout.
    for name in [
        n for n in sys.modules if n in ("relay_app", "wsgi") or n.startswith("relay_app.")
    ]:
        del sys.modules[name]


_forget_relay_app()

from relay_app.core import metrics  # noqa: E402 (after the forgetting above)
from relay_app.operating.config import (  # noqa: E402
    DEFAULT_BIND,
    ConfigError,
    Settings,
    admin_bind_from_env,
    bind_from_env,
    log_format_from_env,
    metrics_enabled,
)
from relay_app.operating.routes_file import (  # noqa: E402
    RoutesInForce,
    forget_in_force,
    put_in_force,
)
from relay_app.routes import RoutesError  # noqa: E402


def _wanted(read: Callable[[Mapping[str, str]], object], default: object) -> object:
    # A bad variable is on_starting's to report, with the others; until then, the default.
    try:
        return read(os.environ)
    except ConfigError:
        return default


# Here, in the master, before any worker imports prometheus_client: every worker then writes
# its counts to files in one directory, and /metrics, answered by any of them, adds them up.
if _wanted(metrics_enabled, default=False):
    metrics.share_between_workers(os.environ)

# The webhook's listener, and with RELAY_ADMIN_BIND a second one for /metrics, /readyz and
# /healthz; the app tells them apart by the port a request came in on.
bind = [str(_wanted(bind_from_env, default=DEFAULT_BIND))]
if admin_bind := _wanted(admin_bind_from_env, default=None):
    bind.append(str(admin_bind))

# Threads, not sync workers: while Telegram hangs, each webhook holds a thread for up to
# RELAY_SEND_TIMEOUT, and the other threads keep answering GlitchTip meanwhile. gthread, with
# each request read whole before a thread takes it (http_worker.py): a client that sends slowly
# is closed after a few seconds and never holds a thread meanwhile.
worker_class = "relay_app.web.http_worker.WholeRequestWorker"
threads = 32
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))

# A graceful stop lets running attempts finish (each within RELAY_SEND_TIMEOUT) and gives the
# alerts held in memory (without a usable spool) a last attempt, well inside this.
graceful_timeout = 30

# gunicorn's control socket lives at one path per user: a second relay on the host would fight
# over it, and the relay has no use for it.
control_socket_disable = True

accesslog = "-"
# The request line holds the webhook secret; relay_app redacts it from every log record.
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'

if _wanted(log_format_from_env, default="text") == "json":
    # gunicorn's own records (its error log and the access log) as JSON lines too, and the
    # relay's through the root logger's handler: one format on stderr for the log shipper.
    _json_handler = {
        "class": "logging.StreamHandler",
        "formatter": "json",
        "stream": "ext://sys.stderr",
    }
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "relay_app.core.logs.JsonFormatter"}},
        "handlers": {"console": _json_handler, "error_console": _json_handler},
        "root": {"level": "INFO", "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
        },
    }


def on_starting(server: Any) -> None:
    # Checked in the master, once: a bad variable stops gunicorn with a clear message instead of
    # every worker failing to boot with a traceback.
    from relay_app.operating.env_values import address_in_use
    from relay_app.spool.database import readable_by_others

    # The routes file first, so that the variables below are read with the routes in force: a
    # refused file leaves the last good copy kept beside the spool in force. With none, the
    # variables' check names the file's problem, with any other's.
    with contextlib.suppress(RoutesError):
        _routes_refused(server, put_in_force(os.environ, _sources()), "at start")
    settings = _settings_or_exit(server)
    # Once for the relay, here, rather than once in each worker that opens the file.
    if settings.spool_path is not None and (loose := readable_by_others(settings.spool_path)):
        server.log.warning("relay_app: %s", loose)
    # A port in use would otherwise be five "Connection in use" lines from gunicorn, and no word
    # of what chose it. The addresses are gunicorn's own (-b, this file, RELAY_BIND), not the
    # variables' alone. Sockets handed down (a USR2 re-exec, systemd's) are in use by design.
    if not _sockets_inherited():
        for address in _tcp_binds(server):
            if taken := address_in_use(address):
                named, fix = _chosen_by(address, settings)
                server.log.error(
                    "relay_app cannot start: %s: %s; another program (or another relay) listens "
                    "there. Stop it, or %s",
                    named,
                    taken,
                    fix,
                )
                sys.exit(2)
    # A directory the user named may hold an earlier run's counts.
    metrics.clear_stale_files(os.environ)
    _summarise(server, settings, "starting")
    _settled()


def on_reload(server: Any) -> None:
    # The routes file as it is now, for the workers started by this reload; a broken one is
    # refused, and they keep the last good one: a reload never takes the relay down.
    try:
        _routes_refused(server, put_in_force(os.environ, _sources()), "on reload")
    except RoutesError as exc:  # nothing in force to keep: none was before either
        server.log.error("relay_app: RELAY_ROUTES REFUSED on reload: %s", exc)
    # The new workers (forked after this) run the code now on disk. A variable that code
    # refuses is said here; exiting would close the port, so gunicorn goes on and the workers
    # that cannot boot say it again.
    from relay_app.capabilities import REGISTRY

    try:
        settings = Settings.from_env(os.environ, REGISTRY.settings)
    except ConfigError as exc:
        server.log.error("relay_app: the reloaded code refuses the configuration: %s", exc)
        return
    _summarise(server, settings, "reloading")


def on_exit(server: Any) -> None:
    metrics.remove_directory(os.environ)
    forget_in_force(os.environ)


def post_worker_init(worker: Any) -> None:
    # In each worker, after the fork: threads started in the master would not survive it.
    # Imported here, not above: the code of this worker's generation, the one that made its app.
    from relay_app import start_background_work

    start_background_work(worker.wsgi)
    _settled()


def worker_exit(server: Any, worker: Any) -> None:
    # Also called in the master for a worker that is already gone; there it has nothing to do.
    from relay_app import stop_background_work

    stop_background_work(getattr(worker, "wsgi", None))


def _settled() -> None:
    # What a process made to start (modules, classes, the app) lives as long as it does: kept
    # out of the collector's full passes, which would walk all of it again at each one and once
    # more at exit (half of a relay's stop: bench/start.py). The garbage made on the way to
    # here is collected first, so none is kept for good.
    gc.collect()
    gc.freeze()


def _routes_refused(server: Any, in_force: RoutesInForce, when: str) -> None:
    """Say what the routes file's check found, when it is worth saying."""
    if in_force.refused is not None:
        server.log.error(
            "relay_app: RELAY_ROUTES REFUSED %s, the relay keeps routing by the last good file "
            "(accepted at %s UTC): %s",
            when,
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(in_force.accepted_at or 0)),
            in_force.refused,
        )
    if in_force.not_kept is not None:
        server.log.warning(
            "relay_app: the routes could not be kept as the last good ones in %s (%s): a start "
            "with a broken routes file would then refuse to start",
            in_force.last_good,
            in_force.not_kept,
        )


def _sources() -> tuple[str, ...]:
    """What a route's `source` may name: the registry's sources, of the code now on disk."""
    from relay_app.capabilities import REGISTRY
    from relay_app.operating.settings_of import sources_named

    return sources_named(REGISTRY.settings)


def _settings_or_exit(server: Any) -> Settings:
    from relay_app.capabilities import REGISTRY

    try:
        return Settings.from_env(os.environ, REGISTRY.settings)
    except ConfigError as exc:
        server.log.error("relay_app cannot start: %s", exc)
        sys.exit(2)


def _summarise(server: Any, settings: Settings, doing: str) -> None:
    from relay_app.capabilities import REGISTRY
    from relay_app.operating.summary import summary_line

    line = summary_line(settings, list(server.cfg.bind), REGISTRY.says)
    server.log.info("relay_app %s: %s", doing, line)


def _sockets_inherited() -> bool:
    return bool(os.environ.get("GUNICORN_FD") or os.environ.get("LISTEN_FDS"))


def _tcp_binds(server: Any) -> list[str]:
    return [b for b in server.cfg.bind if not b.startswith(("unix:", "fd://"))]


def _chosen_by(address: str, settings: Settings) -> tuple[str, str]:
    """How the address was chosen, and how to choose another."""
    for name, value in (("RELAY_BIND", settings.bind), ("RELAY_ADMIN_BIND", settings.admin_bind)):
        if address == value:
            return f"{name}={address}", f"set {name} to a free port"
    return f"gunicorn's bind {address} (-b or gunicorn.conf.py)", "give gunicorn -b a free port"
