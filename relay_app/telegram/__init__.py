"""Telegram's Bot API: the client with its hard deadline (`client.py`), and the courier that
delivers a message with its fallbacks and edits it later (`courier.py`)."""
