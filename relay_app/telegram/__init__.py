"""Telegram's Bot API: the client with its hard deadline (`client.py`), the courier that
delivers a message with its fallbacks and edits it later (`courier.py`), the webhook Telegram
posts updates to (`updates_webhook.py`), and the bot's commands as a capability registers them
(`bot_commands.py`)."""
