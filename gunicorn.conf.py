"""gunicorn settings for the relay: `gunicorn wsgi:app` reads this file from the working directory.

Command-line options (-b, -w, ...) still override anything set here.
"""

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from relay_app import start_background_work, stop_background_work
from relay_app.core import metrics
from relay_app.operating.config import (
    DEFAULT_BIND,
    ConfigError,
    Settings,
    admin_bind_from_env,
    bind_from_env,
    log_format_from_env,
    metrics_enabled,
)
from relay_app.operating.env_values import address_in_use
from relay_app.spool.database import readable_by_others


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
    try:
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        server.log.error("relay_app cannot start: %s", exc)
        sys.exit(2)
    # Once for the relay, here, rather than once in each worker that opens the file.
    if settings.spool_path is not None and (loose := readable_by_others(settings.spool_path)):
        server.log.warning("relay_app: %s", loose)
    # A port in use would otherwise be five "Connection in use" lines from gunicorn, and no word
    # of the variable that chose it.
    for name, address in (("RELAY_BIND", settings.bind), ("RELAY_ADMIN_BIND", settings.admin_bind)):
        if address is not None and (taken := address_in_use(address)):
            server.log.error(
                "relay_app cannot start: %s=%s: %s; another program (or another relay) listens "
                "there. Stop it, or set %s to a free port",
                name,
                address,
                taken,
                name,
            )
            sys.exit(2)
    # A directory the user named may hold an earlier run's counts.
    metrics.clear_stale_files(os.environ)


def on_exit(server: Any) -> None:
    metrics.remove_directory(os.environ)


def post_worker_init(worker: Any) -> None:
    # In each worker, after the fork: threads started in the master would not survive it.
    start_background_work(worker.wsgi)


def worker_exit(server: Any, worker: Any) -> None:
    # Also called in the master for a worker that is already gone; there it has nothing to do.
    stop_background_work(getattr(worker, "wsgi", None))
