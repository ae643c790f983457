"""What a tracker's failure to do what a press or reply asked means (GlitchTip's, Sentry's: the
core's errors, core/errors.py), for each of its two audiences. The person in the chat gets a
short plain answer in the chat's language: whether to try again, or that the relay's operator
has the details. The operator gets the variable, the scope and the fix, in English, in the log
line (and from `relay-app check`)."""

from __future__ import annotations

from ..core.errors import (
    IssueGone,
    ScopeMissing,
    TokenRefused,
    TrackerError,
    TrackerRedirected,
    TrackerUnreachable,
)
from ..words import Said


def tracker_notice(error: TrackerError) -> Said:
    """What the person who pressed or replied is told."""
    if isinstance(error, TrackerUnreachable):
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
    if isinstance(error, IssueGone):
        return Said("glitchtip_issue_gone")
    return Said("glitchtip_refused", {"detail": error.detail})


def operator_fix(error: TrackerError) -> str | None:
    """What the relay's operator must change, naming the variable of the source whose API
    refused (GlitchTip's, Sentry's); None when nothing in the relay's setup is wrong (the
    source down, an issue deleted, or no API asked)."""
    setup = error.setup
    if setup is None:
        return None
    if isinstance(error, TokenRefused):
        return f"{setup.token} is wrong or revoked: {setup.new_token}"
    if isinstance(error, ScopeMissing):
        return f"{setup.token} may not change issues{setup.lacking}: {setup.new_token}"
    if isinstance(error, TrackerRedirected):
        return (
            f"{setup.url} answers with a redirect (to {error.detail}), which the relay does not "
            f"follow (its token would go there): set {setup.url} to {setup.name}'s own address"
        )
    if isinstance(error, TrackerUnreachable) and error.cause == "unresolvable":
        return f"{setup.url}'s host name could not be resolved: check {setup.url} and DNS"
    return None
