"""Schema names no in-process test emitted (tests/schema_coverage.py listed them): emitted here.

diskprobe_agent's dropped_points and spooled_points were only seen in the installed command's
output (subprocess tests), and diskprobe_fs.inodes_time_to_full_sec nowhere at all.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.output_stats import OutputStatsCollector
from diskprobe.config import FilesystemsConfig, OutputConfig
from diskprobe.log import Logger
from diskprobe.outputs.influxdb import InfluxDBOutput
from diskprobe.roots import HostRoots
from diskprobe.runtime import Runtime
from diskprobe.schema import AGENT
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.sources.statfs import StatfsProber, ThreadStatfs
from diskprobe.state import StateStore

from helpers import assert_schema


def test_the_output_collector_reports_the_spool_on_its_agent_point(tmp_path: Path) -> None:
    def server_down(body: bytes) -> None:
        raise ConnectionRefusedError("connection refused")

    config = OutputConfig(kind="influxdb", url="http://x", bucket="b", spool_dir=str(tmp_path))
    log = Logger(io.StringIO())
    output = InfluxDBOutput(config, log, env={"INFLUX_TOKEN": "t"}, send=server_down, start=False)
    try:
        runtime = Runtime([OutputStatsCollector(output)], InfluxSerializer(), output, log, 10.0)
        runtime.emit(runtime.gather())  # one agent point, spooled: the server is down
        assert not output.send_once()
        (point,) = runtime.gather()
    finally:
        output.close()
    assert point.measurement == AGENT.name and point.tags["collector"] == "output"
    assert point.fields["spooled_points"] == 1 and point.fields["dropped_points"] == 0
    assert point.fields["items"] == 1  # batches waiting
    assert_schema([point])


def test_inodes_running_out_get_a_time_to_full(tmp_path: Path) -> None:
    now, free_inodes = [1000.0], [500_000]

    def inodes_filling(path: str) -> os.statvfs_result:
        # bsize frsize blocks bfree bavail files ffree favail flag namemax: space stays flat
        free = free_inodes[0]
        return os.statvfs_result((4096, 4096, 50_000, 25_000, 25_000, 10**6, free, free, 0, 255))

    log = Logger(io.StringIO())
    context = CollectorContext(
        HostRoots(),
        log,
        StateStore(str(tmp_path / "state.json"), log),
        Clock(wall_ns=lambda: round(now[0] * 1e9)),
    )
    config = FilesystemsConfig(mount_points=["/"], forecast_min_samples=3, forecast_window=600.0)
    prober = StatfsProber(1.0, ThreadStatfs(inodes_filling))
    collector = FilesystemsCollector(config, context, prober=prober)
    try:
        seen = []
        for _ in range(4):
            seen.append(collector.collect().metrics[0].fields)
            now[0] += 10
            free_inodes[0] -= 10_000  # 1,000 inodes per second
    finally:
        collector.close()
    free = seen[-1]["inodes_free"]
    assert isinstance(free, int)
    assert seen[-1]["inodes_time_to_full_sec"] == pytest.approx(free / 1000.0)
    assert "time_to_full_sec" not in seen[-1]  # space flat
