"""GlitchTip, the relay's first source, as a capability (`plugin.py`): its webhook's payload read
into the alert (`webhook.py`), its `Source` (`source.py`), its API where its calls are its own
(`api.py`, an `issue_api` client), its variables (`settings.py`), the issues an alert counted and
did not attach, named (`hidden.py`), its API's failing shared on the spool (`health.py`), its
check, its state, its counters, and `relay-app glitchtip connect` (`connect.py`,
`connect_proof.py`)."""
