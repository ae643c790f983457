from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from relay_app.logs import REDACTED, configure_logging, redact

TOKEN = "987654321:logs-test-token-abcdefghijklmnop"
SECRET = "logs-test-secret~with.odd_chars-01"


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    configure_logging(TOKEN, SECRET)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("some.library")  # not ours: redaction covers every logger
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


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
