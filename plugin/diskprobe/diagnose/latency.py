"""Per-request latency over a `diagnose` watch: as root with bpftrace installed, the [latency]
collector's kernel side (sources/bpf/latency.bt) runs for the watch's seconds, and the report
gives the distribution on the device the verdict names (`device_latency`), or a note why not.
"""

from __future__ import annotations

import os
import shutil
import threading
from typing import Any

from diskprobe.collectors.latency import SCRIPT
from diskprobe.compute.latency_hist import op_of, percentile
from diskprobe.sources.latency_child import LatencyChild
from diskprobe.sources.latency_parse import Dump
from diskprobe.sources.tracefs import ensure_tracefs

MS = 1e6
QUANTILES = (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99), ("p999_ms", 0.999))


class WatchLatency:
    """bpftrace beside the watch; `note` says why there is none."""

    def __init__(self) -> None:
        self.note: str | None = None
        self._dump, self._lock = Dump(), threading.Lock()
        self._child: LatencyChild | None = None
        bpftrace = shutil.which("bpftrace")
        if os.geteuid() != 0:
            self.note = "no per-request latency: bpftrace runs only as root"
        elif bpftrace is None:
            self.note = "no per-request latency: bpftrace is not installed"
        else:
            self.note = ensure_tracefs()
            if self.note is None:
                self._child = LatencyChild([bpftrace, "-f", "json", str(SCRIPT)],
                                           dict(os.environ), self._add)  # fmt: skip
                self._child.start()

    def _add(self, dump: Dump) -> None:
        with self._lock:
            self._dump.add(dump)

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop()
            fatal = self._child.state.fatal
            if fatal:
                self.note = f"no per-request latency: {fatal}"

    def on(self, devno: tuple[int, int], direction: str) -> dict[str, Any] | None:
        """The distribution of the device's requests in `direction` (read: reads, write:
        writes and flushes) over the watch; None without one."""
        dev = devno[0] << 20 | devno[1]
        ops = ("read",) if direction == "read" else ("write", "flush")
        with self._lock:
            buckets = {bucket: count for (d, rwbs, bucket), count in self._dump.hist.items()
                       if d == dev and op_of(rwbs) in ops}  # fmt: skip
            longest = max((v for (d, rwbs), v in self._dump.maxes.items()
                           if d == dev and op_of(rwbs) in ops), default=0)  # fmt: skip
        if not buckets:
            return None
        found: dict[str, Any] = {"requests": sum(buckets.values()), "max_ms": longest / MS}
        for name, fraction in QUANTILES:
            found[name] = round(min(percentile(buckets, fraction) or 0.0, longest) / MS, 3)
        return found
