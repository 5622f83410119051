"""The collectors a configuration asks for, in the order their metrics appear in a batch."""

from __future__ import annotations

from diskprobe.collectors.base import Collector, CollectorContext
from diskprobe.collectors.cgroup_io import CgroupIoCollector
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.jobs import JobsCollector
from diskprobe.collectors.latency import LatencyCollector
from diskprobe.collectors.pressure import PressureCollector
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import AgentConfig


def build_collectors(
    config: AgentConfig, context: CollectorContext, once: bool = False
) -> list[Collector]:
    """`once` (--once): SMART waits for its reads instead of emitting them a tick later, and
    jobs and latency are not watched (a job's verdict needs an interval of samples; bpftrace
    takes seconds to start)."""
    collectors: list[Collector] = []
    if config.io.enabled:
        collectors.append(IoCollector(config.io, context))
    if config.filesystems.enabled:
        collectors.append(FilesystemsCollector(config.filesystems, context))
    if config.smart.enabled:
        collectors.append(SmartCollector(config.smart, context, blocking=once))
    if config.pressure.enabled:
        collectors.append(PressureCollector(config.pressure, context))
    if config.process_io.enabled:
        collectors.append(ProcessIoCollector(config.process_io, context))
    if config.cgroup_io.enabled:
        collectors.append(CgroupIoCollector(config.cgroup_io, context))
    if config.latency.enabled and not once:  # the kernel side needs seconds to start
        collectors.append(LatencyCollector(config.latency, context))
    if config.jobs.enabled and not once:  # a job's verdict needs an interval of samples
        collectors.append(JobsCollector(config.jobs, context))
    return collectors
