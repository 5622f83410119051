"""What a fleet's diskprobe senders offer the database, computed with the sender's own pacing.

The sender (plugin/diskprobe/outputs/influxdb.py) waits send_delay() after a collection, then
sends requests of request_bytes() and pauses drain_pause() after each while a backlog remains
(plugin/diskprobe/outputs/pacing.py). This replays that schedule in virtual time for N hosts,
with the same functions and a seeded draw, and counts the bytes offered in each second and the
requests in each 100 ms. It assumes the database answers every request at once (it measures
what is offered, not what a saturated server manages); bench_fleet_drain.py compares it with
real senders writing to a real VictoriaMetrics.

Size: the two scenarios (an outage's backlog, the aligned steady state) share the host loop.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

from diskprobe.outputs.influxdb import REQUEST_MAX_BYTES
from diskprobe.outputs.pacing import drain_pause, drain_rate, request_bytes, send_delay


@dataclass(frozen=True)
class Offered:
    """What the fleet offered: bytes per second (index = second) and requests per 100 ms."""

    bytes_per_second: list[int]
    requests_per_tenth: list[int]

    @property
    def peak_bytes_per_second(self) -> int:
        return max(self.bytes_per_second, default=0)

    @property
    def peak_requests_per_second(self) -> int:
        tenths = self.requests_per_tenth
        return max((sum(tenths[i : i + 10]) for i in range(max(1, len(tenths) - 9))), default=0)

    @property
    def seconds(self) -> int:
        """Seconds until the last byte was offered."""
        return len(self.bytes_per_second)


def _count(offered: dict[int, int], key: int, amount: int) -> None:
    offered[key] = offered.get(key, 0) + amount


def _as_list(counts: dict[int, int]) -> list[int]:
    return [counts.get(k, 0) for k in range(max(counts, default=-1) + 1)]


def drain(hosts: int, backlog_bytes: int, batch_bytes: int, interval: float, speedup: float,
          send_jitter: float, retry_spread: float, seed: int = 28) -> Offered:  # fmt: skip
    """Every host, writing a batch of `batch_bytes` every `interval`, holds `backlog_bytes`
    when the database returns; each first tries at a uniform moment of `retry_spread` seconds
    (its backoff's phase: 0 is every host at once), after its send jitter. Counted: the
    backlog only (the live batches add hosts * batch_bytes / interval)."""
    draw = random.Random(seed).uniform
    rate = drain_rate(batch_bytes / interval, speedup)
    per_request = max(batch_bytes, request_bytes(rate, REQUEST_MAX_BYTES) // batch_bytes
                      * batch_bytes)  # fmt: skip  # whole batches, at least one
    queue = [(draw(0.0, retry_spread) + send_delay(send_jitter, draw), host, backlog_bytes)
             for host in range(hosts)]  # fmt: skip
    heapq.heapify(queue)
    by_second: dict[int, int] = {}
    by_tenth: dict[int, int] = {}
    while queue:
        when, host, left = heapq.heappop(queue)
        sent = min(per_request, left)
        _count(by_second, int(when), sent)
        _count(by_tenth, int(when * 10), 1)
        if left > sent:
            heapq.heappush(queue, (when + drain_pause(sent, rate, draw), host, left - sent))
    return Offered(_as_list(by_second), _as_list(by_tenth))


def steady(hosts: int, batch_bytes: int, interval: float, send_jitter: float,
           intervals: int = 6, seed: int = 28) -> Offered:  # fmt: skip
    """Healthy: every host's collection ends at the same instant of each interval (aligned
    collection) and its batch is sent after the send jitter."""
    draw = random.Random(seed).uniform
    by_second: dict[int, int] = {}
    by_tenth: dict[int, int] = {}
    for number in range(intervals):
        for _host in range(hosts):
            when = number * interval + send_delay(send_jitter, draw)
            _count(by_second, int(when), batch_bytes)
            _count(by_tenth, int(when * 10), 1)
    return Offered(_as_list(by_second), _as_list(by_tenth))
