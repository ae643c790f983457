"""A webhook taken in: split by the routes (`routed.py`), each alert read once, held by a
silence or queued on disk with its details within their budget, then its first attempt waited
for (`alerts.py`); and when GlitchTip last reached the relay (`last_webhook.py`)."""
