"""What GlitchTip's failure to do what a press or reply asked means, for each of its two
audiences. The person in the chat gets a short plain answer in the chat's language: whether to
try again, or that the relay's operator has the details. The operator gets the variable, the
scope and the fix, in English, in the log line (and from `relay-app check`)."""

from __future__ import annotations

from ..core.errors import (
    GlitchTipError,
    GlitchTipIssueGone,
    GlitchTipRedirected,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
)
from ..words import Said

_NEW_TOKEN = (
    "make a new token in GlitchTip (Profile → Auth Tokens) with the event:write scope and set "  # noqa: S105 (a hint, not a password)
    "GLITCHTIP_API_TOKEN to it"
)


def glitchtip_notice(error: GlitchTipError) -> Said:
    """What the person who pressed or replied is told."""
    if isinstance(error, GlitchTipUnreachable):
        if error.cause is None:
            return Said("glitchtip_failing", {"detail": error.detail})
        why = {
            "timeout": "glitchtip_timeout",
            "refused": "glitchtip_refused_connection",
            "unresolvable": "glitchtip_unresolvable",
            "connection": "glitchtip_connection_failed",
        }[error.cause]
        return Said("glitchtip_unreachable", {"why": Said(why)})
    if operator_fix(error) is not None:
        return Said("glitchtip_operator")
    if isinstance(error, GlitchTipIssueGone):
        return Said("glitchtip_issue_gone")
    return Said("glitchtip_refused", {"detail": error.detail})


_NEW_SENTRY_TOKEN = (
    "add a token to the internal integration in Sentry (Settings → Custom Integrations), whose "  # noqa: S105 (a hint, not a password)
    "permissions give Issue & Event: Read & Write, and set SENTRY_API_TOKEN to it"
)


def operator_fix(error: GlitchTipError) -> str | None:
    """What the relay's operator must change, naming the variable; None when nothing in the
    relay's setup is wrong (GlitchTip down, an issue deleted)."""
    if error.source == "Sentry":
        return _sentry_fix(error)
    if isinstance(error, GlitchTipTokenRefused):
        return f"GLITCHTIP_API_TOKEN is wrong or revoked: {_NEW_TOKEN}"
    if isinstance(error, GlitchTipScopeMissing):
        return (
            "GLITCHTIP_API_TOKEN may not change issues (it lacks the event:write scope): "
            f"{_NEW_TOKEN}"
        )
    if isinstance(error, GlitchTipRedirected):
        return (
            f"GLITCHTIP_URL answers with a redirect (to {error.detail}), which the relay does not "
            "follow (its token would go there): set GLITCHTIP_URL to GlitchTip's own address"
        )
    if isinstance(error, GlitchTipUnreachable) and error.cause == "unresolvable":
        return "GLITCHTIP_URL's host name could not be resolved: check GLITCHTIP_URL and DNS"
    return None


def _sentry_fix(error: GlitchTipError) -> str | None:
    """operator_fix, for Sentry's API."""
    if isinstance(error, GlitchTipTokenRefused):
        return f"SENTRY_API_TOKEN is wrong or revoked: {_NEW_SENTRY_TOKEN}"
    if isinstance(error, GlitchTipScopeMissing):
        return f"SENTRY_API_TOKEN may not change issues: {_NEW_SENTRY_TOKEN}"
    if isinstance(error, GlitchTipRedirected):
        return (
            f"SENTRY_URL answers with a redirect (to {error.detail}), which the relay does not "
            "follow (its token would go there): set SENTRY_URL to Sentry's own address"
        )
    if isinstance(error, GlitchTipUnreachable) and error.cause == "unresolvable":
        return "SENTRY_URL's host name could not be resolved: check SENTRY_URL and DNS"
    return None
