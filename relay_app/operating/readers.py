"""How the tools (`relay-app preview`, `relay-app routes test`) read a webhook of a source other
than GlitchTip: each such source's capability registers a reader (operating/capability.py's
`readers`) that turns its body into the alert the relay reads (core/alerts.py), with its issues'
details, or says what the body is when it sends no message (an issue's change). A body no
reader knows is read as the first source's webhook (GlitchTip's), whose page takes any body:
one it cannot read either is an alert of a payload the relay does not know."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.alerts import Alert
from ..core.sources import Sources


@dataclass(frozen=True)
class Read:
    """A body as a source's reader read it: the alert it makes (None: it makes none, `said`
    says what it is), and its issues' details, as a job keeps them."""

    source: str
    alert: Alert | None
    details: Mapping[str, Any] = field(default_factory=dict)
    said: str = ""


# A source's reader: the body and the environment (where its URL is) to what it is; None when
# the body is not one of its.
PayloadReader = Callable[[dict[str, Any], Mapping[str, str]], Read | None]


def read_payload(
    body: dict[str, Any],
    readers: Sequence[PayloadReader],
    environ: Mapping[str, str],
    sources: Sources,
) -> Read:
    """What the relay makes of `body`: the first source's reader that knows it, else the first
    source's webhook (as `sources` read a body kept before the alert was kept whole)."""
    for reader in readers:
        found = reader(body, environ)
        if found is not None:
            return found
    alert = sources.alert_kept_as(body)
    return Read(alert.source, alert)
