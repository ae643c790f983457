"""The issue API Sentry defines and GlitchTip implements, as the relay calls it: one client
(`client.py`) each source's package extends with where its calls differ, and what its answers
say of an issue (`details.py`)."""
