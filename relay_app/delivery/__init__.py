"""Delivery: the retrier (`dispatcher.py`: a lazily made ThreadPoolExecutor of jobs, on which a
webhook's first attempt is made too, intake/attempt.py), one attempt with its outcome
(`job.py`), the retry policy declared with tenacity (`policy.py`), and Telegram's health
(`health.py`)."""
