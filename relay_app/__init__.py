"""relay_app: carries GlitchTip alert webhooks into Telegram, and does not lose them."""

from __future__ import annotations

import logging
import os
import time

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from .config import Settings
from .delivery import Courier
from .logs import configure_logging
from .metrics import Metrics
from .retrier import Clock, Retrier, Sleep, start_dispatching
from .spool import Spool
from .telegram import TelegramClient
from .views import create_blueprint

# GlitchTip's payloads are a few kilobytes; anything near this is not an alert.
MAX_BODY_BYTES = 1024 * 1024


def create_app(
    settings: Settings | None = None,
    *,
    retry_sleep: Sleep | None = None,
    clock: Clock = time.time,
) -> Flask:
    """The WSGI app. Settings come from the environment unless given (tests build them);
    `retry_sleep` and `clock` replace real pauses and time, so tests run without waiting.
    Background work starts separately, in each worker: `start_background_work`."""
    if settings is None:
        settings = Settings.from_env(os.environ)
    configure_logging(
        settings.telegram_bot_token, settings.webhook_secret, log_format=settings.log_format
    )

    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
    courier = Courier(client, attempt_timeout=settings.send_timeout)
    spool = None
    if settings.spool_path is not None:
        spool = Spool(
            settings.spool_path,
            max_pending=settings.spool_max_pending,
            clock=clock,
            default_destination=settings.default_destination,
        )
    metrics = Metrics(spool)
    retrier = Retrier(
        courier.deliver,
        spool=spool,
        attempts=settings.retry_attempts,
        wait=settings.retry_wait,
        max_age=settings.retry_max_age,
        attempt_timeout=settings.send_timeout,
        late_after=settings.late_after,
        coalesce=settings.coalesce,
        metrics=metrics,
        sleep=retry_sleep,
        clock=clock,
    )
    app.extensions["relay_retrier"] = retrier
    app.register_blueprint(
        create_blueprint(
            webhook_secret=settings.webhook_secret,
            retrier=retrier,
            metrics=metrics,
            serve_metrics=settings.metrics,
            default_destination=settings.default_destination,
            allowed_chats=settings.allowed_chat_ids,
        )
    )

    @app.errorhandler(HTTPException)
    def http_error_as_json(error: HTTPException) -> tuple[Response, int]:
        return jsonify(error=error.description), error.code or 500

    return app


def start_background_work(app: object) -> None:
    """Start sending waiting alerts from this process (gunicorn's post_worker_init): those
    waiting for their chat's turn or a retry, and those a stopped or crashed process left."""
    extensions = getattr(app, "extensions", None)
    retrier = extensions.get("relay_retrier") if isinstance(extensions, dict) else None
    if isinstance(retrier, Retrier):
        start_dispatching(retrier)
    else:  # wrapped in middleware, say: the hook cannot find the relay inside
        logging.getLogger(__name__).warning(
            "the WSGI app is not relay_app's own (%s): alerts left in the spool by an earlier "
            "process will not be taken up by this worker",
            type(app).__name__,
        )
