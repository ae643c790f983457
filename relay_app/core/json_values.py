"""Reading JSON that another program wrote (GlitchTip's webhook and API, a Telegram update, a
job's data): each value as the type the relay wants, or an empty one when it is anything else.
Never an exception, and never a bool for a number: JSON's `true` is not 1 (`isinstance(True,
int)` holds in Python); never a count read from what only looks like digits (`"²".isdigit()`
holds, and `int("²")` raises; 5,000 digits raise too)."""

from __future__ import annotations

from typing import Any


def json_object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def json_objects(value: object) -> list[dict[str, Any]]:
    """The objects of a list, the rest left out."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def json_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# A count of events, people or issues is a whole number within JSON's exact integers; anything
# past is not a count.
MAX_COUNT = 2**53


def json_count(value: object, most: int = MAX_COUNT) -> int | None:
    """A whole number from 0 to `most`, as GlitchTip and Sentry write one (a JSON number, or a
    string of ASCII digits, "12"); None for anything else: a fraction, NaN, a bool, a sign, an
    exponent, a superscript or another script's digits, more than 20 digits."""
    if isinstance(value, str):
        text = value.strip()
        number: object = (
            int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else None
        )
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        number = value
    if isinstance(number, int) and not isinstance(number, bool) and 0 <= number <= most:
        return number
    return None
