"""What an alert says in the chat: one alert's message (`formatting.py`), many in one digest
(`digest.py`), and what an alert is about (`subjects.py`)."""
