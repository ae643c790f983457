"""Daily summaries: what happened in a place since the last one, composed from what the watcher
read and posted once a day for the fleet (`daily.py`, kept in `store.py`), its message
(`text.py`) and `relay-app summary` (`cli.py`)."""
