"""What a capability reads of the environment itself (GlitchTip's GLITCHTIP_* variables,
Sentry's SENTRY_*), declared with it (`Capability.settings`): read with every other variable by
`Settings.from_env`, whose one ConfigError names every problem of theirs too (theirs first), and
kept in the frozen Settings (`Settings.of`). A source's tracker token says it acts on issues:
buttons under them, and the chat listened to; its secrets are kept out of every log line and
command output. `read_theirs` reads them all, as `Settings.from_env` does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .env_values import ConfigError

T = TypeVar("T")


def _no_token(value: Any) -> str | None:
    return None


def _no_secrets(value: Any) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class SettingsOf(Generic[T]):
    # Whose: the capability's name.
    name: str
    # Its variables read (raises ConfigError, one gathering every problem of theirs); None
    # when none of them is set.
    read: Callable[[Mapping[str, str]], T | None]
    # Its tracker's API token, where it has one: its issues get buttons.
    token: Callable[[T], str | None] = _no_token
    # The variable that token is, as the relay's messages name it ('SENTRY_API_TOKEN').
    token_name: str = ""
    # The values no log line or command output may show.
    secrets: Callable[[T], tuple[str, ...]] = _no_secrets
    # The name of the source of alerts its capability is, as a route's `source` names it; ''
    # for a capability that is none. The registry sets it from the capability's source.
    source: str = ""


@dataclass(frozen=True)
class Theirs:
    """What the capabilities read of the environment themselves, each with its reader; whose
    token is set first (`token_name`), and the tokens that could be (`could_be`)."""

    values: tuple[tuple[SettingsOf[Any], object], ...]
    token_name: str | None = None
    could_be: tuple[str, ...] = ()


def sources_named(theirs: Sequence[SettingsOf[Any]]) -> tuple[str, ...]:
    """The sources of alerts a route's `source` may name: every source's capability's, on or
    off, in the registry's order."""
    return tuple(each.source for each in theirs if each.source)


def read_theirs(environ: Mapping[str, str], theirs: Sequence[SettingsOf[Any]]) -> Theirs:
    """Each capability's settings read; every problem of theirs in one ConfigError."""
    problems: list[ConfigError] = []
    values: list[tuple[SettingsOf[Any], object]] = []
    for each in theirs:
        try:
            value = each.read(environ)
        except ConfigError as exc:
            problems.append(exc)
            continue
        if value is not None:
            values.append((each, value))
    if problems:
        raise ConfigError.gathered(problems)
    tokened = (each.token_name for each, value in values if each.token(value) is not None)
    could_be = tuple(each.token_name for each in theirs if each.token_name)
    return Theirs(tuple(values), next(tokened, None), could_be)
