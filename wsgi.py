"""Entry point for `gunicorn wsgi:app` (settings come from the environment)."""

from relay_app import create_app

app = create_app()
