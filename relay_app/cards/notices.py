"""What a tracker's failure to do what a press or reply asked means (GlitchTip's, Sentry's: the
core's errors, core/errors.py), for each of its two audiences. The person in the chat gets a
short plain answer in the chat's language: whether to try again, or that the relay's operator
has the details. The operator gets the variable, the scope and the fix, in English, in the log
line (and from `relay-app check`)."""

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


def operator_fix(error: GlitchTipError) -> str | None:
    """What the relay's operator must change, naming the variable of the source whose API
    refused (GlitchTip's, Sentry's); None when nothing in the relay's setup is wrong (the
    source down, an issue deleted)."""
    setup = error.setup
    if isinstance(error, GlitchTipTokenRefused):
        return f"{setup.token} is wrong or revoked: {setup.new_token}"
    if isinstance(error, GlitchTipScopeMissing):
        return f"{setup.token} may not change issues{setup.lacking}: {setup.new_token}"
    if isinstance(error, GlitchTipRedirected):
        return (
            f"{setup.url} answers with a redirect (to {error.detail}), which the relay does not "
            f"follow (its token would go there): set {setup.url} to {setup.name}'s own address"
        )
    if isinstance(error, GlitchTipUnreachable) and error.cause == "unresolvable":
        return f"{setup.url}'s host name could not be resolved: check {setup.url} and DNS"
    return None
