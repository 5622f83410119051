"""What block latency ([latency], off by default) adds to a host's series budget
(docs/fleet.md, The budget per host): a typical training node's latency points, made by the
plugin's own PointMaker from an hour of synthetic kernel counts, counted through diskprobe's
own serializers: InfluxDB series (measurement and tags), diskprobe's Prometheus format
(PrometheusSerializer: gauges, and the histogram diskprobe_latency_seconds with a
`_bucket` per bound and `_sum` and `_count`) and VictoriaMetrics fed line protocol (a series
per field), and line protocol bytes a day.

The node (assumptions, seeded): 4 NVMe devices, reads and writes on each and flushes on two (10
device-operations); each interval's latencies lognormal around an operation's median (read
150 us, write 40 us, flush 1.5 ms) with a tail; 14 process names submitting, a few of them on
each device-operation an interval; 24 cgroups (20 pods' containers, 4 services), those with
I/O on a device-operation varying each interval. The caps at the default config are printed
beside: max_devices 16 x 4 operations, 19 bounds + Inf, top_processes 5 and max_cgroups 20
per device-operation.

    .venv/bin/python tests/bench/fleet_sim_latency.py [--minutes 60] [--seed 1]
        [--buckets 100us,1ms,10ms,100ms,1s] [--top-processes 5] [--max-cgroups 20]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: shared helpers

from dashboard_latency import MS, RWBS, fine_bucket, trees
from diskprobe.collectors.latency_points import PointMaker
from diskprobe.config import LatencyConfig
from diskprobe.config.latency import OPS, bucket_bounds
from diskprobe.metric import Metric
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.serializers.prometheus import PrometheusSerializer
from diskprobe.sources.latency_parse import Dump

STEP_S, DAY_S = 10, 86_400
DEVICES = {f"nvme{i}n1": (259, i) for i in range(4)}
DEVICE_OPS = [(d, op) for d in DEVICES for op in ("read", "write")] + [
    ("nvme0n1", "flush"), ("nvme1n1", "flush")]
MEDIAN_MS = {"read": 0.15, "write": 0.04, "flush": 1.5}
SYSTEM = [("kubelet", 0), ("containerd", 0), ("jbd2/nvme0n1p2-8", 0), ("kworker/u64:1", 0),
          ("systemd-journal", 0), ("fluent-bit", 0), ("node_exporter", 65534), ("etcd", 0)]
DATA = [("pt_data_worker_", 0), ("python", 0), ("kworker/u64:3", 0), ("rsync", 0), ("du", 0),
        ("unpigz", 0)]
PODS = tuple(f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{i:08x}_7b4d_4e8a_"
             f"9c0f_1a2b3c4d5e6f.slice/cri-containerd-{i:012x}.scope" for i in range(20))
SERVICES = tuple(f"system.slice/{unit}.service"
                 for unit in ("containerd", "kubelet", "systemd-journald", "rsyslog"))
CGROUPS = PODS + SERVICES
Key = tuple[str, tuple[tuple[str, str], ...]]


def _who(rng: random.Random, device: str, op: str) -> tuple[list[tuple[str, int]], list[str]]:
    """The processes and cgroups submitting on a device-operation this interval: the OS disk
    the node's services (and the root cgroup, writeback), each data disk its pods (20 pods over
    3 disks, each reading in 60 % of the intervals, writing in 30 %)."""
    if device == "nvme0n1":
        return rng.sample(SYSTEM, rng.randint(2, 6)), [*SERVICES, ""]
    index = int(device[4]) - 1
    share = 0.6 if op == "read" else 0.3
    pods = [pod for i, pod in enumerate(PODS) if i % 3 == index and rng.random() < share]
    return rng.sample(DATA, rng.randint(2, 4)), pods + ([""] if op != "read" else [])


def interval_dump(rng: random.Random, ids: dict[str, int]) -> Dump:
    dump = Dump()
    for device, op in DEVICE_OPS:
        major, minor = DEVICES[device]
        dev, rwbs = major << 20 | minor, RWBS[op]
        requests = int(rng.lognormvariate(math.log(800), 0.8)) + 1
        submitters, groups = _who(rng, device, op)
        for _ in range(min(requests, 40)):  # the distribution in 40 draws, counts spread
            ns = max(2e3, rng.lognormvariate(math.log(MEDIAN_MS[op] * MS), 0.9))
            count = max(1, requests // 40)
            bucket = fine_bucket(ns)
            dump.hist[(dev, rwbs, bucket)] += count
            dump.counts[(dev, rwbs)] += count
            dump.sums[(dev, rwbs)] += int(ns * count)
            dump.maxes[(dev, rwbs)] = max(dump.maxes.get((dev, rwbs), 0), int(ns))
            comm, uid = rng.choice(submitters)
            dump.proc_counts[(uid, dev, rwbs, comm)] += count
            dump.proc_sums[(uid, dev, rwbs, comm)] += int(ns * count)
            if groups:
                dump.cgroups[(ids[rng.choice(groups)], dev, rwbs, bucket)] += count
    return dump


@dataclass
class Tally:
    """Series per measurement: distinct over the run, and the most in one interval."""

    influx: dict[str, set[Key]] = field(default_factory=dict)
    influx_most: Counter[str] = field(default_factory=Counter)
    vm: dict[str, set[Key]] = field(default_factory=dict)
    prometheus: dict[str, int] = field(default_factory=dict)  # the last page's
    prometheus_seen: set[str] = field(default_factory=set)  # every series line over the run
    bytes: Counter[str] = field(default_factory=Counter)
    intervals: int = 0

    def add(self, metrics: list[Metric], page: str) -> None:
        self.intervals += 1
        now: Counter[str] = Counter()
        for metric in metrics:
            self.bytes[metric.measurement] += len(InfluxSerializer().serialize([metric]))
            key = (metric.measurement, tuple(sorted(metric.tags.items())))
            self.influx.setdefault(metric.measurement, set()).add(key)
            now[metric.measurement] += 1
            for name in metric.fields:
                self.vm.setdefault(metric.measurement, set()).add((name, key[1]))
        for name, count in now.items():
            self.influx_most[name] = max(self.influx_most[name], count)
        lines = [line.rsplit(" ", 1)[0] for line in page.splitlines() if line[:1] != "#"]
        self.prometheus_seen.update(lines)
        self.prometheus = Counter(_family(line) for line in lines)


def _family(line: str) -> str:
    """The measurement a series line of diskprobe's Prometheus format comes from."""
    name = line.split("{", 1)[0]
    if name.startswith("diskprobe_latency_seconds_"):
        return "diskprobe_latency_bucket"  # the histogram: _bucket, _sum, _count
    return next(m for m in ("diskprobe_process_latency", "diskprobe_cgroup_latency",
                            "diskprobe_latency") if name.startswith(m + "_"))


