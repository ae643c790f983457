"""relay_app: carries GlitchTip alert webhooks into Telegram, and does not lose them."""

from __future__ import annotations

import os

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from .config import Settings
from .delivery import Courier
from .logs import configure_logging
from .retrier import Retrier, Sleep
from .telegram import TelegramClient
from .views import create_blueprint

# GlitchTip's payloads are a few kilobytes; anything near this is not an alert.
MAX_BODY_BYTES = 1024 * 1024


def create_app(settings: Settings | None = None, *, retry_sleep: Sleep | None = None) -> Flask:
    """The WSGI app. Settings come from the environment unless given (tests build them);
    `retry_sleep` replaces the retrier's real pauses, so tests run without waiting."""
    if settings is None:
        settings = Settings.from_env(os.environ)
    configure_logging(settings.telegram_bot_token, settings.webhook_secret)

    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    client = TelegramClient(settings.telegram_api_url, settings.telegram_bot_token)
    courier = Courier(
        client,
        settings.telegram_chat_id,
        thread_id=settings.telegram_thread_id,
        attempt_timeout=settings.send_timeout,
    )
    retrier = Retrier(
        courier.deliver,
        attempts=settings.retry_attempts,
        wait=settings.retry_wait,
        sleep=retry_sleep,
    )
    app.extensions["relay_retrier"] = retrier
    app.register_blueprint(
        create_blueprint(webhook_secret=settings.webhook_secret, courier=courier, retrier=retrier)
    )

    @app.errorhandler(HTTPException)
    def http_error_as_json(error: HTTPException) -> tuple[Response, int]:
        return jsonify(error=error.description), error.code or 500

    return app
