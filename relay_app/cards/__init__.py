"""Cards: an alert's message with its buttons (Resolve, Ignore, On it, Mute), as GlitchTip's
issues change it. What a card shows (`card.py`), what the relay keeps of each message it sent
(`sent.py`), what goes with a message and is kept after it (`outgoing.py`), and a card's edit
as its job writes it (`edits.py`)."""
