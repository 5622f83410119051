"""The collectors a configuration asks for, in the order their metrics appear in a batch."""

from __future__ import annotations

from diskprobe.collectors.base import Collector
from diskprobe.collectors.cgroup_io import CgroupIoCollector
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.pressure import PressureCollector
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import AgentConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.state import StateStore


def build_collectors(
    config: AgentConfig, roots: HostRoots, log: Logger, state: StateStore, once: bool = False
) -> list[Collector]:
    collectors: list[Collector] = []
    if config.io.enabled:
        collectors.append(IoCollector(config.io, roots, log))
    if config.filesystems.enabled:
        collectors.append(FilesystemsCollector(config.filesystems, roots, log, state))
    if config.smart.enabled:
        collectors.append(SmartCollector(config.smart, log, state, blocking=once, roots=roots))
    if config.pressure.enabled:
        collectors.append(PressureCollector(config.pressure, roots, log))
    if config.process_io.enabled:
        collectors.append(ProcessIoCollector(config.process_io, roots, log))
    if config.cgroup_io.enabled:
        collectors.append(CgroupIoCollector(config.cgroup_io, roots, log))
    return collectors
