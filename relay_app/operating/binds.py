"""Where gunicorn listens: RELAY_BIND for GlitchTip's webhooks, and RELAY_ADMIN_BIND for
/metrics, /readyz and /healthz when they have a listener of their own (read by gunicorn.conf.py
before anything else, and by `relay-app ready`)."""

from __future__ import annotations

from collections.abc import Mapping

from .env_values import ConfigError, port_of, port_or_error

# Not 8000: that is GlitchTip's own port, and the two often share a host.
DEFAULT_BIND = "127.0.0.1:8780"


def bind_from_env(environ: Mapping[str, str]) -> str:
    """RELAY_BIND: where gunicorn listens for GlitchTip's webhooks."""
    raw = environ.get("RELAY_BIND", "").strip() or DEFAULT_BIND
    port_or_error("RELAY_BIND", raw, example=DEFAULT_BIND)
    return raw


def admin_bind_from_env(environ: Mapping[str, str], bind: str | None = None) -> str | None:
    """RELAY_ADMIN_BIND: the listener for /metrics, /readyz and /healthz, if they have their
    own; it must not share the webhook listener's port, since the port is what tells them
    apart."""
    name = "RELAY_ADMIN_BIND"
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    port = port_or_error(name, raw, example="127.0.0.1:9187")
    if port == 0:
        # The app tells the listeners apart by port, so this one's must be known in advance.
        raise ConfigError(name, f"{raw!r} needs a fixed port; for example 127.0.0.1:9187")
    webhook_bind = bind if bind is not None else environ.get("RELAY_BIND", "").strip()
    if port_of(webhook_bind or DEFAULT_BIND) == port:
        raise ConfigError(
            name,
            f"{raw!r} uses the webhook listener's port ({port}, from RELAY_BIND); give it a "
            "port of its own, like 127.0.0.1:9187",
        )
    return raw


# Addresses a listener binds to mean "every interface"; they are not addresses to ask.
_ANY_ADDRESS = {"0.0.0.0", "::", "[::]", ""}  # noqa: S104


def local_url(bind: str, path: str) -> str:
    """Where a command on this host asks the relay listening at `bind` for `path`: a relay
    listening on every address answers on loopback too."""
    host, _, port = bind.rpartition(":")
    return f"http://{'127.0.0.1' if host in _ANY_ADDRESS else host}:{port}{path}"
