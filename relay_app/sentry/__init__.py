"""Sentry as a second source (docs/sentry.md): its internal integration's signed webhooks taken
in at `POST /sentry/webhook`, read into the relay's alerts, and its issues acted on through its
API, as GlitchTip's are."""
