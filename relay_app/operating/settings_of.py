"""What a capability reads of the environment itself (Sentry's SENTRY_* variables), declared
with it (`Capability.settings`): read with every other variable by `Settings.from_env`, whose one
ConfigError names every problem of theirs too, and kept in the frozen Settings
(`Settings.of`). A source's tracker token says it acts on issues: buttons under them, and the
chat listened to; its secrets are kept out of every log line and command output."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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
