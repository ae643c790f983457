"""GlitchTip: its webhook's payload (`webhook.py`) and its API (`api.py`), which a press on
a button calls."""
