"""Acting from the chat: Telegram's updates read (`updates.py`) and each routed to its handler,
a press on a card's button (`presses.py`), a reply that becomes a comment (`replies.py`), a
command (`commands.py`, the capabilities' own registered with it), a pasted link answered with
the issue's card (`links.py`, within the chat's scope, `scope.py`), who may act (`team.py`),
and the budget of answers to what people type (`answers.py`)."""
