"""The relay's worker (relay_app/web/http_worker.py): what gunicorn's parser does with a request
held in memory, as the worker hands it over, and how the worker counts and says what it refused.

What the worker gets from gthread's internals (its loop, its count of connections, its
threads) is tried as behaviour under the real gunicorn in tests/e2e/test_edge.py, on the one
release pyproject.toml allows; docs/security.md says how an upgrade is checked."""

from __future__ import annotations

import os
import signal

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.config import Config
from gunicorn.http.parser import RequestParser

from relay_app.web.http_worker import (
    _SLOW_READER,
    MAX_REFUSAL_KINDS,
    REFUSALS_LOG_EVERY,
    _Refusals,
    stops_missed_at_boot,
)


def test_gunicorns_parser_reads_a_request_from_bytes_and_never_from_a_socket() -> None:
    cfg = Config()
    request = b"POST /webhook/s HTTP/1.1\r\nHost: relay\r\nContent-Length: 5\r\n\r\nhello"
    parser = RequestParser(cfg, [request], ("127.0.0.1", 4000))
    parsed = next(parser)
    assert (parsed.method, parsed.path) == ("POST", "/webhook/s")
    assert parsed.body.read() == b"hello"
    assert not hasattr(parser.unreader, "sock")  # no socket behind it to block on


def test_a_request_says_it_expects_100_continue_where_the_worker_turns_it_off() -> None:
    # gunicorn writes 100 Continue itself for such a request; the worker's loop has already
    # answered it, so it clears this before the answer (one 100 Continue, not two).
    cfg = Config()
    request = b"POST /w HTTP/1.1\r\nHost: r\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"
    parsed = next(RequestParser(cfg, [request], ("127.0.0.1", 4000)))
    assert parsed._expected_100_continue is True


def test_a_request_can_be_told_its_answer_closes_the_connection() -> None:
    # The worker does so for a connection's last request: "Connection: close" in the answer.
    cfg = Config()
    request = b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n"
    parsed = next(RequestParser(cfg, [request], ("127.0.0.1", 4000)))
    assert not parsed.should_close()
    parsed.force_close()
    assert parsed.should_close()


def test_refusals_are_counted_by_kind_and_a_line_holds_a_short_escaped_sample_of_each() -> None:
    refusals = _Refusals()
    for number in range(2000):
        # Each different and 60 KB long, as a stranger may send them.
        sample = b"GET /%08x" % number + b"\x01" * 60_000
        refusals.add("illegal request line (400)", ("203.0.113.9", 4000 + number), sample[:48])
    refusals.add(_SLOW_READER, ("198.51.100.7", 5000))
    line = refusals.due(now=0.0)
    assert line is not None
    assert line.startswith('2000 illegal request line (400), as "GET /00000000\\x01\\x01'), line
    assert f"; 1 {_SLOW_READER};" in line
    assert line.endswith("from 203.0.113.9, 198.51.100.7 and others")
    assert len(line) < 400
    assert refusals.due(now=1.0) is None  # nothing since


def test_kinds_past_the_bound_are_summed_as_one() -> None:
    refusals = _Refusals()
    for number in range(MAX_REFUSAL_KINDS + 500):
        refusals.add(f"kind {number}", ("203.0.113.9", 4000))
    line = refusals.due(now=0.0)
    assert line is not None
    assert line.count(";") == MAX_REFUSAL_KINDS + 1  # the kinds, and the clients
    assert "500 refused for other reasons" in line


def test_refusals_are_said_at_most_once_a_minute_and_what_is_left_when_the_worker_stops() -> None:
    refusals = _Refusals()
    refusals.add("illegal request line (400)", ("203.0.113.9", 4000))
    assert refusals.due(now=100.0) is not None  # the first at once
    refusals.add("illegal request line (400)", ("203.0.113.9", 4000))
    assert refusals.due(now=100.0 + REFUSALS_LOG_EVERY - 1) is None
    assert refusals.due(now=100.0 + REFUSALS_LOG_EVERY) == (
        "1 illegal request line (400); from 203.0.113.9"
    )
    refusals.add("illegal request line (400)", ("203.0.113.9", 4000))
    assert refusals.due(now=100.0 + REFUSALS_LOG_EVERY + 1, last=True) is not None


class _App(BaseApplication):  # type: ignore[misc]
    """The least an Arbiter is made of: no configuration read, an app that is never served."""

    def load_config(self) -> None:
        """Gunicorn's defaults."""

    def load(self) -> object:
        return lambda environ, start_response: []


def test_a_stop_the_master_sent_a_booting_worker_is_found_once_it_takes_its_signals() -> None:
    # The master's own handler, as a freshly forked worker still has it: the release pinned in
    # pyproject.toml queues each signal on the master's SIG_QUEUE, and this fails loudly on one
    # that does not, before a deploy waits 30 s for a worker that booted as it was stopped.
    master = Arbiter(_App())
    before = signal.signal(signal.SIGTERM, master.signal)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        master.signal(signal.SIGCHLD, None)  # what else it queues is left alone
        master.signal(signal.SIGTERM, None)  # said twice: stopped once
        assert stops_missed_at_boot() == [signal.SIGTERM]
        assert stops_missed_at_boot() == []  # taken
    finally:
        signal.signal(signal.SIGTERM, before)
    assert stops_missed_at_boot() == []  # the worker's own handler: nothing was missed
