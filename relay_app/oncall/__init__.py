"""On call: whom the relay calls while nobody acts on an alert (the route's escalation steps,
`steps.py`, kept as timers in `steps_store.py`), the rotations' handoffs said in the chat
(`handoffs.py`, `handoff_text.py`), `/oncall` (`command.py`) and `relay-app oncall`
(`cli.py`). The routes file's `escalate` and `[[rotation]]` are read in routes/."""
