"""The pipeline a webhook walks down, one module per stage, each called once and in order:

1. `receive.py`: the alert its source's page read from the body once (core/alerts.py), which
   every later stage reads and the job keeps whole; the deadline every wait of the webhook's
   ends by;
2. `route.py`: the routes split it, each part one destination's (`alerts.py` walks each part
   down the rest);
3. `hold.py`: a hold (a silence) keeps it back from its chat;
4. `queue.py`: queued on disk before anything slow (`details.py`: its issues' details within
   their budget);
5. `attempt.py`: its first attempt, waited for until the webhook must be answered, and what
   the answer says (`taken.py`);
6. `record.py`: its arrival noted, and what follows it started (a capability's: `AFTER_WEBHOOK`).

`pages.py` is the door a capability's own page (Sentry's webhook) comes in by."""
