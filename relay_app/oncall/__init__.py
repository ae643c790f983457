"""On call: whom the relay calls while nobody acts on an alert (the route's escalation steps,
`steps.py`, kept as timers in `steps_store.py`), a taker who goes quiet called again
(`recalls.py`), calls that reach a person in a private chat with the bot (`people.py`,
`direct.py`), who is on duty with covers made from the chat or the command line (`covers.py`),
the rotations' handoffs said in the chat (`handoffs.py`, `handoff_text.py`), `/oncall`, `/cover`
and `/start` (`command.py`), `relay-app oncall` (`cli.py`), and old records forgotten
(`forgetting.py`). The routes file's `escalate` and `[[rotation]]` are read in routes/."""
