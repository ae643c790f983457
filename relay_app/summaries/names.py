"""Each route's place by its route's name: how the report's picture names the places it counts
(a key of Report.by_place: '-100123', '-100123/42')."""

from __future__ import annotations

from ..operating.config import Settings


def place_names(settings: Settings) -> dict[str, str]:
    """Each route's place by its key ('-100123', '-100123/42'): the route's name, the first
    route's where several send there."""
    names: dict[str, str] = {}
    for route in settings.routes.routes:
        place = route.place(settings.default_destination)
        key = place.chat_key + (f"/{place.thread}" if place.thread is not None else "")
        names.setdefault(key, route.name)
    return names
