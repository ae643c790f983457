"""Operating the relay: its settings (`config.py`, `env_values.py`), the `relay-app` command
(`cli.py`, `console.py`, `chats.py`, `spool_cli.py`, `routes_cli.py`;
the capabilities add their own subcommands), `relay-app check` (`selfcheck.py`) and each
worker's start-up check (`setup_watch.py`), and the gauges /metrics reads at each scrape
(`gauges.py`)."""
