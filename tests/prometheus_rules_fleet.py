"""A day of a small fleet as diskprobe's own Metric points (the real schema, written as line
protocol by diskprobe's InfluxSerializer), at diskprobe's default intervals: io and the agent
every 10 s, SMART every 30 min. For the vmalert test in tests/test_prometheus_rules.py.

h1 lives all day with a failing drive (verdict 2, reallocated sectors 8 -> 16 at 10:00), a
healthy one, a fail-slow NVMe and one whose fail-slow cleared at 12:00. Drive MOVED is read
on h1 until 12:00 and on h2 from 12:30 (one power-on hour later). h3 is decommissioned at
12:00 with a failing drive S-DEAD. h2 lives all day. h1 runs three training jobs: resnet50
disk-bound all day, llama-pt disk-bound until 12:00 and compute-bound after, bert-ft
compute-bound; and its devices' block latency (LATENCY).
"""

from __future__ import annotations

from typing import Iterator

from diskprobe.metric import Metric

DAY, HOUR, NOON = 86_400, 3600, 43_200
IO_EVERY, SMART_EVERY = 10, 1800
SATA = {"model": "HDD-X", "protocol": "ata", "media": "hdd"}
NVME_MODEL = "NVME-Y"


def _ns(at: float) -> int:
    return int(at) * 1_000_000_000


def _smart(host: str, device: str, serial: str, at: int, start: int, **fields: float) -> Metric:
    hours = 1000 + (at - start) // HOUR
    return Metric("diskprobe_smart", {"host": host, "device": device, "serial": serial, **SATA},
                  {"power_on_hours": int(fields.pop("power_on_hours", hours)), **fields},
                  _ns(at))


def smart_points(start: int) -> Iterator[Metric]:
    """h1's drives from the day before (the growth alert compares with a day ago)."""
    for at in range(start - DAY, start):
        if at % SMART_EVERY == 0:
            yield _smart("h1", "sda", "S-FAIL", at, start - DAY, verdict_code=2,
                         reallocated_sectors=8, health_ok=False)
    for at in range(start, start + DAY + 1, SMART_EVERY):
        offset = at - start
        yield _smart("h1", "sda", "S-FAIL", at, start, verdict_code=2,
                     reallocated_sectors=8 if offset < 10 * HOUR else 16, health_ok=False)
        yield _smart("h1", "sdb", "S-OK", at, start, verdict_code=0, reallocated_sectors=0,
                     health_ok=True)
        if offset <= NOON:
            yield _smart("h1", "sdc", "MOVED", at, start, verdict_code=2, power_on_hours=500)
            yield _smart("h3", "sda", "S-DEAD", at, start, verdict_code=2, health_ok=False)
        if offset >= NOON + 1800:
            yield _smart("h2", "sdd", "MOVED", at, start, verdict_code=2, power_on_hours=501)


def io_points(start: int) -> Iterator[Metric]:
    """await_ms cycles 0..29 every 30 points: any 5-minute window holds one whole cycle."""
    for step, at in enumerate(range(start, start + DAY + 1, IO_EVERY)):
        offset = at - start
        for host in ("h1", "h2") if offset > NOON else ("h1", "h2", "h3"):
            yield Metric("diskprobe_agent", {"host": host, "collector": "io"},
                         {"duration_ms": 1.5, "items": 4}, _ns(at))
        for device, serial, slow in (("nvme0n1", "N-SLOW", True),
                                     ("nvme1n1", "N-CLEARED", offset < NOON)):
            yield Metric(
                "diskprobe_io",
                {"host": "h1", "device": device, "model": NVME_MODEL, "serial": serial},
                {"await_ms": float(step % 30), "util_percent": 40.0, "fail_slow": slow,
                 "slowdown_ratio": 3.0 if slow else 1.0},
                _ns(at),
            )


# h1's training jobs as the agent writes them (diskprobe_job, every 10 s): (job, pid, verdict
# before noon, after noon; schema.job.BOTTLENECK_CODES: disk 4, compute 2).
JOBS = (("resnet50", 101, "disk", "disk"), ("llama-pt", 102, "disk", "compute"),
        ("bert-ft", 103, "compute", "compute"))
CODES = {"disk": 4, "compute": 2}


def job_points(start: int) -> Iterator[Metric]:
    for at in range(start, start + DAY + 1, IO_EVERY):
        for job, pid, morning, afternoon in JOBS:
            verdict = morning if at - start < NOON else afternoon
            yield Metric("diskprobe_job", {"host": "h1", "job": job, "rank": "0",
                                           "job_pid": str(pid)},
                         {"bottleneck": verdict, "bottleneck_code": CODES[verdict]}, _ns(at))


# h1's block latency (diskprobe_latency, every 10 s): (device, op, and from-to seconds of the
# day with (requests, p99 ms), later spans winning; no span: idle, no point). sda's reads stay
# at 300 ms (fires all day), sdb's too on 50 requests (never), nvme0n1's writes are at 400 ms
# for 10 minutes only (never), sdc's reads until noon (fires at 06:00, not at 18:00), and
# nvme1n1 flushes from 17:54 only (not yet at 18:00).
LATENCY = (
    ("sda", "read", ((0, DAY, 500, 300.0),)),
    ("sdb", "read", ((0, DAY, 50, 600.0),)),
    ("nvme0n1", "write", ((0, DAY, 1000, 1.0), (6 * HOUR - 480, 6 * HOUR + 120, 1000, 400.0))),
    ("sdc", "read", ((0, NOON, 500, 300.0), (NOON + 10, DAY, 20, 2.0))),
    ("nvme1n1", "flush", ((18 * HOUR - 360, DAY, 200, 900.0),)),
)


def latency_points(start: int) -> Iterator[Metric]:
    for at in range(start, start + DAY + 1, IO_EVERY):
        for device, op, spans in LATENCY:
            now = [(n, p99) for begin, end, n, p99 in spans if begin <= at - start <= end]
            if now:
                requests, p99 = now[-1]
                yield Metric("diskprobe_latency", {"host": "h1", "device": device, "op": op},
                             {"requests": requests, "p99_ms": p99, "p50_ms": p99 / 100},
                             _ns(at))


def fleet_day(start: int) -> Iterator[Metric]:
    yield from smart_points(start)
    yield from io_points(start)
    yield from job_points(start)
    yield from latency_points(start)
