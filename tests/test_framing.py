"""How the relay's worker tells that a request has arrived whole (framing.py, with h11), as its
bytes come in any pieces; what it refuses at once, and what it hands on for the app to refuse.
The worker itself, under the real gunicorn, is tried in tests/e2e/test_edge.py."""

from __future__ import annotations

import pytest

from relay_app.core.json_body import MAX_BODY_BYTES
from relay_app.web.framing import (
    CONTINUE,
    MAX_HEAD_BYTES,
    REFUSAL_KINDS,
    SAMPLE_BYTES,
    ArrivingRequest,
    Refused,
    Verdict,
    Waiting,
    WantsBody,
    Whole,
)

HEAD = b"POST /webhook/s HTTP/1.1\r\nHost: relay\r\n"


def arriving(*pieces: bytes, wants_body: WantsBody | None = None) -> list[Verdict]:
    """Feed the pieces one at a time: the verdict after each."""
    request = ArrivingRequest(wants_body=wants_body)
    return [request.feed(piece) for piece in pieces]


def in_bytes(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def whole_at_last(verdicts: list[Verdict]) -> Whole:
    """The request was whole with its last piece, not before."""
    assert all(isinstance(verdict, Waiting) for verdict in verdicts[:-1])
    assert isinstance(verdicts[-1], Whole)
    return verdicts[-1]


def test_a_request_without_a_body_is_whole_at_its_blank_line() -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n"
    whole = whole_at_last(arriving(*in_bytes(request)))
    assert whole == Whole(request)


def test_a_body_is_whole_when_its_content_length_has_arrived() -> None:
    body = b'{"text": "GlitchTip Alert"}'
    head = HEAD + b"Content-Type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    whole = whole_at_last(arriving(head, *in_bytes(body)))
    assert whole == Whole(head + body)


def test_pipelined_requests_are_handed_on_one_at_a_time() -> None:
    first = b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
    second = b"POST /webhook/s HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
    [verdict] = arriving(first + second)
    assert verdict == Whole(first, leftover=second)
    [then] = arriving(second)
    assert then == Whole(second)


def test_a_client_that_expects_100_continue_is_told_to_go_on_only_when_the_app_wants_it() -> None:
    head = HEAD + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    asked: list[tuple[bytes, bytes]] = []

    def wanted(method: bytes, target: bytes) -> bool:
        asked.append((method, target))
        return True

    verdicts = arriving(head, b"{", b"}", wants_body=wanted)
    assert verdicts[:2] == [Waiting(CONTINUE), Waiting()]
    assert whole_at_last(verdicts) == Whole(head + b"{}")
    assert asked == [(b"POST", b"/webhook/s")]


@pytest.mark.parametrize("gate", [lambda _method, _target: False, None])
def test_a_body_the_app_does_not_want_is_neither_asked_for_nor_waited_for(
    gate: WantsBody | None,
) -> None:
    # A wrong secret (or an app that cannot say): no 100 Continue, and the app answers from the
    # head at once (404), after which the connection closes.
    head = HEAD + b"Expect: 100-continue\r\nContent-Length: 500\r\n\r\n"
    [verdict] = arriving(head, wants_body=gate)
    assert verdict == Whole(head, head_only=True)


def test_a_body_over_the_limit_is_answered_from_its_head_without_waiting_for_it() -> None:
    head = HEAD + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1)
    [verdict] = arriving(head + b"x" * 100, wants_body=lambda _method, _target: True)
    assert verdict == Whole(head, head_only=True)  # the app answers 413; no 100 Continue


def test_a_body_up_to_the_limit_is_waited_for() -> None:
    head = HEAD + b"Content-Length: %d\r\n\r\n" % MAX_BODY_BYTES
    verdicts = arriving(head, b"x" * (MAX_BODY_BYTES - 1), b"x")
    assert whole_at_last(verdicts).request == head + b"x" * MAX_BODY_BYTES


@pytest.mark.parametrize(
    ("pieces", "status"),
    [
        # Chunked bodies are not taken at all: no chunk size, sign, extension or trailer is read.
        ([HEAD + b"Transfer-Encoding: chunked\r\n\r\n-6\r\nabcdef\r\n"], 411),
        ([HEAD + b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\n"], 411),
        ([HEAD + b"Transfer-Encoding: gzip\r\n\r\n"], 501),
        ([HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}"], 400),
        # Framing that contradicts itself, or is not framing.
        ([HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n"], 400),
        ([HEAD + b"Content-Length: -5\r\n\r\n"], 400),
        ([HEAD + b"Content-Length: 0x5\r\n\r\n"], 400),
        ([HEAD + b"Content-Length: 5_0\r\n\r\n"], 400),
        ([b"POST /webhook/s HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"], 400),  # no Host
        ([b"GET / HTTP/1.1\r\nX: " + b"y" * (MAX_HEAD_BYTES // 2), b"y" * MAX_HEAD_BYTES], 431),
        ([b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40], 400),  # TLS
    ],
)
def test_what_is_not_a_request_the_relay_takes_is_refused_at_once(
    pieces: list[bytes], status: int
) -> None:
    verdicts = arriving(*pieces)
    assert isinstance(verdicts[-1], Refused)
    assert verdicts[-1].status == status
    assert all(isinstance(verdict, Waiting) for verdict in verdicts[:-1])


def test_a_request_holds_no_more_than_its_head_and_body() -> None:
    request = ArrivingRequest(wants_body=None)
    request.feed(HEAD + b"Content-Length: 1000\r\n\r\n")
    request.feed(b"x" * 999)
    assert request.held == len(HEAD) + len(b"Content-Length: 1000\r\n\r\n") + 999
    request.feed(b"x")
    assert request.held == 0  # handed on: the verdict holds it now


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"GET /" + b"a" * 60_000 + b" HTTP/9\r\nHost: relay\r\n\r\n", "illegal request line"),
        (b"\x01" * 60_000 + b"\r\n\r\n", "illegal request line"),
        (
            b"GET / HTTP/1.1\r\nHost: relay\r\n" + b"\x7f" * 30_000 + b"\r\n\r\n",
            "illegal header line",
        ),
        (
            HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "conflicting content-length headers",
        ),
        (
            b"POST /webhook/s HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
            "missing mandatory host: header",
        ),
        (b"GET / HTTP/1.1\r\nX: " + b"y" * (2 * MAX_HEAD_BYTES), "receive buffer too long"),
    ],
)
def test_a_refusal_says_its_kind_in_fixed_words_and_keeps_only_a_short_sample(
    head: bytes, kind: str
) -> None:
    # h11's own message quotes the refused line: 60 KB of a stranger's bytes, escaped into a log
    # line and kept as a count's key, once for each different line.
    request = ArrivingRequest(wants_body=None)
    verdict = request.feed(head)
    assert isinstance(verdict, Refused)
    assert verdict.reason == kind
    assert verdict.reason in REFUSAL_KINDS
    assert verdict.sample == head[:SAMPLE_BYTES]
    assert request.held == 0  # nothing of it is held past its refusal


def test_every_refusal_framing_gives_is_one_of_its_fixed_kinds() -> None:
    refusals = [
        HEAD + b"Transfer-Encoding: chunked\r\n\r\n",
        HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
        b"GET /" + b"b" * MAX_HEAD_BYTES + b" HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"G\x00T / HTTP/1.1\r\nHost: a\r\n\r\n",
    ]
    for head in refusals:
        verdict = ArrivingRequest(wants_body=None).feed(head)
        assert isinstance(verdict, Refused), head
        assert verdict.reason in REFUSAL_KINDS, verdict
