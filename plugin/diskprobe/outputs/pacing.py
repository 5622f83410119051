"""When the InfluxDB sender sends: jitter on the send schedule and a bounded drain after an outage.

Every host of a fleet collects on aligned intervals, so every host's batch is ready at the same
second (:00, :10, ...): sent at once, 10,000 hosts reach the database within a few
milliseconds of each other, every interval. Each send therefore first waits a random part of
`send_jitter` (Telegraf's flush_jitter); collection itself stays aligned.

After an outage each spool holds the outage's batches. Sent as fast as the server answers,
every host that comes back at once multiplies the database's load by the outage's length
over the time a request takes. While a backlog remains, the sender drains it at
`drain_speedup` times the host's own write rate (LiveRate: the last batches' bytes over the
time they took), so that the whole fleet catching up writes at most that many times its usual
load, whatever its size, and an outage of T drains in about T / drain_speedup. A request
carries a second's worth of that rate, and the next waits its size over the rate, drawn
between half and one and a half times that, so that hosts which came back together drift
apart instead of staying in step. Until two batches have told the host's rate (at start with
a spool left over), MIN_DRAIN_RATE applies.

But for LiveRate, these are pure functions of their inputs and a `draw(low, high)`
(random.uniform, or a seeded Random's: tests/bench/fleet_drain_model.py computes a
10,000-host fleet with them).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable

Draw = Callable[[float, float], float]
DRAIN_JITTER = (0.5, 1.5)  # the pause's spread around size / rate: the mean is kept
MIN_DRAIN_RATE = 4096.0  # bytes per second while the host's own rate is not known yet
LIVE_WINDOW = 10  # batches the host's own rate is averaged over


class LiveRate:
    """The host's own write rate: the bytes of its last LIVE_WINDOW batches over the time
    from the first of them to the last (written by the loop, read by the sender thread)."""

    def __init__(self) -> None:
        self._batches: deque[tuple[float, int]] = deque(maxlen=LIVE_WINDOW)
        self._lock = threading.Lock()

    def add(self, now: float, size: int) -> None:
        with self._lock:
            self._batches.append((now, size))

    def bytes_per_second(self) -> float:
        """0.0 until two batches were written (or if they came in the same instant)."""
        with self._lock:
            if len(self._batches) < 2:
                return 0.0
            (first, _), (last, _) = self._batches[0], self._batches[-1]
            after_first = sum(size for _, size in list(self._batches)[1:])
        return after_first / (last - first) if last > first else 0.0


def drain_rate(live_bytes_per_second: float, speedup: float) -> float:
    """Bytes per second a backlog drains at; 0.0 (no limit) if speedup is 0."""
    if speedup <= 0:
        return 0.0
    return max(MIN_DRAIN_RATE, speedup * live_bytes_per_second)


def send_delay(send_jitter: float, draw: Draw) -> float:
    """Seconds to wait before sending what the last collection spooled."""
    return draw(0.0, send_jitter) if send_jitter > 0 else 0.0


def request_bytes(rate: float, request_max: int) -> int:
    """The most one request carries: a second's worth of the drain rate (0: no limit)."""
    return request_max if rate <= 0 else min(request_max, max(1, int(rate)))


def drain_pause(sent_bytes: int, rate: float, draw: Draw) -> float:
    """Seconds to wait after a request of `sent_bytes` while a backlog remains."""
    if rate <= 0:
        return 0.0
    return sent_bytes / rate * draw(*DRAIN_JITTER)
