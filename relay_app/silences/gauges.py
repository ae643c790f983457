"""The silences' gauges, read at scrape time from the spool, so every worker reports the same
numbers: how many silences hold now, and how many alerts they have held."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.errors import SpoolError
from .store import SilenceStore

if TYPE_CHECKING:
    from prometheus_client.core import Metric


class SilenceGauges:
    def __init__(self, silences: SilenceStore) -> None:
        self._silences = silences

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        try:
            active, held = self._silences.tally(now=time.time())
        except SpoolError:
            return
        silences = GaugeMetricFamily(
            "relay_silences_active",
            "Silences holding alerts back from a chat now (relay-app silence list)",
        )
        silences.add_metric([], active)
        yield silences
        kept = GaugeMetricFamily(
            "relay_silences_held_alerts",
            "Alerts the active silences have held back so far: each is kept in the spool and "
            "summed up in one message when its silence ends",
        )
        kept.add_metric([], held)
        yield kept
