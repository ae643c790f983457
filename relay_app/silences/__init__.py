"""Silences (Mute): alerts held back from a chat for a while, kept and counted, and summed up in
one message when the silence ends. Its store (`store.py`), what holds an alert and Mute/Unmute
(`silencing.py`), which alerts a silence matches (`matching.py`), its summary's message
(`summary.py`), `/silences` (`command.py`), `relay-app silence` (`cli.py`) and its gauges
(`gauges.py`)."""
