"""diskprobe_latency, its histogram, per process and per cgroup: each block request's latency
from the kernel, through one long-lived bpftrace child (sources/latency_child.py) running the
script diskprobe ships (sources/bpf/latency.bt).

The child hands over a dump every second; collect() takes what arrived since the last one
(never waiting on the child) and turns it into points: percentiles from the kernel's fine
histogram (compute/latency_hist.py), the exported buckets' counts of the interval and their
totals since start. A child that cannot run here leaves the collector off, said in one I!
line; one that dies is started again, counted in diskprobe_agent.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.collectors.latency_points import PointMaker
from diskprobe.config import LatencyConfig
from diskprobe.config.latency import bucket_bounds
from diskprobe.sources.cgroup_ids import CgroupIds, v2_root
from diskprobe.sources.cgroups import DeviceNames
from diskprobe.sources.latency_child import LatencyChild
from diskprobe.sources.latency_parse import DropCount, Dump
from diskprobe.sources.tracefs import ensure_tracefs

SCRIPT = Path(__file__).resolve().parent.parent / "sources" / "bpf" / "latency.bt"


def bpftrace_argv(config: LatencyConfig, script: Path = SCRIPT) -> list[str]:
    """What is run: exactly what the sudoers rule allows when use_sudo is on."""
    if config.use_sudo:
        return ["sudo", "-n", resolve(config.bpftrace_path), "-f", "json", str(script)]
    return [config.bpftrace_path, "-f", "json", str(script)]


def resolve(program: str) -> str:
    """A full path for sudo (its rule names one): a name is looked up on PATH."""
    if os.sep in program:
        return program
    for directory in os.environ.get("PATH", "/usr/bin").split(os.pathsep):
        candidate = os.path.join(directory, program)
        if os.access(candidate, os.X_OK):
            return candidate
    return program


class LatencyCollector(BaseCollector[LatencyConfig]):
    name = "latency"
    needs_prime = True  # the first collect() starts the child

    def __init__(self, config: LatencyConfig, context: CollectorContext, *,
                 script: Path = SCRIPT) -> None:  # fmt: skip
        super().__init__(config, context)
        self._script = script
        self._lock = threading.Lock()
        self._window = Dump()
        root = v2_root(self._roots)
        cgroups = CgroupIds(root, self._clock.monotonic) if root else None
        self._points = PointMaker(config, DeviceNames(self._roots), cgroups,
                                  [bound * 1e9 for bound in bucket_bounds(config)])  # fmt: skip
        self.child: LatencyChild | None = None
        self._said: set[str] = set()
        self._drops = DropCount()

    def _on_dump(self, dump: Dump) -> None:
        with self._lock:
            self._window.add(dump)

    def _start(self) -> None:
        problem = None if self.config.use_sudo else ensure_tracefs()
        if problem:
            self._log.info(f"latency: {problem}")
        env = dict(os.environ)
        if not self.config.use_sudo:  # sudo resets the environment: bpftrace's default then
            env["BPFTRACE_MAP_KEYS_MAX"] = str(self.config.max_keys)
        self.child = LatencyChild(bpftrace_argv(self.config, self._script), env, self._on_dump)
        self.child.start()

    def collect(self) -> Collection:
        if self.child is None:
            self._start()
        assert self.child is not None
        with self._lock:
            window, self._window = self._window, Dump()
        state = self.child.state
        if state.fatal and "fatal" not in self._said:
            self._said.add("fatal")
            self._log.info(f"latency: off: {state.fatal} (docs/latency.md)")
        if self._points.cgroups is None and "v1" not in self._said:
            self._said.add("v1")
            self._log.info("latency: no cgroup v2 hierarchy under "
                           f"{self._roots.sys_path('fs', 'cgroup')}: no diskprobe_cgroup_latency")
        dropped = self._drops.take(window) + window.cap_processes(self.config.max_keys)
        metrics = self._points.make(window, self._clock.wall_ns())
        fields = {"latency_restarts": state.restarts,
                  "latency_dropped": dropped,
                  "latency_unmatched": window.unmatched}  # fmt: skip
        devices = len({metric.tags.get("device") for metric in metrics})
        return Collection(metrics=metrics, items=devices, agent_fields=dict(fields))

    def close(self) -> None:
        if self.child is not None:
            self.child.stop()
