from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
import responses
import urllib3

from relay_app.core.errors import (
    ChatMigrated,
    MarkupRejected,
    PermanentDeliveryError,
    RateLimited,
    RetryableDeliveryError,
    ThreadNotFound,
)
from relay_app.core.routing import Destination
from relay_app.telegram.client import TelegramClient
from relay_app.telegram.courier import Courier, Picture
from tests.conftest import API_URL, SEND_URL, TOKEN, refusal


def send(client: TelegramClient, *, seconds: float = 2.0, thread_id: int | None = None) -> Any:
    return client.send_message(
        -100, "<b>hi</b>", html=True, thread_id=thread_id, deadline=time.monotonic() + seconds
    )


@pytest.fixture
def client() -> TelegramClient:
    return TelegramClient(API_URL, TOKEN)


def test_a_message_goes_out_as_telegram_expects(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json={"ok": True, "result": {"message_id": 7}})
    assert send(client, thread_id=12) == {"message_id": 7}
    call = telegram.calls[0]
    assert json.loads(call.request.body or b"") == {
        "chat_id": -100,
        "text": "<b>hi</b>",
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": True},
        "message_thread_id": 12,
    }
    connect, read = vars(call.request)["req_kwargs"]["timeout"]
    assert 0 < connect <= 2.0
    assert 0 < read <= 2.0


def test_plain_text_has_no_parse_mode(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json={"ok": True, "result": {}})
    client.send_message(-100, "plain", html=False, thread_id=None, deadline=time.monotonic() + 1)
    body = json.loads(telegram.calls[0].request.body or b"")
    assert "parse_mode" not in body
    assert "message_thread_id" not in body


def test_429_is_retryable_with_telegrams_pause(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(
        SEND_URL, status=429, json=refusal(429, "Too Many Requests: retry after 7", retry_after=7)
    )
    with pytest.raises(RateLimited) as raised:
        send(client)
    assert raised.value.retry_after == 7
    assert "retry after 7" in str(raised.value)
    assert not raised.value.maybe_delivered  # turned away: nothing was posted


def test_429_pause_from_the_header_when_the_body_has_none(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(
        SEND_URL, status=429, json=refusal(429, "Too Many Requests"), headers={"Retry-After": "3"}
    )
    with pytest.raises(RetryableDeliveryError) as raised:
        send(client)
    assert raised.value.retry_after == 3


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (500, json.dumps(refusal(500, "Internal Server Error")), "application/json"),
        (502, "<html>Bad Gateway</html>", "text/html"),
        (200, "not json at all", "text/plain"),
        (200, "[1, 2]", "application/json"),
    ],
)
def test_server_errors_and_garbled_replies_are_retryable(
    client: TelegramClient,
    telegram: responses.RequestsMock,
    status: int,
    body: str,
    content_type: str,
) -> None:
    telegram.post(SEND_URL, status=status, body=body, content_type=content_type)
    with pytest.raises(RetryableDeliveryError) as raised:
        send(client)
    assert raised.value.retry_after is None
    # An error page can come from a proxy after Telegram took the message.
    assert raised.value.maybe_delivered


@pytest.mark.parametrize(
    ("status", "description", "error_type"),
    [
        (403, "Forbidden: bot was kicked from the supergroup chat", PermanentDeliveryError),
        (401, "Unauthorized", PermanentDeliveryError),
        (400, "Bad Request: chat not found", PermanentDeliveryError),
        (400, "Bad Request: message thread not found", ThreadNotFound),
        (400, "Bad Request: can't parse entities: Unsupported start tag", MarkupRejected),
        (400, "Bad Request: message is too long", MarkupRejected),
    ],
)
def test_other_4xx_are_permanent(
    client: TelegramClient,
    telegram: responses.RequestsMock,
    status: int,
    description: str,
    error_type: type[PermanentDeliveryError],
) -> None:
    telegram.post(SEND_URL, status=status, json=refusal(status, description))
    with pytest.raises(PermanentDeliveryError) as raised:
        send(client)
    assert type(raised.value) is error_type
    assert raised.value.error_code == status
    assert description in str(raised.value)


