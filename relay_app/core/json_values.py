"""Reading JSON that another program wrote (GlitchTip's webhook and API, a Telegram update, a
job's data): each value as the type the relay wants, or an empty one when it is anything else.
Never an exception, and never a bool for a number: JSON's `true` is not 1 (`isinstance(True,
int)` holds in Python)."""

from __future__ import annotations

from typing import Any


def json_object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def json_objects(value: object) -> list[dict[str, Any]]:
    """The objects of a list, the rest left out."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def json_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
