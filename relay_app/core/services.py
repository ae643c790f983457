"""What capabilities provide one another: each service is a Protocol of the core's, named by a
`Key` beside it, and provided by one capability when it starts (operating/capability.py). A
capability asks by the key, never by importing the one that provides it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

Service = TypeVar("Service")


@dataclass(frozen=True)
class Key(Generic[Service]):
    """A service's name, typed by the Protocol its provider implements."""

    name: str


class Services:
    """The services provided in one relay: one provider each. Asked for one nobody provides,
    the answer is None (the capability that would is off), never a stand-in."""

    def __init__(self) -> None:
        self._provided: dict[str, object] = {}

    def provide(self, key: Key[Service], provider: Service) -> None:
        if key.name in self._provided:
            raise ValueError(f"the service {key.name!r} is provided twice")
        self._provided[key.name] = provider

    def find(self, key: Key[Service]) -> Service | None:
        # What `provide` was given under this key, which typed it.
        return self._provided.get(key.name)  # type: ignore[return-value]
