"""GlitchTip: its webhook's payload (`webhook.py`), its API (`api.py`), which presses and
replies call, and an issue's details read from it for the messages (`details.py`,
`lookups.py`), and what its failures mean to the person who asked and to the operator
(`notices.py`)."""