def run(minutes: int, seed: int, config: LatencyConfig | None = None) -> Tally:
    rng, config, tally = random.Random(seed), config or LatencyConfig(), Tally()
    clock = [0.0]
    prometheus = PrometheusSerializer(clock=lambda: clock[0])
    with tempfile.TemporaryDirectory() as tmp:
        names, cgroups, ids = trees(Path(tmp), DEVICES, CGROUPS)
        maker = PointMaker(config, names, cgroups, [b * 1e9 for b in bucket_bounds(config)])
        for step in range(minutes * 60 // STEP_S):
            clock[0] = step * STEP_S
            metrics = maker.make(interval_dump(rng, ids), step * STEP_S * 10**9)
            for metric in metrics:
                metric.tags["host"] = "node-1"
            tally.add(metrics, prometheus.serialize(metrics))
    return tally


def caps() -> str:
    config = LatencyConfig()
    device_ops = config.max_devices * len(OPS)
    bounds = len(config.buckets) + 1
    return (f"caps at the default config: {config.max_devices} devices x {len(OPS)} operations "
            f"= {device_ops} device-operations; diskprobe_latency <= {device_ops} series, "
            f"_bucket <= {device_ops * bounds} ({bounds} bounds with +Inf), process_latency <= "
            f"{config.top_processes} per device-operation an interval "
            f"({device_ops * config.top_processes}), cgroup_latency <= {config.max_cgroups} "
            f"({device_ops * config.max_cgroups}); Prometheus: the histogram "
            f"<= {device_ops * (bounds + 2)} series, 7 gauges per device-operation")


def report(tally: Tally, minutes: int) -> None:
    print(f"typical node: {len(DEVICES)} NVMe devices, {len(DEVICE_OPS)} device-operations, "
          f"{minutes} simulated minutes at {STEP_S} s")
    print("measurement | InfluxDB series: distinct, most in an interval | Prometheus series "
          "(diskprobe's format, last page) | VictoriaMetrics series (line protocol) | MB a day")
    for name in sorted(tally.influx):
        print(f"{name} | {len(tally.influx[name])}, {tally.influx_most[name]} | "
              f"{tally.prometheus[name]} | {len(tally.vm[name])} | {_mb_day(tally, name):.1f}")
    print(f"total | {sum(len(s) for s in tally.influx.values())}, "
          f"{sum(tally.influx_most.values())} | {sum(tally.prometheus.values())} | "
          f"{sum(len(s) for s in tally.vm.values())} | {_mb_day(tally):.1f}")
    print(f"Prometheus series lines over the run: {len(tally.prometheus_seen)} distinct")
    print(caps())


def _mb_day(tally: Tally, name: str = "") -> float:
    total = tally.bytes[name] if name else sum(tally.bytes.values())
    return total / tally.intervals * DAY_S / STEP_S / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--buckets", help='[latency] buckets, e.g. "100us,1ms,10ms,100ms,1s"')
    parser.add_argument("--top-processes", type=int, default=LatencyConfig().top_processes)
    parser.add_argument("--max-cgroups", type=int, default=LatencyConfig().max_cgroups)
    args = parser.parse_args(argv)
    config = LatencyConfig(top_processes=args.top_processes, max_cgroups=args.max_cgroups)
    if args.buckets:
        config.buckets = args.buckets.split(",")
    report(run(args.minutes, args.seed, config), args.minutes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
