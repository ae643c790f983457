"""How the relay's gunicorn worker (http_worker.py) tells that a request has arrived whole,
as its bytes come in any pieces: the head, then a body by its Content-Length or its chunks; and
what it hands on at once for the app to refuse. The worker itself, under the real gunicorn
with 80 slow clients, is tried in tests/e2e/test_trust.py."""

from __future__ import annotations

import pytest

from relay_app.glitchtip.webhook import MAX_BODY_BYTES
from relay_app.web.http_worker import MAX_HEAD_BYTES, _ArrivingRequest

HEAD = b"POST /webhook/s HTTP/1.1\r\nHost: relay\r\n"


def arriving(*pieces: bytes) -> tuple[_ArrivingRequest, list[bytes], list[bool]]:
    """Feed the pieces one at a time: the request, what it answered on the way, and whether it
    was whole after each piece."""
    request = _ArrivingRequest(deadline=0.0, data=b"")
    said: list[bytes] = []
    whole = []
    for piece in pieces:
        request.add(piece, answer=said.append)
        whole.append(request.whole)
    return request, said, whole


def in_bytes(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def test_a_request_without_a_body_is_whole_at_its_blank_line() -> None:
    request, said, whole = arriving(*in_bytes(b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n"))
    assert whole.index(True) == len(whole) - 1  # whole with its last piece, not before
    assert (request.refused, said) == (False, [])


def test_a_body_is_whole_when_its_content_length_has_arrived() -> None:
    body = b'{"text": "GlitchTip Alert"}'
    head = HEAD + b"Content-Type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    request, _, whole = arriving(head, *in_bytes(body))
    assert whole.index(True) == len(whole) - 1  # whole with its last piece, not before
    assert bytes(request.data) == head + body


def test_a_chunked_body_is_whole_after_its_last_chunk_and_trailer() -> None:
    head = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    chunks = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n"
    request, _, whole = arriving(head, *in_bytes(chunks))
    assert whole.index(True) == len(whole) - 1  # whole with its last piece, not before
    assert not request.refused


def test_a_client_that_expects_100_continue_is_told_to_go_on_once() -> None:
    head = HEAD + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    _, said, whole = arriving(head, b"{", b"}")
    assert said == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    assert whole == [False, False, True]


def test_pipelined_requests_are_kept_for_gunicorn_whole() -> None:
    two = b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"
    request, _, whole = arriving(two)
    assert whole == [True]
    assert bytes(request.data) == two


@pytest.mark.parametrize(
    "pieces",
    [
        # A Content-Length over the limit: refused by the app from its head alone.
        [HEAD + b"Content-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1)],
        # Chunks past the limit: once what arrived is more than the app will read.
        [
            HEAD + b"Transfer-Encoding: chunked\r\n\r\n",
            b"%x\r\n" % (2 * MAX_BODY_BYTES),
            b"x" * (MAX_BODY_BYTES // 2),
            b"x" * (MAX_BODY_BYTES // 2 + 1),
        ],
        # A head that never ends, framing that contradicts itself, a chunk size that is not one.
        [b"GET / HTTP/1.1\r\nX: " + b"y" * MAX_HEAD_BYTES],
        [HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n"],
        [HEAD + b"Content-Length: -5\r\n\r\n"],
        [HEAD + b"Transfer-Encoding: chunked\r\n\r\n", b"zz\r\n"],
    ],
)
def test_what_the_app_refuses_is_handed_on_at_once_not_waited_for(pieces: list[bytes]) -> None:
    request, _, whole = arriving(*pieces)
    assert whole.index(True) == len(whole) - 1  # whole with its last piece, not before
    assert request.refused


def test_a_chunked_body_that_is_not_over_the_limit_is_waited_for() -> None:
    head = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    size = MAX_BODY_BYTES  # as much as the app takes, declared in one chunk, arriving slowly
    request, _, whole = arriving(head, b"%x\r\n" % size, b"x" * (size - 1))
    assert not any(whole)
    request.add(b"x\r\n0\r\n\r\n", answer=lambda _: None)
    assert request.whole
    assert not request.refused
