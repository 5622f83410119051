"""What the runtime needs from a collector."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from diskprobe.metric import FieldValue, Metric


@dataclass
class Collection:
    """One collector's output for one batch; `items` counts devices/mounts seen."""

    metrics: list[Metric] = field(default_factory=list)
    items: int = 0
    errors: int = 0
    agent_fields: dict[str, FieldValue] = field(default_factory=dict)  # extra diskprobe_agent


class Collector(Protocol):
    name: str
    interval: float | None  # seconds; None: the agent-wide interval
    needs_prime: bool  # rates need a first sample before the first batch

    def collect(self) -> Collection: ...

    def close(self) -> None:
        """Release helpers (threads, processes) at exit; must not block."""
