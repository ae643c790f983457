"""`gunicorn tests.e2e.skewed_wsgi:app`: the relay as wsgi.py makes it, on a host whose wall
clock is RELAY_TEST_CLOCK_OFFSET seconds off, through the one clock the relay reads wall time
from (`create_app(clock=...)`). Its monotonic clock, which its waits use, stays the kernel's,
as a host with a wrong clock has.

libfaketime moved the whole process's clocks instead, and broke Python's timed waits under
it: `threading.Event().wait(1)` never returned under `faketime -f +30s`, and with
FAKETIME_DONT_FAKE_MONOTONIC=1 `time.sleep(0.05)` raised EINVAL. A replica whose waits end
only when something wakes it kept five alerts in memory for a minute: the test measured
libfaketime, not the relay."""

import os
import time

from relay_app import create_app

OFFSET = float(os.environ["RELAY_TEST_CLOCK_OFFSET"])


def skewed_clock() -> float:
    return time.time() + OFFSET


app = create_app(clock=skewed_clock)
