"""Sentry's webhooks as the tools read them (`relay-app preview`, `relay-app routes test`): a
body saved from Sentry (or one of tests/sentry_samples/, examples/sentry-*.json) is told from
GlitchTip's by Sentry's envelope (`action`, `installation`, `data`), and its resource by what
`data` holds (`event`: an issue alert; `metric_alert`; `issue`), as the relay's page is told
by the `Sentry-Hook-Resource` header, which a saved body has lost. No signature is checked: the
file is the operator's own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.json_values import json_object
from ..operating.readers import Read
from .hooks import Alerting, read_hook
from .settings import DEFAULT_SENTRY_URL

# What a body's `data` holds, by the resource Sentry names it with.
_RESOURCES = (("event", "event_alert"), ("metric_alert", "metric_alert"), ("issue", "issue"))


def resource_of(body: dict[str, Any]) -> str | None:
    """The resource Sentry names a body of its with (`event_alert`, `metric_alert`, `issue`);
    '' for one of its it names otherwise; None for a body that is not Sentry's."""
    data = json_object(body.get("data"))
    if not isinstance(body.get("action"), str) or "installation" not in body or not data:
        return None
    return next((name for key, name in _RESOURCES if key in data), "")


def read_sentry(body: dict[str, Any], environ: Mapping[str, str]) -> Read | None:
    """The alert a Sentry webhook's body makes, or what it is when it makes none; None for a
    body that is not Sentry's."""
    resource = resource_of(body)
    if resource is None:
        return None
    if not resource:
        return Read("Sentry", None, said=f"{body['action'][:40]}, which the relay notes only")
    url = (environ.get("SENTRY_URL") or DEFAULT_SENTRY_URL).strip().rstrip("/")
    hook = read_hook(resource, body, sentry_url=url)
    if isinstance(hook, Alerting):
        return Read("Sentry", hook.alert, hook.details)
    return Read("Sentry", None, said=hook.said)
