"""diskprobe_agent,collector=output: what the direct output dropped and still holds."""

from __future__ import annotations

from typing import Mapping, Protocol

from diskprobe.collectors.base import Collection
from diskprobe.metric import FieldValue


class DeliveryStats(Protocol):
    """What an output that delivers on its own (InfluxDB) tells about its backlog."""

    def stats(self) -> Mapping[str, FieldValue]: ...

    def pending_batches(self) -> int: ...


class OutputStatsCollector:
    """A diskprobe_agent,collector=output point per batch: dropped and spooled points."""

    name = "output"
    interval: float | None = None
    needs_prime = False

    def __init__(self, output: DeliveryStats) -> None:
        self._output = output

    def collect(self) -> Collection:
        return Collection(
            items=self._output.pending_batches(), agent_fields=dict(self._output.stats())
        )

    def close(self) -> None:
        """The output owns what it delivers; nothing to release here."""