def test_an_upgraded_group_names_its_new_id(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(
        SEND_URL,
        status=400,
        json=refusal(
            400,
            "Bad Request: group chat was upgraded to a supergroup chat",
            migrate_to_chat_id=-1009876543210,
        ),
    )
    with pytest.raises(ChatMigrated) as raised:
        send(client)
    assert raised.value.new_chat_id == -1009876543210


def _wrapped_by_urllib3(reason: Exception) -> requests.ConnectionError:
    """What requests raises when urllib3 gives up: the cause sits two wrappers deep."""
    pool_error = urllib3.exceptions.MaxRetryError(None, SEND_URL, reason)  # type: ignore[arg-type]
    return requests.ConnectionError(pool_error)


@pytest.mark.parametrize(
    ("error", "says", "maybe_delivered"),
    [
        (
            requests.ConnectionError(
                f"HTTPSConnectionPool: Max retries exceeded with url: {SEND_URL}"
            ),
            "connection to Telegram failed",
            True,
        ),
        (
            _wrapped_by_urllib3(urllib3.exceptions.ProtocolError("Connection aborted.")),
            "connection to Telegram failed",
            True,
        ),
        (
            _wrapped_by_urllib3(
                urllib3.exceptions.NameResolutionError(
                    "api.telegram.org",
                    None,  # type: ignore[arg-type]
                    socket.gaierror(-2, "Name or service not known"),
                )
            ),
            "connection to Telegram failed",
            False,
        ),
        (
            _wrapped_by_urllib3(
                urllib3.exceptions.NewConnectionError(None, "[Errno 113] No route to host")  # type: ignore[arg-type]
            ),
            "connection to Telegram failed",
            False,
        ),
        (requests.ReadTimeout(f"Read timed out: {SEND_URL}"), "did not answer within", True),
        (
            requests.ConnectTimeout(f"Connect timed out: {SEND_URL}"),
            "did not answer within",
            False,
        ),
        (
            requests.exceptions.ChunkedEncodingError(f"broken: {SEND_URL}"),
            "request to Telegram failed",
            True,
        ),
    ],
)
def test_network_errors_are_retryable_and_never_carry_the_token(
    client: TelegramClient,
    telegram: responses.RequestsMock,
    error: Exception,
    says: str,
    maybe_delivered: bool,
) -> None:
    telegram.post(SEND_URL, body=error)
    with pytest.raises(RetryableDeliveryError) as raised:
        send(client)
    assert says in str(raised.value)
    assert raised.value.maybe_delivered is maybe_delivered
    assert TOKEN not in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__


@pytest.mark.parametrize(
    "failure",
    [
        {"status": 500, "json": refusal(500, "Internal Server Error")},
        {"body": requests.ReadTimeout("Read timed out")},
        {"body": _wrapped_by_urllib3(urllib3.exceptions.ProtocolError("Connection aborted."))},
        {"status": 502, "body": "<html>Bad Gateway</html>", "content_type": "text/html"},
    ],
)
def test_an_edit_or_a_reaction_that_failed_is_never_one_that_may_post_twice(
    client: TelegramClient, telegram: responses.RequestsMock, failure: dict[str, Any]
) -> None:
    """Done twice, an edit or a reaction leaves what once does: whatever became of a failed
    one, it is retried as a request that never reached Telegram, on the quick backoff."""
    for method in ("editMessageText", "setMessageReaction"):
        telegram.post(f"{API_URL}/bot{TOKEN}/{method}", **failure)
    deadline = time.monotonic() + 2
    with pytest.raises(RetryableDeliveryError) as edit:
        client.edit_message_text(-100, 41, "<b>card</b>", keyboard=None, deadline=deadline)
    with pytest.raises(RetryableDeliveryError) as reaction:
        client.set_message_reaction(-100, 41, "👀", deadline=deadline)
    assert not edit.value.maybe_delivered
    assert not reaction.value.maybe_delivered
    telegram.post(SEND_URL, **failure)  # the same failure of a send: it may have posted
    with pytest.raises(RetryableDeliveryError) as sent:
        send(client)
    assert sent.value.maybe_delivered


def test_no_time_left_means_no_request(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    with pytest.raises(RetryableDeliveryError) as raised:
        send(client, seconds=-1)
    assert len(telegram.calls) == 0
    assert not raised.value.maybe_delivered


def test_a_refused_connection_is_retryable_without_the_token() -> None:
    with socket.socket() as placeholder:  # a port that nothing listens on
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    client = TelegramClient(f"http://127.0.0.1:{port}", TOKEN)
    with pytest.raises(RetryableDeliveryError) as raised:
        send(client)
    assert str(raised.value) == "connection to Telegram failed: Connection refused"
    assert not raised.value.maybe_delivered


# --- the hard deadline, against a real socket that misbehaves ------------------------------


@contextmanager
def misbehaving_server(reply: bytes, drip: bytes, *, seconds: float) -> Iterator[str]:
    """Answers each request with `reply`, then `drip` one byte every 0.1 s for `seconds`."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.sendall(reply)
                until = time.monotonic() + seconds
                try:
                    for byte in drip:
                        if stop.wait(0.1) or time.monotonic() > until:
                            break
                        connection.sendall(bytes([byte]))
                    stop.wait(max(0.0, until - time.monotonic()))  # then hold the line open
                except OSError:
                    pass

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        worker.join(timeout=5)


@pytest.mark.parametrize(
    ("reply", "drip"),
    [
        # the body a byte at a time
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n",
            b" " * 200,
        ),
        # the headers a byte at a time
        (b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"),
        # nothing at all
        (b"", b""),
    ],
    ids=["slow-body", "slow-headers", "silent"],
)
def test_the_deadline_holds_however_slowly_telegram_answers(reply: bytes, drip: bytes) -> None:
    with misbehaving_server(reply, drip, seconds=10) as url:
        client = TelegramClient(url, TOKEN)
        started = time.monotonic()
        with pytest.raises(RetryableDeliveryError) as raised:
            send(client, seconds=0.5)
        took = time.monotonic() - started
        assert took < 0.5 + 0.3
        assert "within 0.5 s" in str(raised.value)
        assert raised.value.maybe_delivered  # the request went out before the silence
        client.close()


PHOTO_URL = f"{API_URL}/bot{TOKEN}/sendPhoto"
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
PHOTO_SENT = {
    "ok": True,
    "result": {
        "message_id": 9,
        "chat": {"id": -100},
        "photo": [{"file_id": "small"}, {"file_id": "large"}],
    },
}


def _form(body: bytes | str | None, content_type: str) -> dict[str, Any]:
    """A multipart form's fields, as Telegram reads them."""
    from email.parser import BytesParser
    from email.policy import HTTP

    raw = body.encode() if isinstance(body, str) else body or b""
    form = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    return {
        str(part.get_param("name", header="content-disposition")): part.get_payload(decode=True)
        for part in form.iter_parts()
    }


def test_a_photo_goes_as_multipart_form_data_with_its_buttons_as_json(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(PHOTO_URL, json=PHOTO_SENT)
    keyboard = {"inline_keyboard": [[{"text": "📈", "callback_data": "c:k"}]]}
    courier = Courier(client, attempt_timeout=2)
    picture = Picture(PNG_BYTES, "<b>A-1</b> title", "<b>A-1</b> title\nLast 24 h: ▁", keyboard, 41)
    sent, file_id = courier.send_photo(picture, Destination(-100, 12))
    assert (sent.message_id, sent.html, file_id) == (9, "<b>A-1</b> title", "large")
    request = telegram.calls[0].request
    fields = _form(request.body, request.headers["Content-Type"])
    assert fields["photo"] == PNG_BYTES
    assert fields["caption"] == b"<b>A-1</b> title"
    assert fields["parse_mode"] == b"HTML"
    assert fields["message_thread_id"] == b"12"
    assert json.loads(fields["reply_markup"]) == keyboard
    assert json.loads(fields["reply_parameters"]) == {
        "message_id": 41,
        "allow_sending_without_reply": True,
    }
    # Sent again by the file_id Telegram keeps: plain JSON, no upload.
    telegram.post(PHOTO_URL, json=PHOTO_SENT)
    courier.send_photo(Picture("large", "c", "c"), Destination(-100))
    assert json.loads(telegram.calls[1].request.body or b"")["photo"] == "large"


def test_a_refused_photo_goes_as_its_text_with_its_buttons(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    courier = Courier(client, attempt_timeout=2)
    keyboard = {"inline_keyboard": [[{"text": "📈", "callback_data": "c:k"}]]}
    picture = Picture(PNG_BYTES, "<b>A-1</b>", "<b>A-1</b>\nLast 24 h: ▁", keyboard, 41)
    telegram.post(
        PHOTO_URL, status=400, json=refusal(400, "Bad Request: message caption is too long")
    )
    telegram.post(PHOTO_URL, status=400, json=refusal(400, "Bad Request: IMAGE_PROCESS_FAILED"))
    telegram.post(SEND_URL, json={"ok": True, "result": {"message_id": 10}})
    sent, file_id = courier.send_photo(picture, Destination(-100))
    assert (sent.message_id, sent.html, file_id) == (10, picture.instead, None)
    methods = [str(call.request.url).rsplit("/", 1)[-1] for call in telegram.calls]
    assert methods == ["sendPhoto", "sendPhoto", "sendMessage"]
    plain = _form(telegram.calls[1].request.body, telegram.calls[1].request.headers["Content-Type"])
    assert plain["caption"] == b"A-1"  # the caption's text, plainly
    assert "parse_mode" not in plain
    text = json.loads(telegram.calls[2].request.body or b"")
    assert (text["text"], text["reply_markup"]) == (picture.instead, keyboard)
    # A refusal the text would meet too is the job's own fate: no text is tried.
    telegram.post(PHOTO_URL, status=400, json=refusal(400, "Bad Request: message thread not found"))
    with pytest.raises(ThreadNotFound):
        courier.send_photo(picture, Destination(-100, 5))
    assert len(telegram.calls) == 4


def test_a_photos_caption_is_edited_by_edit_message_caption(
    client: TelegramClient, telegram: responses.RequestsMock
) -> None:
    caption_url = f"{API_URL}/bot{TOKEN}/editMessageCaption"
    telegram.post(caption_url, json={"ok": True, "result": True})
    Courier(client, attempt_timeout=2).edit(
        "-100", 9, "<b>A-1</b>\n\n✅ Resolved", None, caption=True
    )
    assert json.loads(telegram.calls[0].request.body or b"") == {
        "chat_id": -100,
        "message_id": 9,
        "caption": "<b>A-1</b>\n\n✅ Resolved",
        "parse_mode": "HTML",
    }
