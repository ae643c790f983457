"""The web side: the Flask views (`views.py`: the webhook, presses by webhook, health,
metrics; a webhook's alert walks down intake/), the relay as the app holds it
(`relay.py`), the requests that reach no page
(`misses.py`), and the gunicorn worker that reads each request whole (`http_worker.py`), where
h11 says a request ends (`framing.py`)."""
