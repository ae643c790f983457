"""Operating the relay: its settings (`config.py`, `env_values.py`), the `relay-app` command
(`cli.py`, `console.py`, `chats.py`, `spool_cli.py`, `silence_cli.py`), `relay-app check`
(`selfcheck.py`) and each worker's start-up check (`setup_watch.py`), and the gauges /metrics
reads at each scrape (`gauges.py`)."""
