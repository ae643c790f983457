"""What an alert says in the chat: one alert's message (`formatting.py`, on `spans.py`, with
its issues' details from `details.py`), many in one digest (`digest.py`) or as a backlog's
lines (`lines.py`), what an alert is about (`subjects.py`), and an issue's trend (`trend.py`)."""
