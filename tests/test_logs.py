from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from urllib.parse import quote

import pytest
from gunicorn.glogging import SafeAtoms

from relay_app.core.logs import (
    ACCESS_LOGGER,
    ACCESS_VALUE_CHARS,
    REDACTED,
    JsonFormatter,
    client_sample,
    configure_logging,
    escape_controls,
    event,
    redact,
)

TOKEN = "987654321:logs-test-token-abcdefghijklmnop"
SECRET = "logs-test-secret~with.odd_chars-01"


TEXT = logging.Formatter("%(levelname)s %(message)s")


@contextmanager
def captured(name: str, formatter: logging.Formatter) -> Iterator[io.StringIO]:
    """What the logger `name` writes, in `formatter`'s format, INFO and above."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    configure_logging(TOKEN, SECRET)
    with captured("some.library", TEXT) as stream:  # not ours: redaction covers every logger
        yield stream


def test_secrets_in_messages_and_arguments_are_redacted(output: io.StringIO) -> None:
    logger = logging.getLogger("some.library")
    logger.warning("POST /webhook/%s failed", SECRET)
    logger.warning(f"https://api.telegram.org/bot{TOKEN}/sendMessage")
    logger.warning("encoded %s", quote(TOKEN, safe=""))
    logger.warning("access %(r)s", {"r": f"POST /webhook/{SECRET} HTTP/1.1"})
    text = output.getvalue()
    assert TOKEN not in text
    assert SECRET not in text
    assert quote(TOKEN, safe="") not in text
    assert text.count(REDACTED) == 4


def test_any_webhook_path_segment_is_redacted_wrong_secrets_too(output: io.StringIO) -> None:
    logger = logging.getLogger("some.library")
    logger.warning(
        "access %(r)s", {"r": "POST /webhook/last-years-secret-0123456789?chat_id=-5 HTTP/1.1"}
    )
    logger.warning("access %(r)s", {"r": "POST /webhook/x/y HTTP/1.1"})
    logger.warning("access %(r)s", {"r": "GET /metrics HTTP/1.1"})
    logger.warning("access %(r)s", {"r": "POST /telegram/a-guess-at-the-secret HTTP/1.1"})
    assert output.getvalue().splitlines() == [
        "WARNING access POST /webhook/[REDACTED]?chat_id=-5 HTTP/1.1",
        "WARNING access POST /webhook/[REDACTED]/y HTTP/1.1",
        "WARNING access GET /metrics HTTP/1.1",
        "WARNING access POST /telegram/[REDACTED] HTTP/1.1",
    ]


def test_tracebacks_are_redacted(output: io.StringIO) -> None:
    try:
        raise ConnectionError(f"Max retries exceeded with url: /bot{TOKEN}/sendMessage")
    except ConnectionError:
        logging.getLogger("some.library").exception("send failed")
    text = output.getvalue()
    assert "Traceback" in text
    assert TOKEN not in text
    assert f"/bot{REDACTED}/sendMessage" in text


def test_redact_leaves_other_text_alone() -> None:
    configure_logging(TOKEN)
    assert redact("nothing secret here") == "nothing secret here"


@pytest.fixture
def json_output() -> Iterator[io.StringIO]:
    configure_logging(TOKEN, SECRET, log_format="json")
    with captured("some.library", JsonFormatter()) as stream:
        yield stream


def test_json_records_are_one_object_per_line_with_their_event_fields(
    json_output: io.StringIO,
) -> None:
    logger = logging.getLogger("some.library")
    logger.info(
        "attempt %d of alert(s) %s",
        2,
        "#12",
        extra=event(event="attempt", alerts=["#12"], attempt=2, latency_ms=12.5, error=None),
    )
    logger.warning("multi\nline\ntext")
    first, second = (json.loads(line) for line in json_output.getvalue().splitlines())
    assert first["message"] == "attempt 2 of alert(s) #12"
    assert (first["level"], first["logger"]) == ("INFO", "some.library")
    assert first["pid"] == os.getpid()
    assert datetime.fromisoformat(first["time"]).tzinfo is not None
    assert {key: first[key] for key in ("event", "alerts", "attempt", "latency_ms", "error")} == {
        "event": "attempt",
        "alerts": ["#12"],
        "attempt": 2,
        "latency_ms": 12.5,
        "error": None,
    }
    assert second["message"] == "multi\nline\ntext"
    assert "event" not in second


def test_json_records_are_redacted_fields_and_tracebacks_included(
    json_output: io.StringIO,
) -> None:
    logger = logging.getLogger("some.library")
    try:
        raise ConnectionError(f"Max retries exceeded with url: /bot{TOKEN}/sendMessage")
    except ConnectionError as exc:
        logger.exception("send to /webhook/%s failed", SECRET, extra=event(error=str(exc)))
    text = json_output.getvalue()
    assert TOKEN not in text
    assert SECRET not in text
    record = json.loads(text)
    assert record["error"] == f"Max retries exceeded with url: /bot{REDACTED}/sendMessage"
    assert record["message"] == f"send to /webhook/{REDACTED} failed"
    assert "Traceback" in record["exception"]
    assert f"/bot{REDACTED}/sendMessage" in record["exception"]


FORGED = "ada\n[2026-12-01 10:00:00 +0000] [1] [INFO] relay_app.cards.presses: Resolved by the boss"


def test_a_value_from_a_client_cannot_start_a_line_of_its_own() -> None:
    ours = logging.getLogger("relay_app.cards.presses")
    with captured(ours.name, TEXT) as output:
        ours.warning("a press by %s failed: %s", FORGED, ValueError("bad\r\nthing\x1b[31m"))
        ours.warning("%(who)s pressed", {"who": "eve\u2028mallory"})
        ours.info("attempt %d took %.1f ms", 2, 12.25)  # numbers as they are
    assert output.getvalue().splitlines() == [
        "WARNING a press by ada\\n[2026-12-01 10:00:00 +0000] [1] [INFO] relay_app.cards.presses: "
        "Resolved by the boss failed: bad\\r\\nthing\\x1b[31m",
        "WARNING eve\\u2028mallory pressed",
        "INFO attempt 2 took 12.2 ms",
    ]


def test_json_records_escape_a_clients_values_as_well() -> None:
    ours = logging.getLogger("relay_app.cards.presses")
    with captured(ours.name, JsonFormatter()) as stream:
        ours.warning("a press by %s failed", FORGED, extra=event(user=FORGED))
    [line] = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["message"] == f"a press by {escape_controls(FORGED)} failed"
    assert record["user"] == FORGED  # a JSON string: its line break is written \n


def test_escaping_leaves_printable_text_alone() -> None:
    assert escape_controls("Ошибка: деление на ноль · 🔴 <b>") == "Ошибка: деление на ноль · 🔴 <b>"
    assert escape_controls("tab\there\x00\x7f\x85") == "tab\\there\\x00\\x7f\\x85"


def test_a_strangers_request_line_in_the_access_log_is_cut_short() -> None:
    # gunicorn's access log: one line per request, whose request line anyone can make 4 KB long.
    configure_logging(TOKEN, SECRET)
    with captured(ACCESS_LOGGER, TEXT) as stream:
        atoms = SafeAtoms({"h": "203.0.113.9", "r": "GET /" + "a" * 4000 + " HTTP/1.1", "s": "404"})
        logging.getLogger(ACCESS_LOGGER).info('%(h)s "%(r)s" %(s)s %({user-agent}i)s', atoms)
        atoms = SafeAtoms({"h": "203.0.113.9", "r": "GET /healthz HTTP/1.1", "s": "200"})
        logging.getLogger(ACCESS_LOGGER).info('%(h)s "%(r)s" %(s)s %({user-agent}i)s', atoms)
    long, short = stream.getvalue().splitlines()
    shown = "GET /" + "a" * (ACCESS_VALUE_CHARS - 5)
    assert long == f'INFO 203.0.113.9 "{shown}... (3758 more)" 404 -'
    assert short == 'INFO 203.0.113.9 "GET /healthz HTTP/1.1" 200 -'


def test_a_client_sample_is_short_escaped_and_says_what_it_left_out() -> None:
    assert client_sample(b"GET /\x01\xff" + b"x" * 100, 7) == "GET /\\x01\\xff... (100 more)"
    assert client_sample("fine", 8) == "fine"
