"""Acting on alerts from the chat: what goes with a sent message and follows it (`outgoing.py`),
its buttons (`keyboards.py`), a press (`presses.py`), and Telegram's updates (`updates.py`)."""
