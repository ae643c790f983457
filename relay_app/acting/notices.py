"""What the person in the chat is told when GlitchTip did not do what their press or reply
asked, in the chat's language, with what to do about it (the log line says it for operators)."""

from __future__ import annotations

from ..core.errors import (
    GlitchTipError,
    GlitchTipIssueGone,
    GlitchTipRedirected,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
)
from ..words import Words


def glitchtip_notice(error: GlitchTipError, words: Words) -> str:
    if isinstance(error, GlitchTipUnreachable):
        if error.cause is None:
            return words.glitchtip_failing.format(detail=error.detail)
        why = {
            "timeout": words.glitchtip_timeout,
            "refused": words.glitchtip_refused_connection,
            "unresolvable": words.glitchtip_unresolvable,
            "connection": words.glitchtip_connection_failed,
        }[error.cause]
        return words.glitchtip_unreachable.format(why=why)
    if isinstance(error, GlitchTipTokenRefused):
        return words.glitchtip_token_refused
    if isinstance(error, GlitchTipScopeMissing):
        return words.glitchtip_scope_missing
    if isinstance(error, GlitchTipIssueGone):
        return words.glitchtip_issue_gone
    if isinstance(error, GlitchTipRedirected):
        return words.glitchtip_redirected.format(where=error.detail)
    return words.glitchtip_refused.format(detail=error.detail)
