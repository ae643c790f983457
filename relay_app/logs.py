"""Log setup, and the redaction that keeps the bot token and the webhook secret out of every line.

The token sits in Telegram's URL, so requests' exceptions carry it; the secret sits in our own
URL, so gunicorn's access log carries it. Redacting at record creation (a log record factory)
covers every logger and handler in the process, including gunicorn's and any a user configures,
rather than only the handlers we happen to know about.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any
from urllib.parse import quote

REDACTED = "[REDACTED]"
LOGGER_NAME = "relay_app"
# gunicorn's own layout, so the relay's lines and gunicorn's read as one log.
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"

# A tuple swapped whole, so a logging thread never iterates while another registers.
_secrets: tuple[str, ...] = ()
_secrets_lock = threading.Lock()
_installed = False


def redact(text: str) -> str:
    """Replace every registered secret (raw or percent-encoded) in `text`."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def register_secret(secret: str) -> None:
    global _secrets
    with _secrets_lock:
        forms = {secret, quote(secret, safe=""), quote(secret)} - set(_secrets)
        # Longest first, so a secret that contains another is replaced whole.
        _secrets = tuple(sorted((*_secrets, *forms), key=len, reverse=True))


def configure_logging(*secrets: str) -> None:
    """Register the secrets to redact and make sure the relay's records reach stderr."""
    for secret in secrets:
        register_secret(secret)
    _install_redacting_record_factory()
    logger = logging.getLogger(LOGGER_NAME)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    # Under gunicorn nobody configures the root logger; without a handler our INFO and WARNING
    # records would vanish or lose their timestamps. A user's own config takes precedence.
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
        logger.addHandler(handler)


def _install_redacting_record_factory() -> None:
    global _installed
    with _secrets_lock:
        if _installed:
            return
        make_record = logging.getLogRecordFactory()

        def redacting_record_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = make_record(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(redacting_record_factory)
        _installed = True


_exception_formatter = logging.Formatter()


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed format string: let logging report it as it usually does
        return
    record.msg = redact(message)
    record.args = None
    if record.exc_info and record.exc_info[0] is not None:
        # Formatters reuse exc_text when it is set, so the traceback is rendered once, redacted.
        record.exc_text = redact(_exception_formatter.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
