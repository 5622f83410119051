"""What the runtime needs from a collector, and what every collector receives from it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Generic, Protocol, TypeVar

from diskprobe.log import Logger
from diskprobe.metric import FieldValue, Metric
from diskprobe.roots import HostRoots
from diskprobe.state import StateStore


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


@dataclass(frozen=True)
class Clock:
    """The time sources a collector reads: monotonic for rates, wall for timestamps.
    Tests pass fakes; production takes the defaults."""

    monotonic: Callable[[], float] = time.monotonic
    wall_ns: Callable[[], int] = time.time_ns

    def wall(self) -> float:
        return self.wall_ns() / 1e9


@dataclass(frozen=True)
class CollectorContext:
    """What every collector receives from the runtime: where the host's trees are, where to
    log, where state survives restarts (None: in memory only) and what time it is."""

    roots: HostRoots = field(default_factory=HostRoots)
    log: Logger = field(default_factory=Logger)
    state: StateStore | None = None
    clock: Clock = field(default_factory=Clock)

    def state_store(self) -> StateStore:
        return self.state if self.state is not None else StateStore.in_memory(self.log)


class SectionConfig(Protocol):
    @property
    def interval(self) -> float | None: ...


ConfigT = TypeVar("ConfigT", bound=SectionConfig)


class BaseCollector(Generic[ConfigT]):
    """The part every collector shares: its config section, the context, no helpers to close."""

    # Set on each subclass. Not ClassVar: the Collector protocol reads them as attributes.
    name: str
    needs_prime: bool = True

    def __init__(self, config: ConfigT, context: CollectorContext) -> None:
        self.config = config
        self.interval: float | None = config.interval
        self._roots = context.roots
        self._log = context.log
        self._clock = context.clock

    def close(self) -> None:
        """Nothing to release by default; collectors with threads or children override it."""
