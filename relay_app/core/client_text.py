"""What a client's strings may hold, once read: every string of a webhook's payload (and of a
Telegram update) passes through `cleaned` as the JSON is read, so that nothing after it meets a
character it cannot store, show or log.

- A lone surrogate (`\\ud800`: valid JSON, not valid text) cannot be written to the spool or
  sent to Telegram: it becomes U+FFFD, which shows that something was there.
- NUL and the other control characters but tab and line feed (C0, DEL, C1) are dropped: they
  end strings in C, forge log lines, and Telegram refuses some.
- Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) are dropped:
  a title would read backwards, or an id would show another's characters.
- Invisible characters that can make two ids look alike, or a title read otherwise, are
  dropped: every format character (Unicode's class Cf: zero-width space, word joiner, byte-order
  mark, soft hyphen, the bidirectional marks LRM, RLM and ALM, the invisible operators
  U+2061-U+2064, the tag characters, U+180E, ...) but the few that show (Arabic's number
  signs), and the invisible letters and marks outside it (the Hangul fillers, the combining
  grapheme joiner, the blank braille pattern U+2800); the zero-width joiners (U+200C, U+200D)
  where they touch an ASCII character or an end, since emoji and scripts such as Persian use
  them only between their own characters.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DROPPED = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b\u2060\ufeff\u00ad]"
    # A joiner that does not sit between two non-ASCII characters.
    "|(?<![^\x00-\x7f])[\u200c\u200d]+|[\u200c\u200d]+(?![^\x00-\x7f])"
)


# Invisible, and not of class Cf: the Hangul fillers, the combining grapheme joiner, the blank
# braille pattern.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u034f\u2800")
# Of class Cf, but shown (prepended concatenation marks: Arabic's number signs and the like),
# and the joiners, which _DROPPED keeps only between two non-ASCII characters.
_SHOWN_FORMAT = frozenset(
    "\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd"
    "\u200c\u200d"
)


def clean(text: str) -> str:
    """`text` with what no client may put in the relay's strings replaced or dropped."""
    if text.isascii() and text.isprintable():
        return text  # most strings: nothing to look for
    kept = _DROPPED.sub("", _LONE_SURROGATE.sub("\ufffd", text))
    if kept.isascii():
        return kept
    return "".join(char for char in kept if not _hidden(char))


def _hidden(char: str) -> bool:
    if char.isascii():
        return False
    if char in _INVISIBLE:
        return True
    return unicodedata.category(char) == "Cf" and char not in _SHOWN_FORMAT


def cleaned(value: Any) -> Any:
    """A JSON value with every string in it, keys included, `clean`. Its depth must have been
    bounded already (webhook.payload_from_json does)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(key): cleaned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [cleaned(item) for item in value]
    return value
