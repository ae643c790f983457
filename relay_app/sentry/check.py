"""What `relay-app check` asks of Sentry, with SENTRY_CLIENT_SECRET: that its token is accepted
where SENTRY_URL says (and where its organization's region is), and that the relay running here
takes a request signed with the client secret, as Sentry would send one."""

from __future__ import annotations

import json
from collections.abc import Iterator

import requests

from ..core.errors import TrackerError
from ..core.json_values import json_object
from ..operating.binds import local_url
from ..operating.config import Settings
from ..operating.selfcheck import Verdict, refused_verdict
from .api import SentryApi
from .settings import SENTRY_SETTINGS, SentryConfig
from .webhook import PATH, signed_headers

# The relay answers a webhook it only notes at once; this covers a busy host.
ASK_TIMEOUT = 5.0


def sentry_verdicts(settings: Settings) -> Iterator[Verdict]:
    config = settings.of(SENTRY_SETTINGS)
    if config is None:
        return
    yield _token_verdict(config, settings.send_timeout)
    yield _signed_verdict(config, settings.bind)


def _token_verdict(config: SentryConfig, timeout: float) -> Verdict:
    name = "Sentry token"
    if config.api_token is None:
        return Verdict(
            name,
            True,
            "none (SENTRY_API_TOKEN unset): Sentry's alerts come in without buttons",
        )
    api = SentryApi(config.api_token, config.url, timeout=timeout)
    try:
        organizations = api.organizations()
        region = api.region()
    except TrackerError as exc:
        return refused_verdict(name, exc, f"SENTRY_URL ({config.url})")
    if not organizations:
        return Verdict(
            name,
            False,
            f"accepted at {config.url}, but it sees no organization",
            "give the internal integration Organization: Read, and Issue & Event: Read & Write",
        )
    slugs = ", ".join(str(json_object(o).get("slug")) for o in organizations[:3])
    where = f"; its API at {region}" if region != config.url.rstrip("/") else ""
    return Verdict(
        name,
        True,
        f"accepted at {config.url} (organization {slugs}{where}); presses need Issue & Event: "
        "Read & Write, which only a press can show",
    )


def _signed_verdict(config: SentryConfig, bind: str) -> Verdict:
    """A request signed as Sentry signs one, to the relay here: an `installation` webhook,
    which it only notes."""
    name = "Sentry webhook"
    url = local_url(bind, PATH)
    body = json.dumps({"action": "check", "data": {}, "installation": {"uuid": "relay-app check"}})
    headers = signed_headers(body.encode(), config.client_secret, "installation")
    try:
        answer = requests.post(url, data=body.encode(), headers=headers, timeout=ASK_TIMEOUT)
    except requests.RequestException as exc:
        return Verdict(
            name,
            False,
            f"the relay does not answer at {url}: {type(exc).__name__}",
            "start the relay (gunicorn wsgi:app) and run this again",
        )
    if answer.status_code == 200:
        return Verdict(name, True, f"the relay at {url} takes a request signed with the secret")
    if answer.status_code == 401:
        return Verdict(
            name,
            False,
            f"the relay at {url} refused a request signed with SENTRY_CLIENT_SECRET",
            "the running relay has another secret: restart it with this environment",
        )
    if answer.status_code == 404:
        return Verdict(
            name,
            False,
            f"the relay at {url} has no Sentry page",
            "restart it with SENTRY_CLIENT_SECRET set",
        )
    return Verdict(name, False, f"the relay at {url} answered {answer.status_code}", None)
