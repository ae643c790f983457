"""What capabilities provide one another: each service is a Protocol of the core's, named by a
`Key` beside it, and provided by one capability when it starts (operating/capability.py). A
capability asks by the key, never by importing the one that provides it.

A store one capability lends the others (`Lent`: what they may read of its tables) is named the
same way, and declared rather than provided: made on a spool where it is asked for
(`Lending.of`), so that a command-line run, which starts no capability, reads it as the relay
does."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

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


class Stores(Protocol):
    """A spool, as lending sees it: it makes a store of its own on its database."""

    def of(self, kind: Callable[[Any], Service]) -> Service: ...


@dataclass(frozen=True)
class Lent(Generic[Service]):
    """A store a capability lends: its key, and how it is made on a spool's database (its
    class, taking the spool's store; with `borrows`, taking the lending too, so that it may
    read what another lends in its own units of work: `Lending.beside`)."""

    key: Key[Service]
    make: Callable[..., Service]
    borrows: bool = False


class Lending:
    """The stores lent in one relay (or one command-line run): one lender each. Asked for one
    nobody lends, the answer is None (the capability that would is off), never a stand-in."""

    def __init__(self, lent: Iterable[Lent[Any]] = ()) -> None:
        self._lent: dict[str, Lent[Any]] = {}
        for each in lent:
            if each.key.name in self._lent:
                raise ValueError(f"the store {each.key.name!r} is lent twice")
            self._lent[each.key.name] = each

    def of(self, key: Key[Service], spool: Stores) -> Service | None:
        lent = self._lent.get(key.name)
        # What `Lent` was given under this key, which typed it.
        return None if lent is None else spool.of(lambda store: self._made(lent, store))

    def beside(self, key: Key[Service], store: Any) -> Service | None:
        """The store lent under this key made on the same spool's store as the one asking (a
        lent store that borrows): None when nobody lends it."""
        lent = self._lent.get(key.name)
        return None if lent is None else self._made(lent, store)

    def _made(self, lent: Lent[Any], store: Any) -> Any:
        return lent.make(store, self) if lent.borrows else lent.make(store)
