"""Operating the relay: its settings (`config.py`, `env_values.py`), the `relay-app` command
(`cli.py`, `chats.py`), `relay-app check` (`selfcheck.py`), and the gauges /metrics reads at
each scrape (`gauges.py`)."""
