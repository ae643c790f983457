"""Delivery: the webhook's side (`intake.py`: admit, try at once), the retrier (`dispatcher.py`:
a lazily made ThreadPoolExecutor of jobs), one attempt with its outcome (`job.py`), the retry
policy declared with tenacity (`policy.py`), and Telegram's health (`health.py`)."""
