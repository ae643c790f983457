"""What `relay-app check` asks of GlitchTip, with GLITCHTIP_API_TOKEN: that its API accepts the
token at GLITCHTIP_URL (`GET /api/0/users/me/`, the cheapest call that needs one)."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.errors import TrackerError
from ..operating.config import Settings
from ..operating.selfcheck import Verdict, refused_verdict
from .api import GlitchTipApi
from .settings import GLITCHTIP_SETTINGS


def glitchtip_verdicts(settings: Settings) -> Iterator[Verdict]:
    config = settings.of(GLITCHTIP_SETTINGS)
    if config is None or config.api_token is None or config.url is None:
        return
    token, glitchtip_url = config.api_token, config.url
    name = "GlitchTip token"
    api = GlitchTipApi(token, glitchtip_url, timeout=settings.send_timeout)
    try:
        user = api.whoami()
    except TrackerError as exc:
        yield refused_verdict(name, exc, f"GLITCHTIP_URL ({glitchtip_url})")
        return
    who = user.get("username") or user.get("email") or "its user"
    yield Verdict(
        name,
        True,
        f"accepted at {glitchtip_url} ({who}); presses need its event:write scope, "
        "which only a press can show",
    )
