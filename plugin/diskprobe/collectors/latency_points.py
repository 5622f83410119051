"""A window of the kernel's latency dumps (sources/latency_parse.Dump) into the points of
diskprobe_latency, diskprobe_latency_bucket, diskprobe_process_latency and
diskprobe_cgroup_latency. It keeps what outlives a window: each device's bucket totals and
summed latency since start (the Prometheus histogram's), for the devices of the last
MAX_REMEMBERED device-operations seen."""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from typing import Callable, Hashable, Mapping, Sequence, TypeVar

from diskprobe.compute.cgroup_tags import cgroup_tags
from diskprobe.compute.latency_hist import bucket_bounds, coarse_counts, op_of, percentile
from diskprobe.config import LatencyConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.latency import CGROUP_LATENCY, LATENCY, LATENCY_BUCKET, PROCESS_LATENCY
from diskprobe.sources.cgroup_ids import CgroupIds
from diskprobe.sources.cgroups import DeviceNames
from diskprobe.sources.latency_parse import Dump
from diskprobe.sources.users import user_name

K = TypeVar("K", bound=tuple)  # type: ignore[type-arg]
MS = 1e6  # ns per ms
DevOp = tuple[int, str]  # (dev_t, op)
MAX_REMEMBERED = 1024  # device-operations whose totals are kept (loop devices come and go)
QUANTILES = (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99), ("p999_ms", 0.999))


def le_text(seconds: float) -> str:
    """A bucket bound as Prometheus writes it: "0.00001", "0.0025", "1", "+Inf"."""
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return text or "0"


