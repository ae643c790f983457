"""How one environment variable's text becomes a value: a number in range, a switch, a
comma-separated list, an http(s) base URL, HOST:PORT. Each failure is a ConfigError that names
the variable and says how to fix it; config.py gathers them, so a first run names everything
there is to fix at once. Never echoes what could be a secret.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar
from urllib.parse import urlsplit

from ..routes.sound import SoundError, zone_of

T = TypeVar("T")


class ConfigError(ValueError):
    """Configuration variables are missing or malformed; the relay must not start.

    Raised by one reader with one problem; `Settings.from_env` gathers every reader's problems
    into one, so a first run names everything there is to fix at once."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable
        self.problems: tuple[tuple[str, str], ...] = ((variable, problem),)

    @classmethod
    def gathered(cls, errors: Sequence[ConfigError]) -> ConfigError:
        if len(errors) == 1:
            return errors[0]
        combined = cls(errors[0].variable, errors[0].problems[0][1])
        combined.problems = tuple(problem for error in errors for problem in error.problems)
        lines = [f"{variable}: {problem}" for variable, problem in combined.problems]
        combined.args = (f"{len(lines)} problems:\n  " + "\n  ".join(lines),)
        return combined

    @property
    def variables(self) -> list[str]:
        return [variable for variable, _ in self.problems]


def port_or_error(name: str, raw: str, *, example: str) -> int:
    port = port_of(raw)
    if port is None:
        raise ConfigError(
            name, f"{raw!r} is not HOST:PORT with a port up to 65535; for example {example}"
        )
    return port


def address_in_use(bind: str) -> str | None:
    """Why nothing can listen at HOST:PORT now (in use, or not this host's address); None
    when a listener could (as gunicorn binds: with SO_REUSEADDR)."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host or None, int(port), type=socket.SOCK_STREAM)
    except (OSError, ValueError) as exc:
        return f"cannot listen there: {exc}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "the address is already in use"
            return f"cannot listen there: {exc.strerror or exc}"
    return None


def port_of(bind: str) -> int | None:
    host, colon, port = bind.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        return None
    return int(port)


def required(environ: Mapping[str, str], name: str, hint: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigError(name, f"is not set; {hint}")
    return value


def listed(
    environ: Mapping[str, str], name: str, parse: Callable[[str], T | None], problem: str
) -> list[T]:
    """A comma-separated variable, each item read by `parse` (None: not one), empty ones
    skipped; the first bad item is named with `problem`."""
    found = []
    for raw in environ.get(name, "").split(","):
        if not raw.strip():
            continue
        item = parse(raw.strip())
        if item is None:
            raise ConfigError(name, f"{raw.strip()!r} {problem}")
        found.append(item)
    return found


def switch(environ: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(name, f"{raw!r} is not a switch; use 1 or 0")


def base_url(environ: Mapping[str, str], name: str, otherwise: str) -> str | None:
    """An http(s) base URL without '?' or '#' parts and its trailing '/'; None when unset."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 (a port past 65535, or not a number, raises here)
    except ValueError:
        raise ConfigError(name, f"is not a URL that can be read; {otherwise}") from None
    # Echoed without its password: the problem is never the password.
    shown = raw.replace(f":{parts.password}@", ":***@") if parts.password else raw
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(name, f"{shown!r} is not an http(s) URL; {otherwise}")
    if parts.query or parts.fragment:
        raise ConfigError(name, f"{shown!r} must be a base URL without '?' or '#' parts")
    return raw.rstrip("/")


def credential_free(name: str, url: str | None) -> str | None:
    # requests would send a user and password in the URL as Basic auth, over the token.
    if url is not None and urlsplit(url).username is not None:
        raise ConfigError(name, "must not hold a user name or password; the token is the login")
    return url


_SECONDS = "a number of seconds"
_INTEGER = "an integer"


def number(
    environ: Mapping[str, str],
    name: str,
    *,
    default: float,
    low: float,
    high: float,
    why: str = "",
) -> float:
    """A number of seconds from `low` to `high` (`why` says why those), `default` when unset."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(name, f"{raw!r} is not {_SECONDS}") from None
    if not low <= value <= high:
        raise _out_of_range(name, raw, _SECONDS, (low, high), why)
    return value


def integer(environ: Mapping[str, str], name: str, *, default: int, low: int, high: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(name, f"{raw!r} is not {_INTEGER}") from None
    if not low <= value <= high:
        raise _out_of_range(name, raw, _INTEGER, (low, high))
    return value


def _out_of_range(
    name: str, raw: str, kind: str, bounds: tuple[float, float], why: str = ""
) -> ConfigError:
    reason = f" ({why})" if why else ""
    low, high = bounds
    return ConfigError(name, f"{raw} is out of range; use {kind} from {low:g} to {high:g}{reason}")


def time_zone(environ: Mapping[str, str], name: str) -> str:
    """An IANA time zone's name (Europe/Moscow); UTC when unset."""
    raw = environ.get(name, "").strip() or "UTC"
    try:
        zone_of(raw)
    except SoundError as exc:
        raise ConfigError(name, str(exc)) from None
    return raw
