"""GlitchTip: its webhook's payload (`webhook.py`), its API (`api.py`), which presses and
replies call, and an issue's details read from it for the messages (`details.py`,
`lookups.py`)."""
