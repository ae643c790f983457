"""The gunicorn internals the relay's worker (relay_app/web/http_worker.py) builds on, each
checked here, so that a gunicorn release that changes one fails this test by name rather than
the relay in production. What the worker does with them is tried end to end in
tests/e2e/test_edge.py and tests/e2e/test_trust.py."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import TConn, ThreadWorker

from relay_app.web.http_worker import WholeRequestWorker


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        # Called by gthread's loop for a new or readable kept-alive connection; the worker reads
        # the request itself, then calls gthread's to hand it to a thread.
        ("enqueue_req", ["self", "conn"]),
        # In the thread: the worker sets the connection's parser, then lets gthread's run it.
        ("handle", ["self", "conn"]),
        # Where the answer is written: the worker puts the socket on WRITE_TIMEOUT here.
        ("handle_request", ["self", "req", "conn"]),
        ("handle_error", ["self", "req", "client", "addr", "exc"]),
        # Back in the loop after a thread: a pipelined request already read is read on.
        ("finish_request", ["self", "conn", "fs"]),
        # Called by gthread's loop at least once a second, where expiries are handled.
        ("murder_pending", ["self"]),
    ],
)
def test_gthread_calls_the_methods_the_worker_overrides_as_it_expects(
    method: str, expected: list[str]
) -> None:
    assert parameters(getattr(ThreadWorker, method)) == expected
    assert method in WholeRequestWorker.__dict__


def test_gthread_still_has_what_the_worker_reads_and_sets() -> None:
    source = inspect.getsource(ThreadWorker)
    for name in ("self.poller", "self.nr_conns", "self.tpool", "self.method_queue"):
        assert name in source, name
    conn = inspect.getsource(TConn)
    for name in ("self.sock", "self.client", "self.parser", "self.initialized", "self.is_http2"):
        assert name in conn, name
    assert "self.data_ready" in conn  # skips gthread's wait for a first byte
    # A thread sets the socket blocking before it parses; the worker's write timeout must be set
    # after that, in handle_request, or it would be undone.
    handle = inspect.getsource(ThreadWorker.handle)
    assert handle.index("setblocking(True)") < handle.index("handle_request")
    # A kept-alive connection whose parser holds read-ahead is handed on again at once.
    assert "unreader.buf.getvalue()" in inspect.getsource(ThreadWorker.finish_request)


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
    assert "req._expected_100_continue" in inspect.getsource(wsgi.create)


def test_a_request_can_be_told_its_answer_closes_the_connection() -> None:
    # The worker does so for a connection's last request: "Connection: close" in the answer.
    cfg = Config()
    request = b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n"
    parsed = next(RequestParser(cfg, [request], ("127.0.0.1", 4000)))
    assert not parsed.should_close()
    parsed.force_close()
    assert parsed.should_close()
