"""What a client's strings may hold, once read: every string of a webhook's payload (and of a
Telegram update) passes through `cleaned` as the JSON is read, so that nothing after it meets a
character it cannot store, show or log.

- A lone surrogate (`\\ud800`: valid JSON, not valid text) cannot be written to the spool or
  sent to Telegram: it becomes U+FFFD, which shows that something was there.
- NUL and the other control characters but tab and line feed (C0, DEL, C1) are dropped: they
  end strings in C, forge log lines, and Telegram refuses some.
- Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) are dropped:
  a title would read backwards, or an id would show another's characters.
- Invisible characters that can make two ids look alike are dropped: zero-width space, word
  joiner, byte-order mark, soft hyphen always; zero-width joiners (U+200C, U+200D) where they
  touch an ASCII character or an end, since emoji and scripts such as Persian use them only
  between their own characters.
"""

from __future__ import annotations

import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DROPPED = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b\u2060\ufeff\u00ad]"
    # A joiner that does not sit between two non-ASCII characters.
    "|(?<![^\x00-\x7f])[\u200c\u200d]+|[\u200c\u200d]+(?![^\x00-\x7f])"
)


def clean(text: str) -> str:
    """`text` with what no client may put in the relay's strings replaced or dropped."""
    if text.isascii() and text.isprintable():
        return text  # most strings: nothing to look for
    return _DROPPED.sub("", _LONE_SURROGATE.sub("\ufffd", text))


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
