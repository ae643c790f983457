"""Daily summaries: what happened in a place since the last one, composed from what the watcher
read and posted once a day for the fleet (`daily.py`, kept in `store.py`), its message
(`text.py`), `relay-app summary` and `relay-app report` (`cli.py`); and what on call cost over a
period (`report.py`, in words by `report_text.py`), a summary's weekly part."""
