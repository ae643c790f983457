"""What a client's strings may hold once read (core/client_text.py), and that a webhook's payload
is read that way: an alert is never lost, reversed or disguised by its characters."""

from __future__ import annotations

import json

import pytest

from relay_app.core.client_text import clean, cleaned
from relay_app.core.json_body import payload_from_json
from relay_app.words import ENGLISH
from tests.conftest import SOURCES
from tests.payloads import issue, issue_alert, message_for


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("ZeroDivisionError: division by zero", "ZeroDivisionError: division by zero"),
        ("line one\nline two\tand a tab", "line one\nline two\tand a tab"),
        ("Ошибка: деление на ноль", "Ошибка: деление на ноль"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        (
            "NUL\x00 and bell\x07 and CR\r\n and DEL\x7f and C1\x85",
            "NUL and bell and CR\n and DEL and C1",
        ),
        # A title that would read backwards in the chat, and an id that would show another's.
        ("\u202eevil\u202c.exe", "evil.exe"),
        ("\u2067BACKEND-1A\u2069", "BACKEND-1A"),
        ("BACK\u200bEND-1A", "BACKEND-1A"),
        ("BACKEND\u200d-1A", "BACKEND-1A"),
        ("\ufeffBACKEND\u2060-1A\u00ad", "BACKEND-1A"),
        # Where scripts and emoji need a joiner, between their own characters, it stays.
        ("👨\u200d👩\u200d👧 family", "👨\u200d👩\u200d👧 family"),
        ("می\u200cخواهم", "می\u200cخواهم"),
        # Every format character and invisible letter that reached the chat before: the marks
        # LRM, RLM and ALM, the invisible operators, tag characters, the Hangul fillers, the
        # combining grapheme joiner, the Mongolian vowel separator, the blank braille pattern.
        ("\u200fBACKEND\u200e-1A\u061c", "BACKEND-1A"),
        ("BACK\u2061\u2062\u2063\u2064END-1A", "BACKEND-1A"),
        ("BACKEND-1A\U000e0041\U000e0042\U000e007f", "BACKEND-1A"),
        ("\u3164BACKEND\u115f\u1160-1A\uffa0", "BACKEND-1A"),
        ("BACK\u034fEND\u180e-1A\u2800", "BACKEND-1A"),
        ("Ошибка\u200e: деление\u2800", "Ошибка: деление"),
        # What shows stays: Arabic's number sign, an emoji's variation selector.
        ("\u0600١٢", "\u0600١٢"),
        ("❤\ufe0f ok", "❤\ufe0f ok"),
    ],
)
def test_clean_keeps_what_people_write_and_drops_what_disguises_it(given: str, kept: str) -> None:
    assert clean(given) == kept


def test_every_string_of_a_payload_is_cleaned_keys_included() -> None:
    value = {"a\u202e": ["x\x00", {"b": "\ud800"}], "n": 1, "t": True, "z": None}
    assert cleaned(value) == {"a": ["x", {"b": "\ufffd"}], "n": 1, "t": True, "z": None}


def test_a_webhook_with_lone_surrogates_reads_as_an_alert_with_its_text() -> None:
    alert = issue_alert(issue(7, title="Boom", link="https://gt.example.org/a/issues/7"))
    # Valid JSON, as GlitchTip could send it, whose strings are not valid text.
    body = json.dumps(alert).replace("/issues/7", "/issues/7\\ud800")
    body = body.replace('"Boom"', '"Bo\\udc00om \\u202eftw"')
    payload = payload_from_json(body.encode())
    message = message_for(payload, ENGLISH, sources=SOURCES)
    assert "Bo\ufffdom ftw" in message.text
    message.html.encode()  # every string can now be encoded, for the spool and for Telegram
    message.text.encode()
