"""Log setup, and the redaction that keeps the bot token and the webhook secret out of every line.

The token sits in Telegram's URL, so requests' exceptions carry it; the secret sits in our own
URL, so gunicorn's access log carries it. Redacting at record creation (a log record factory)
covers every logger and handler in the process, including gunicorn's and any a user configures,
rather than only the handlers we happen to know about.

The same factory keeps the relay's records one line each: the values a record is made of
(its arguments: titles, names, alert texts, errors, most of which a client chose) have their
control characters escaped, so no value can start a line that looks like a record of its own.
And it bounds what a stranger writes into gunicorn's access log: each value of a line (the
request line above all, which anyone can make 4 KB long) is cut to ACCESS_VALUE_CHARS.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
# The paths whose next segment is a secret: GlitchTip's webhook (and its near miss, with an
# s), and Telegram's updates.
SECRET_PATHS = ("/webhook/", "/webhooks/", "/telegram/")
# The segment up to the query, a space, a quote or the next slash: the request line in
# gunicorn's access log ends in ' HTTP/1.1"'. Not one shown already as a secret's fingerprint.
_SECRET_SEGMENT = re.compile(
    "(" + "|".join(map(re.escape, SECRET_PATHS)) + r")(?!\[REDACTED\]|\[secret [0-9a-f]{8}\])"
    r"[^/?\s\"']+"
)
LOGGER_NAME = "relay_app"
# gunicorn's own layout, so the relay's lines and gunicorn's read as one log.
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"
LogFormat = Literal["text", "json"]
# The attribute that carries a record's structured fields (alert ids, outcome, latency, ...),
# set with `extra=event(...)`; the JSON format writes them out as keys of their own.
EVENT_ATTRIBUTE = "relay_event"

# What one value of an access-log line may show (the request line: method, path, version). A
# real request's line is far shorter; a stranger's may be 4 KB, one line per request.
ACCESS_VALUE_CHARS = 256
ACCESS_LOGGER = "gunicorn.access"

# C0 and C1 controls, and the Unicode line and paragraph separators some viewers break on.
_CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class _Redaction:
    """This process's redaction (logging's record factory is the process's too): the secrets
    registered, whether the factory that redacts each record is installed, and how it renders a
    traceback before redacting it."""

    def __init__(self) -> None:
        # A tuple swapped whole, so a logging thread never iterates while another registers.
        self.forms: tuple[str, ...] = ()
        self.lock = threading.Lock()
        self.factory_installed = False
        self.tracebacks = logging.Formatter()


_registered = _Redaction()


def redact(text: str) -> str:
    """Replace every registered secret (raw or percent-encoded) in `text`, and whatever path
    segment follows /webhook/ or /telegram/: a wrong secret there may be an old one, or a near
    miss."""
    for secret in _registered.forms:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if any(path in text for path in SECRET_PATHS):
        text = _SECRET_SEGMENT.sub(lambda found: found.group(1) + REDACTED, text)
    return text


def redacted_url(url: str) -> str:
    """The URL as logs and tools may show it: the password replaced."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def escape_controls(text: str) -> str:
    """`text` with line breaks and other control characters written as escapes ('\\n', ...)."""
    if text.isprintable():  # the common case: nothing to escape
        return text
    return _CONTROL_CHARACTERS.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    char = found.group()
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def client_sample(data: bytes | str, limit: int) -> str:
    """A stranger's bytes or text as a log line may show them: their first `limit` bytes or
    characters, escaped (bytes that are not printable ASCII as \\xNN), saying how many more
    there were, so that the line stays one short line."""
    shown = data[:limit]
    text = shown.decode("ascii", "backslashreplace") if isinstance(shown, bytes) else shown
    more = f"... ({len(data) - limit} more)" if len(data) > limit else ""
    return escape_controls(text) + more


class _CappedValues(dict[str, object]):
    """An access-log record's values (gunicorn's atoms, looked up by the format) with each text
    cut to ACCESS_VALUE_CHARS and its control characters escaped."""

    def __init__(self, atoms: Mapping[str, object]) -> None:
        super().__init__(atoms)  # not empty: logging formats a record only with truthy args
        self._atoms = atoms

    def __getitem__(self, key: str) -> object:
        value = self._atoms[key]
        return client_sample(value, ACCESS_VALUE_CHARS) if isinstance(value, str) else value


def register_secret(secret: str) -> None:
    with _registered.lock:
        known = _registered.forms
        forms = {secret, quote(secret, safe=""), quote(secret)} - set(known)
        # Longest first, so a secret that contains another is replaced whole.
        _registered.forms = tuple(sorted((*known, *forms), key=len, reverse=True))


def event(**fields: object) -> dict[str, Any]:
    """`log.info(..., extra=event(alerts=["#12"], outcome="sent"))`: fields for the JSON format.
    The message itself still says everything, for the text format."""
    return {EVENT_ATTRIBUTE: fields}


def configure_logging(*secrets: str, log_format: LogFormat = "text") -> None:
    """Register the secrets to redact and make sure the relay's records reach stderr, one line
    each in the chosen format."""
    for secret in secrets:
        register_secret(secret)
    _install_redacting_record_factory()
    logger = logging.getLogger(LOGGER_NAME)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    # Under gunicorn nobody configures the root logger; without a handler our INFO and WARNING
    # records would vanish or lose their timestamps. A user's own config takes precedence
    # (gunicorn.conf.py configures the root logger itself for RELAY_LOG_FORMAT=json).
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            JsonFormatter()
            if log_format == "json"
            else logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT)
        )
        logger.addHandler(handler)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, pid, message, the record's event fields,
    and the traceback if any. Redacted as a whole, since event fields are added to a record
    after the redacting factory has seen it."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        fields = getattr(record, EVENT_ATTRIBUTE, None)
        if isinstance(fields, dict):
            entry.update({key: value for key, value in fields.items() if key not in entry})
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return redact(json.dumps(entry, ensure_ascii=False, default=str))


def _install_redacting_record_factory() -> None:
    with _registered.lock:
        if _registered.factory_installed:
            return
        make_record = logging.getLogRecordFactory()

        def redacting_record_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = make_record(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(redacting_record_factory)
        _registered.factory_installed = True


def _escaped_args(args: tuple[object, ...] | Mapping[str, object]) -> Any:
    """A record's arguments with their text escaped; numbers and the like as they are, so
    '%d' and '%.1f' still format them."""
    if isinstance(args, Mapping):
        return {key: _escaped_value(value) for key, value in args.items()}
    return tuple(_escaped_value(value) for value in args)


def _escaped_value(value: object) -> object:
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, BaseException):
        return escape_controls(str(value))
    return value


def _redact_record(record: logging.LogRecord) -> None:
    if record.args and record.name.startswith(LOGGER_NAME):
        record.args = _escaped_args(record.args)
    elif record.name == ACCESS_LOGGER and isinstance(record.args, Mapping):
        record.args = _CappedValues(record.args)
    try:
        message = record.getMessage()
    except Exception:  # a malformed format string: let logging report it as it usually does
        return
    record.msg = redact(message)
    record.args = None
    if record.exc_info and record.exc_info[0] is not None:
        # Formatters reuse exc_text when it is set, so the traceback is rendered once, redacted.
        record.exc_text = redact(_registered.tracebacks.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