class PointMaker:
    def __init__(self, config: LatencyConfig, names: DeviceNames, cgroups: CgroupIds | None,
                 bounds_ns: Sequence[float]) -> None:  # fmt: skip
        self.config, self.names, self.cgroups = config, names, cgroups
        self._bounds = list(bounds_ns)
        self._le = [le_text(bound / 1e9) for bound in self._bounds] + ["+Inf"]
        self._totals: OrderedDict[DevOp, tuple[list[int], float]] = OrderedDict()

    def make(self, window: Dump, time_ns: int) -> list[Metric]:
        hist = _by_op(window.hist, self.config.ops)
        requests = Counter({key: sum(buckets.values()) for key, buckets in hist.items()})
        devices = {dev for dev, _ in requests if self.device(dev) is not None}
        busiest = sorted(devices, key=lambda dev: -sum(n for (d, _), n in requests.items()
                                                          if d == dev))  # fmt: skip
        kept = set(busiest[: self.config.max_devices])
        sums, counts = _fold(window.sums, self.config.ops), _fold(window.counts, self.config.ops)
        maxes = _fold(window.maxes, self.config.ops, max)
        metrics: list[Metric] = []
        for key in sorted(key for key in hist if key[0] in kept):
            tags = {"device": self.device(key[0]) or "", "op": key[1]}
            metrics += self._device(key, tags, hist[key], sums[key], counts[key], maxes[key],
                                    time_ns)  # fmt: skip
        metrics += self._processes(window, kept, time_ns)
        metrics += self._cgroups(window, kept, time_ns)
        return metrics

    def device(self, dev: int) -> str | None:
        """The kernel's name of dev_t `dev`; None for a device gone before it was ever named
        (sysfs has no entry: DeviceNames then answers "major:minor", no kernel name has ":")."""
        name = self.names.name((dev >> 20, dev & 0xFFFFF))
        return None if ":" in name else name

    def _device(self, key: DevOp, tags: dict[str, str], buckets: Mapping[int, int], sum_ns: int,
                count: int, max_ns: int, time_ns: int) -> list[Metric]:  # fmt: skip
        requests = sum(buckets.values())
        fields: dict[str, FieldValue] = {"requests": requests,
                                         "mean_ms": sum_ns / count / MS if count else 0.0}
        for name, fraction in QUANTILES:  # inside the top bucket: not past the exact max
            fields[name] = min(percentile(buckets, fraction) or 0.0, max_ns or math.inf) / MS
        fields["max_ms"] = max_ns / MS
        interval = coarse_counts(buckets, self._bounds)
        totals, summed = self._totals.pop(key, ([0] * len(interval), 0.0))
        totals = [total + add for total, add in zip(totals, interval)]
        summed += sum_ns / 1e9
        self._totals[key] = (totals, summed)
        while len(self._totals) > MAX_REMEMBERED:
            self._totals.popitem(last=False)
        metrics = [Metric(LATENCY.name, tags, fields, time_ns)]
        # From the lowest bucket with requests in the interval up: the buckets whose total
        # (cumulative over le) moved; the others' last points still hold. And the bucket just
        # below, even empty: histogram_quantile() interpolates from its bound, not from 0.
        lowest = next((i for i, count_here in enumerate(interval) if count_here), len(interval))
        lowest = max(0, lowest - 1)
        cumulative = sum(totals[:lowest])
        for le, count_here, total in list(zip(self._le, interval, totals))[lowest:]:
            cumulative += total
            point: dict[str, FieldValue] = {"count": count_here, "total": cumulative}
            if le == "+Inf":
                point["sum_sec"] = summed
            metrics.append(Metric(LATENCY_BUCKET.name, {**tags, "le": le}, point, time_ns))
        return metrics

    def _processes(self, window: Dump, kept: set[int], time_ns: int) -> list[Metric]:
        sums, counts = Counter[tuple[str, int, int, str]](), Counter[tuple[str, int, int, str]]()
        for (uid, dev, rwbs, comm), total in window.proc_sums.items():
            op = op_of(rwbs)
            if op in self.config.ops and dev in kept:
                sums[(comm, uid, dev, op)] += total
                counts[(comm, uid, dev, op)] += window.proc_counts.get((uid, dev, rwbs, comm), 0)
        metrics = []
        for group in _top(sums, lambda key: (key[2], key[3]), self.config.top_processes):
            comm, uid, dev, op = group
            count = counts[group]
            fields: dict[str, FieldValue] = {"requests": count, "wait_sec": sums[group] / 1e9,
                                             "mean_ms": sums[group] / count / MS if count else 0.0}
            tags = {"process": comm, "user": user_name(uid), "device": self.device(dev) or "",
                    "op": op}
            metrics.append(Metric(PROCESS_LATENCY.name, tags, fields, time_ns))
        return metrics

    def _cgroups(self, window: Dump, kept: set[int], time_ns: int) -> list[Metric]:
        if self.cgroups is None:
            return []
        hists: dict[tuple[int, int, str], Counter[int]] = {}
        for (cgid, dev, rwbs, bucket), count in window.cgroups.items():
            op = op_of(rwbs)
            if op in self.config.ops and dev in kept:
                hists.setdefault((cgid, dev, op), Counter())[bucket] += count
        waits = {key: sum(sum(bucket_bounds(b)) / 2 * n for b, n in buckets.items())
                 for key, buckets in hists.items()}  # fmt: skip
        metrics = []
        for key in _top(waits, lambda key: (key[1], key[2]), self.config.max_cgroups):
            path = self.cgroups.path(key[0])
            if path is None:
                continue  # gone before it could be named
            buckets = hists[key]
            fields: dict[str, FieldValue] = {
                "requests": sum(buckets.values()), "wait_sec": waits[key] / 1e9,
                "p50_ms": (percentile(buckets, 0.5) or 0.0) / MS,
                "p99_ms": (percentile(buckets, 0.99) or 0.0) / MS,
                "max_ms": bucket_bounds(max(buckets))[1] / MS}  # fmt: skip
            tags = {**cgroup_tags(path), "device": self.device(key[1]) or "", "op": key[2]}
            metrics.append(Metric(CGROUP_LATENCY.name, tags, fields, time_ns))
        return metrics


def _by_op(hist: Mapping[tuple[int, str, int], int], ops: Sequence[str]
           ) -> dict[DevOp, Counter[int]]:  # fmt: skip
    found: dict[DevOp, Counter[int]] = {}
    for (dev, rwbs, bucket), count in hist.items():
        op = op_of(rwbs)
        if op is not None and op in ops:
            found.setdefault((dev, op), Counter())[bucket] += count
    return found


def _fold(values: Mapping[tuple[int, str], int], ops: Sequence[str],
          combine: Callable[[tuple[int, int]], int] = sum) -> Counter[DevOp]:  # fmt: skip
    found: Counter[DevOp] = Counter()
    for (dev, rwbs), value in values.items():
        op = op_of(rwbs)
        if op is not None and op in ops:
            found[(dev, op)] = combine((found[(dev, op)], value))
    return found


def _top(weights: Mapping[K, float], group: Callable[[K], Hashable], limit: int) -> list[K]:
    """The `limit` heaviest keys of each group (group(key)), heaviest first."""
    chosen: Counter[Hashable] = Counter()
    keys = []
    for key in sorted(weights, key=lambda key: -weights[key]):
        if chosen[group(key)] < limit:
            chosen[group(key)] += 1
            keys.append(key)
    return keys
