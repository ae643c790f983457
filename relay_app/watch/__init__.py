"""The watcher of GlitchTip: the issues alerted on, asked about each interval by the fleet's
leader (`watcher.py`, kept in `store.py`), escalating ones posted again, the cards kept in step
with what GlitchTip says (`cards/in_step.py`), and the unresolved issues a chat receives, as
`/issues` and the summary list them (`issues.py`)."""
