"""Acting on alerts from the chat: what goes with a sent message and follows it (`outgoing.py`),
its buttons (`keyboards.py`), who may act (`team.py`), a press (`presses.py`), a reply
(`replies.py`), silences (`silencing.py`), what the chat is told when GlitchTip fails
(`notices.py`), and Telegram's updates (`updates.py`)."""
