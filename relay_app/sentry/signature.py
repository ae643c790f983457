"""Sentry's signature of a webhook: HMAC-SHA256 of the body's exact bytes, keyed with the
integration's client secret, in hex (`SentryApp.build_signature` in getsentry/sentry's
src/sentry/sentry_apps/models/sentry_app.py). Checked over the raw body before it is parsed: a
body parsed and written again need not be the bytes Sentry signed (getsentry/sentry #71025)."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Sentry-Hook-Signature"
# A hex SHA-256 is 64 characters; a longer header is not Sentry's, and is not compared.
_MAX_HEADER = 128


def signature_of(body: bytes, secret: str) -> str:
    """What Sentry sends in Sentry-Hook-Signature for `body`."""
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def signed(body: bytes, header: str | None, secret: str) -> bool:
    """Whether `header` is Sentry's signature of `body` with `secret`, compared in constant
    time."""
    if not header or len(header) > _MAX_HEADER or not header.isascii():
        return False
    return hmac.compare_digest(header.strip().lower(), signature_of(body, secret))
