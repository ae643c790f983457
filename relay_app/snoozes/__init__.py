"""Snoozes (Ignore with a condition): an issue ignored from a card for 1 h, 24 h or until N
more events, brought back once its condition is met (`snoozing.py`, kept in `store.py`)."""
