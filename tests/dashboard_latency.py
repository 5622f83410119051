"""diskprobe_latency, its buckets, per process and per cgroup, for the dashboards' tests
(tests/test_dashboards_latency.py and test_dashboards.py, beside dashboard_data.py's training
host) and the Prometheus rules' tests, made the way the agent makes them: each 10 s interval's
kernel counts are a Dump (sources/latency_parse.py: what bpftrace's maps hold), and the
plugin's own PointMaker (collectors/latency_points.py) turns them into points: percentiles
from the fine histogram, the default exported buckets' counts and totals, the top processes
and cgroups. Device names come from a sysfs tree of dev/block links, cgroup paths from a tree
of directories (their inode numbers are the cgroup ids), both in a temporary directory, read
by the plugin's DeviceNames and CgroupIds. Only the kernel's counts are made up (CASES).

The training host's devices over 20 minutes, against the alert (per operation: read 100 ms,
write 250 ms, flush 500 ms; intervals with at least 100 requests; busy in 10 of 15 minutes):
- nvme1n1 reads: 400 an interval with a p99 near 300 ms, every third interval only 20 fast
  ones (left out): fires;
- nvme1n1 flushes: 150 with a p99 near 800 ms: fires;
- sdb flushes at 300 ms: above the read limit, under the flush one: no;
- sdb reads near 600 ms but 60 an interval: too few requests, no;
- nvme0n1 writes fast, then near 400 ms for the last 6 minutes: not long enough, no;
- sdb writes idle, then 300 near 600 ms for the last 6 minutes: busy too few minutes, no;
- nvme0n1 reads fast (p99 near 2 ms): no; nvme0n1 discards at 2 s: discards are not alerted.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dashboard_data import GPU, SEC, Row
from diskprobe.collectors.latency_points import PointMaker
from diskprobe.config import LatencyConfig
from diskprobe.config.latency import bucket_bounds
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.sources.cgroup_ids import CgroupIds
from diskprobe.sources.cgroups import DeviceNames
from diskprobe.sources.latency_parse import Dump

STEP_S = 10  # the agent's default interval
SPAN_S = 1200  # 20 minutes
MS = 1e6  # ns
DEVICES = {"nvme0n1": (259, 0), "nvme1n1": (259, 1), "sdb": (8, 16)}
RWBS = {"read": "R", "write": "WS", "flush": "F", "discard": "D"}
POD = ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f2a9c1e_7b4d_4e8a_"
       "9c0f_1a2b3c4d5e6f.slice/cri-containerd-8d1e5f2a3b4c.scope")
SERVICE = "system.slice/postgresql.service"
# Who submits each device's requests: (process, uid, cgroup path, share of the requests).
SUBMITTERS = {"nvme1n1": (("pt_data_worker_", 0, POD, 0.75), ("python", 0, POD, 0.25)),
              "nvme0n1": (("python", 0, POD, 0.6), ("kworker/u16:2", 0, "", 0.4)),
              "sdb": (("postgres", 65534, SERVICE, 0.9), ("jbd2/sdb1-8", 0, "", 0.1))}


@dataclass(frozen=True)
class Phase:
    """From `since_s` seconds ago (the newest phase first wins): `requests` an interval, most at
    `fast_ms`, 3 % at `slow_ms` (the p99 falls among them); `quiet_every`: every Nth interval
    only 20 fast requests instead."""

    since_s: int
    requests: int
    fast_ms: float
    slow_ms: float
    quiet_every: int = 0


FIRES_READ, FIRES_FLUSH = ("nvme1n1", "read"), ("nvme1n1", "flush")
UNDER_FLUSH, FEW, SHORT = ("sdb", "flush"), ("sdb", "read"), ("nvme0n1", "write")
IDLE_THEN_HIGH, LOW, DISCARDS = ("sdb", "write"), ("nvme0n1", "read"), ("nvme0n1", "discard")
CASES: dict[tuple[str, str], tuple[Phase, ...]] = {
    FIRES_READ: (Phase(SPAN_S, 400, 2.0, 300.0, quiet_every=3),),
    FIRES_FLUSH: (Phase(SPAN_S, 150, 20.0, 800.0),),
    UNDER_FLUSH: (Phase(SPAN_S, 200, 15.0, 300.0),),
    FEW: (Phase(SPAN_S, 60, 8.0, 600.0),),
    SHORT: (Phase(360, 1000, 0.5, 400.0), Phase(SPAN_S, 1000, 0.3, 1.0)),
    IDLE_THEN_HIGH: (Phase(360, 300, 12.0, 600.0),),
    LOW: (Phase(SPAN_S, 2000, 0.2, 2.0),),
    DISCARDS: (Phase(SPAN_S, 500, 50.0, 2000.0),),
}
FIRING = {"read": {FIRES_READ}, "write": set(), "flush": {FIRES_FLUSH}}


def fine_bucket(ns: float) -> int:
    """The kernel histogram's bucket of a latency (compute/latency_hist.py's layout: four
    buckets per doubling)."""
    exponent = int(math.log2(ns))
    return 4 * exponent + min(3, int((ns / 2**exponent - 1) * 4))


def _phase(phases: tuple[Phase, ...], age_s: int) -> Phase | None:
    return next((p for p in phases if age_s < p.since_s), None)


def _requests(phase: Phase, step: int) -> list[tuple[float, int]]:
    """(latency ns, requests) of one interval."""
    if phase.quiet_every and step % phase.quiet_every == 0:
        return [(phase.fast_ms * MS, 20)]
    slow = math.ceil(phase.requests * 0.03)
    return [(phase.fast_ms * MS, phase.requests - slow), (phase.slow_ms * MS, slow)]


def interval_dump(step: int, age_s: int, cgroup_ids: dict[str, int]) -> Dump:
    """What the kernel counted in one interval `age_s` seconds before the newest."""
    dump = Dump()
    for (device, op), phases in CASES.items():
        phase = _phase(phases, age_s)
        if phase is None:
            continue
        major, minor = DEVICES[device]
        dev, rwbs = major << 20 | minor, RWBS[op]
        for ns, count in _requests(phase, step):
            dump.hist[(dev, rwbs, fine_bucket(ns))] += count
            dump.counts[(dev, rwbs)] += count
            dump.sums[(dev, rwbs)] += int(ns * count)
            dump.maxes[(dev, rwbs)] = max(dump.maxes.get((dev, rwbs), 0), int(ns))
            for comm, uid, cgroup, share in SUBMITTERS[device]:
                mine = round(count * share)
                dump.proc_counts[(uid, dev, rwbs, comm)] += mine
                dump.proc_sums[(uid, dev, rwbs, comm)] += int(ns * mine)
                dump.cgroups[(cgroup_ids[cgroup], dev, rwbs, fine_bucket(ns))] += mine
    return dump


def trees(root: Path, devices: dict[str, tuple[int, int]], paths: tuple[str, ...]
          ) -> tuple[DeviceNames, CgroupIds, dict[str, int]]:  # fmt: skip
    """A sysfs of dev/block links and a cgroup v2 hierarchy under `root`, read by the plugin's
    DeviceNames and CgroupIds; cgroup path ("" the root) -> its id."""
    block = root / "sys" / "dev" / "block"
    block.mkdir(parents=True)
    for name, (major, minor) in devices.items():
        os.symlink(f"../../devices/virtual/block/{name}", block / f"{major}:{minor}")
    cgroups = root / "cgroup"
    cgroups.mkdir()
    ids = {"": os.stat(cgroups).st_ino}  # the root: the kernel's writeback threads
    for path in paths:
        (cgroups / path).mkdir(parents=True)
        ids[path] = os.stat(cgroups / path).st_ino
    return DeviceNames(HostRoots(sys=str(root / "sys"))), CgroupIds(str(cgroups)), ids


def latency_metrics(now_ns: int = 0, span_s: int = SPAN_S) -> list[Metric]:
    """Every interval's points, oldest first, the newest at `now_ns`, host-less as the plugin
    writes them."""
    config = LatencyConfig()
    out: list[Metric] = []
    with tempfile.TemporaryDirectory() as tmp:
        names, cgroups, ids = trees(Path(tmp), DEVICES, (POD, SERVICE))
        maker = PointMaker(config, names, cgroups, [b * 1e9 for b in bucket_bounds(config)])
        for step, age_s in enumerate(range(span_s - STEP_S, -1, -STEP_S)):
            out += maker.make(interval_dump(step, age_s, ids), now_ns - age_s * SEC)
    return out


def synthetic_latency() -> list[Row]:
    """The training host's latency points, offsets relative to the write."""
    return [Row(m.measurement, {**m.tags, "host": GPU}, dict(m.fields), m.time_ns,
                "SYNTHETIC: kernel counts of latency_cases, points by diskprobe's PointMaker")
            for m in latency_metrics()]


def requests_of(rows: list[Row]) -> Counter[int]:
    """diskprobe_latency's requests per point time (offset), every device and operation."""
    found: Counter[int] = Counter()
    for row in rows:
        if row.measurement == "diskprobe_latency":
            found[row.offset_ns] += int(row.fields["requests"])
    return found
