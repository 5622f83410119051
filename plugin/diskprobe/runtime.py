"""The loop: decides when to gather, runs the due collectors, serializes and writes batches."""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence, TextIO

from diskprobe import __version__
from diskprobe.collectors.base import Collection, Collector
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.outputs import Output, OutputInterrupted
from diskprobe.schema.agent import AGENT
from diskprobe.serializers import Serializer
from diskprobe.state import StateStore

AGENT_MEASUREMENT = AGENT.name
GATHER, STOP, SAVE = "gather", "stop", "save"


class Events:
    """The loop's inbox: GATHER (a stdin line), STOP, SAVE (save the state now).

    put() is called from signal handlers, which run in the main thread between any two
    bytecodes, possibly while the main thread is inside get(): hence SimpleQueue, whose put
    is reentrant (queue.Queue's lock is not), and plain attributes rather than an Event.
    `stopping` lets a blocked write see a stop without taking anything from the queue.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.stopping = False
        self.why: dict[str, str] = {}  # event -> what asked for it last (a signal's name)

    def put(self, event: str, why: str = "") -> None:
        if why:
            self.why[event] = why
        if event == STOP:
            self.stopping = True
        self._queue.put(event)

    def get(self, timeout: float | None = None) -> str:
        """The next event; queue.Empty once `timeout` seconds passed without one."""
        return self._queue.get(timeout=timeout)

    def get_nowait(self) -> str:
        return self._queue.get_nowait()


@dataclass
class _Scheduled:
    collector: Collector
    interval: float
    next_due: float = 0.0


def next_aligned(now: float, interval: float) -> float:
    """The next wall-clock multiple of `interval` strictly after `now` (Telegraf round_interval)."""
    return (math.floor(now / interval) + 1) * interval


class Runtime:
    """Owns the collectors, the serializer and the output; one batch per tick or stdin line."""

    def __init__(
        self,
        collectors: Sequence[Collector],
        serializer: Serializer,
        output: Output,
        log: Logger,
        interval: float,
        state: StateStore | None = None,
        wall: Callable[[], float] = time.time,
        events: Events | None = None,
    ) -> None:
        self._scheduled = [_Scheduled(c, c.interval or interval) for c in collectors]
        self._serializer = serializer
        self._output = output
        self._log = log
        # Tick at the shortest collector interval; longer ones run when due.
        self.tick = min((item.interval for item in self._scheduled), default=interval)
        self._wall = wall
        self._state = state
        self.events = events if events is not None else Events()

    def prime(self) -> None:
        """Take a first sample where rates need one, so the first batch already has them."""
        for item in self._scheduled:
            if item.collector.needs_prime:
                self._run_collector(item.collector)

    def _run_collector(self, collector: Collector) -> tuple[Collection, float]:
        started = time.perf_counter()
        try:
            collection = collector.collect()
        except Exception as error:  # one collector's failure must not stop the others
            self._log.error(f"collector {collector.name}: {type(error).__name__}: {error}")
            collection = Collection(errors=1)
        return collection, (time.perf_counter() - started) * 1000.0

    def gather(self, due_only: bool = False) -> list[Metric]:
        """One batch: every (due) collector's metrics plus a diskprobe_agent point for each."""
        now = self._wall()
        metrics: list[Metric] = []
        for item in self._scheduled:
            if due_only and now + 0.001 < item.next_due:
                continue
            item.next_due = next_aligned(now, item.interval)
            collection, duration_ms = self._run_collector(item.collector)
            metrics += collection.metrics
            metrics.append(
                Metric(
                    AGENT_MEASUREMENT,
                    {"collector": item.collector.name, "version": __version__},
                    {
                        "duration_ms": duration_ms,
                        "errors": collection.errors,
                        "items": collection.items,
                        **collection.agent_fields,
                    },
                    time.time_ns(),
                )
            )
        return metrics

    def emit(self, metrics: list[Metric]) -> None:
        try:
            self._output.write(self._serializer.serialize(metrics))
        except OutputInterrupted as dropped:  # stopping while the reader was not reading
            self._log.warn(f"output: stopping with stdout blocked: {dropped}")
        if self._state is not None:
            self._state.save()

    def close(self) -> None:
        """At exit: release the collectors' helpers, persist the state."""
        for item in self._scheduled:
            try:
                item.collector.close()
            except Exception as error:  # exiting anyway: say so, don't mask the exit
                self._log.error(f"collector {item.collector.name}: close: {error}")
        if self._state is not None:
            self._state.save(force=True)

    def run_interval(self) -> None:
        """signal = "none": batches at wall-clock multiples of the interval until STOP."""
        # The first tick comes at least half an interval after prime(), so its rates
        # cover a real stretch of time rather than a few milliseconds.
        lead = self.tick / 2
        while True:
            wait = next_aligned(self._wall() + lead, self.tick) - self._wall()
            lead = 0.0
            if self._stop_requested(max(wait, 0.0)):
                return
            self.emit(self.gather(due_only=True))

    def _stop_requested(self, timeout: float) -> bool:
        """Wait up to `timeout` for STOP, serving SAVE meanwhile; the queue is looked at even
        when the time is already up (a batch longer than the interval, a tiny interval)."""
        deadline = time.monotonic() + timeout
        while not self.events.stopping:
            remaining = deadline - time.monotonic()
            try:
                event = self.events.get(remaining) if remaining > 0 else self.events.get_nowait()
            except queue.Empty:
                break
            self._serve(event)
        return self.events.stopping

    def run_stdin(self) -> None:
        """signal = "STDIN": one batch per line Telegraf writes, until STOP. Lines queued
        while a batch ran do not delay a stop: the flag is checked before each batch."""
        while not self.events.stopping:
            event = self.events.get()
            if event == GATHER and not self.events.stopping:
                self.emit(self.gather())
            else:
                self._serve(event)

    def _serve(self, event: str) -> None:
        if event == SAVE:
            self.save_now(self.events.why.get(SAVE, "request"))

    def save_now(self, why: str) -> None:
        """SIGUSR1/SIGUSR2: write the state file now (between batches, never inside one)."""
        path = self._state.path if self._state is not None else None
        if self._state is None or path is None:
            self._log.info(f"{why}: no state file to save (state is kept in memory)")
            return
        self._state.save(force=True)
        self._log.info(f"{why}: state saved to {path}")


def watch_stdin(stream: TextIO, events: Events) -> threading.Thread:
    """A daemon thread: GATHER for every line, STOP at EOF (Telegraf stops or reloads)."""

    def _read() -> None:
        try:
            for _line in stream:
                events.put(GATHER)
        except (OSError, ValueError):
            pass
        events.put(STOP)

    thread = threading.Thread(target=_read, name="stdin-watch", daemon=True)
    thread.start()
    return thread
