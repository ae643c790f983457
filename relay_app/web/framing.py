"""Where one request ends, decided by h11 as its bytes arrive, with every buffer capped.

The relay's gunicorn worker (http_worker.py) reads each request in its event loop, without a
thread, until this says it is whole; only then does a thread take it, and gunicorn's own parser
reads exactly those bytes, never the socket. So a request must satisfy two well-kept parsers,
h11 here and gunicorn's there, and neither is code of ours.

What one request may hold is bounded: a head of MAX_HEAD_BYTES (h11's incomplete-event bound,
and checked again once the head is in), and a body of MAX_BODY_BYTES, which must be announced
by its Content-Length. A Transfer-Encoding is refused (411): GlitchTip and Telegram send a
Content-Length, and without chunked bodies no decoder runs whose work and memory the sender
chooses (sizes, extensions, trailers). Bytes that came after a whole request (a pipelined next
one) are at most one read's worth, and are handed back to be read as the next request.

A client that sends `Expect: 100-continue` is told to go on only when `wants_body` accepts the
request's target (the app's secret check) and its Content-Length is within the cap; otherwise
the app answers from the head alone, and the connection closes after the answer.

A refusal says why in one of a fixed few words (REFUSAL_KINDS), never in h11's message, which
may quote the refused line: a stranger's bytes end with their refusal, but for the first
SAMPLE_BYTES of them, kept for the operator's log line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import h11

from ..core.json_body import MAX_BODY_BYTES

# A request's line and header fields together. gunicorn's own limits on one line (4094) and
# one field (8190) are lower; this bounds what is held before they are checked.
MAX_HEAD_BYTES = 64 * 1024
# What one request may make the worker hold, at most: its head and its body.
MAX_REQUEST_BYTES = MAX_HEAD_BYTES + MAX_BODY_BYTES

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# What a refusal keeps of the request, for the log: enough to tell GlitchTip's POST behind a
# misconfigured proxy from a scanner, never a whole line.
SAMPLE_BYTES = 48

# What h11 refused, by the fixed start of its message (the rest may quote the stranger's
# bytes). Anything else h11 refuses is OTHER_FRAMING.
_H11_KINDS = (
    "illegal request line",
    "illegal header line",
    "illegal header name",
    "illegal header value",
    "illegal method characters",
    "illegal target characters",
    "bad content-length",
    "conflicting content-length headers",
    "missing mandatory host: header",
    "found multiple host: headers",
    "continuation line at start of headers",
    "receive buffer too long",
)
OTHER_FRAMING = "framing h11 refuses"
HEAD_TOO_LARGE = f"a request head of more than {MAX_HEAD_BYTES} bytes"
BOTH_LENGTHS = "both Transfer-Encoding and Content-Length"
TRANSFER_ENCODING = "a Transfer-Encoding (only a Content-Length is taken)"
# Every reason a Refused may give: a fixed set, so that counting refusals by kind is bounded.
REFUSAL_KINDS = frozenset(
    {*_H11_KINDS, OTHER_FRAMING, HEAD_TOO_LARGE, BOTH_LENGTHS, TRANSFER_ENCODING}
)

# The key under which the WSGI app (in its `extensions`, as Flask's) offers its WantsBody.
BODY_GATE = "relay_app.wants_body"
# Whether the app wants the body of a request for this method and target (`POST`,
# `/webhook/<secret>?chat_id=...`): asked only before telling a client to go on.
WantsBody = Callable[[bytes, bytes], bool]


@dataclass(frozen=True)
class Waiting:
    """More bytes are needed. `interim` is to be sent to the client now (100 Continue)."""

    interim: bytes = b""


@dataclass(frozen=True)
class Whole:
    """One request, for gunicorn to parse: exactly its bytes, and what came after them.
    `head_only`: the app answers from the head alone (its body is too large, or was not
    wanted), and the connection closes after the answer."""

    request: bytes
    leftover: bytes = b""
    head_only: bool = False


@dataclass(frozen=True)
class Refused:
    """Not a request the relay takes: answered `status` without a thread, and closed. `reason`
    is one of REFUSAL_KINDS (or the worker's own few); `sample` the request's first bytes."""

    status: int
    reason: str
    sample: bytes = b""


Verdict = Waiting | Whole | Refused


class ArrivingRequest:
    """One request's bytes as they arrive (sans I/O: the worker reads, this decides)."""

    def __init__(self, *, wants_body: WantsBody | None) -> None:
        self._wants_body = wants_body
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._data = bytearray()
        self._head_end: int | None = None  # where the body begins, once the head is in
        self._verdict: Verdict = Waiting()

    @property
    def held(self) -> int:
        """The bytes this request holds in memory now."""
        return len(self._data)

    def sample(self) -> bytes:
        """The first SAMPLE_BYTES of what arrived, for a refusal's log line."""
        return bytes(self._data[:SAMPLE_BYTES])

    def feed(self, data: bytes) -> Verdict:
        """Add what arrived (b"" only to look at what is held); what the request is now."""
        if not isinstance(self._verdict, Waiting):
            return self._verdict
        self._data += data
        self._h11.receive_data(bytes(data))
        try:
            self._verdict = self._look()
        except h11.RemoteProtocolError as exc:
            self._verdict = Refused(exc.error_status_hint, h11_kind(exc), self.sample())
        if not isinstance(self._verdict, Waiting):
            self._data = (
                bytearray()
            )  # a refused request's bytes end here; a whole one's are handed on
        return self._verdict

    def _look(self) -> Verdict:
        interim = b""
        while True:
            event = self._h11.next_event()
            if event is h11.NEED_DATA:
                return Waiting(interim)
            if isinstance(event, h11.Request):
                verdict = self._head(event)
                if not isinstance(verdict, Waiting):
                    return verdict
                interim = verdict.interim
            elif isinstance(event, h11.EndOfMessage):
                return self._whole()
            # Data: counted in what is held; gunicorn reads the body from the request's bytes.

    def _head(self, request: h11.Request) -> Verdict:
        self._head_end = self._consumed()
        if self._head_end > MAX_HEAD_BYTES:
            return Refused(431, HEAD_TOO_LARGE, self.sample())
        names = {name for name, _ in request.headers}
        if b"transfer-encoding" in names:
            if b"content-length" in names:
                return Refused(400, BOTH_LENGTHS, self.sample())
            return Refused(411, TRANSFER_ENCODING, self.sample())
        length = _content_length(request)
        if length > MAX_BODY_BYTES:
            return self._head_only()  # the app answers 413, or 404 for a wrong secret
        if self._h11.they_are_waiting_for_100_continue:
            if self._wants_body is None or not self._wants_body(request.method, request.target):
                return self._head_only()
            return Waiting(CONTINUE)
        return Waiting()

    def _head_only(self) -> Whole:
        assert self._head_end is not None
        return Whole(bytes(self._data[: self._head_end]), head_only=True)

    def _whole(self) -> Whole:
        end = self._consumed()
        whole = Whole(bytes(self._data[:end]), bytes(self._data[end:]))
        self._data = bytearray()
        return whole

    def _consumed(self) -> int:
        """How many of the bytes held h11 has read so far."""
        return len(self._data) - len(self._h11.trailing_data[0])


def h11_kind(refusal: h11.ProtocolError) -> str:
    """Which of h11's refusals this is, in its fixed words: the message itself is not kept."""
    said = str(refusal)[:40].casefold()
    return next((kind for kind in _H11_KINDS if said.startswith(kind)), OTHER_FRAMING)


def _content_length(request: h11.Request) -> int:
    """The body's length as announced (h11 has refused one that is not a single number)."""
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return 0
