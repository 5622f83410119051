"""The I/O collector on fake /proc, /sys and udev trees, as a container with HOST_* sees them."""

from __future__ import annotations

import io
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.io import IoCollector
from diskprobe.compute.counters import counter_deltas
from diskprobe.compute.iostat import iostat_fields
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots

from helpers import FIXTURES, FakeClock, add_sys_block, assert_schema, write_diskstats

SDA_1 = "   8       0 sda 100 10 2000 500 50 5 1000 250 0 1000 2000 10 1 800 40 20 30"
SDA_2 = "   8       0 sda 300 30 6000 1500 150 15 3000 1250 3 2000 5000 14 2 1600 60 30 50"
SDA1_1 = "   8       1 sda1 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0"
SDA1_2 = "   8       1 sda1 20 0 160 10 0 0 0 0 0 10 10 0 0 0 0 0 0"
LOOP = "   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
SDA_COUNTERS = tuple(int(n) for n in SDA_2.split()[3:])
DM_1 = " 253       0 dm-0 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0"
DM_2 = " 253       0 dm-0 9 0 72 2 0 0 0 0 0 2 2 0 0 0 0 0 0"


class Host:
    """A container's view of a host: HOST_PROC, HOST_SYS and HOST_RUN under one temp dir."""

    def __init__(self, root: Path) -> None:
        self.roots = HostRoots(
            proc=str(root / "proc"), sys=str(root / "sys"), run=str(root / "run")
        )
        self.proc, self.sys, self.run = root / "proc", root / "sys", root / "run"
        self.clock = FakeClock()
        self.log_stream = io.StringIO()

    def collector(self, **config: object) -> IoCollector:
        log = Logger(self.log_stream, debug=True)
        wall = iter(range(10**18, 10**19, 10**9))
        clock = Clock(monotonic=self.clock, wall_ns=lambda: next(wall))
        return IoCollector(IoConfig(**config), CollectorContext(self.roots, log, clock=clock))

    def sample(
        self, collector: IoCollector, lines: list[str], advance: float = 2.0
    ) -> list[Metric]:
        write_diskstats(self.proc, lines)
        self.clock.now += advance
        return collector.collect().metrics


def _by_device(metrics: list[Metric]) -> dict[str, Metric]:
    return {m.tags["device"]: m for m in metrics}


def test_first_sample_has_no_rates_second_has_them(tmp_path: Path) -> None:
    host = Host(tmp_path)
    collector = host.collector()
    assert host.sample(collector, [SDA_1]) == []
    metrics = host.sample(collector, [SDA_2])
    assert len(metrics) == 1
    assert metrics[0].fields["reads_per_sec"] == 100.0
    assert metrics[0].fields["util_percent"] == 50.0
    assert_schema(metrics)


def test_default_excludes_and_include_globs(tmp_path: Path) -> None:
    host = Host(tmp_path)
    collector = host.collector()
    host.sample(collector, [SDA_1, LOOP, DM_1])
    assert set(_by_device(host.sample(collector, [SDA_2, LOOP, DM_2]))) == {"sda", "dm-0"}
    only_dm = host.collector(devices=["dm-*"])
    host.sample(only_dm, [SDA_1, LOOP, DM_1])
    assert set(_by_device(host.sample(only_dm, [SDA_2, LOOP, DM_2]))) == {"dm-0"}


def test_partitions_can_be_dropped_and_share_the_disks_model(tmp_path: Path) -> None:
    host = Host(tmp_path)
    add_sys_block(host.sys, "sda", device__model="WDC WD40EFRX-68N", device__serial="WD-123")
    add_sys_block(host.sys, "sda1", parent="sda")
    collector = host.collector()
    host.sample(collector, [SDA_1, SDA1_1])
    metrics = _by_device(host.sample(collector, [SDA_2, SDA1_2]))
    assert metrics["sda1"].tags == {
        "device": "sda1",
        "model": "WDC WD40EFRX-68N",
        "serial": "WD-123",
    }
    no_parts = host.collector(partitions=False)
    host.sample(no_parts, [SDA_1, SDA1_1])
    assert set(_by_device(host.sample(no_parts, [SDA_2, SDA1_2]))) == {"sda"}


def test_udev_database_wins_and_dm_devices_get_their_name(tmp_path: Path) -> None:
    host = Host(tmp_path)
    add_sys_block(host.sys, "sda", device__model="ATA sysfs model")
    add_sys_block(host.sys, "dm-0", dm__name="vg0-data")
    udev = host.run / "udev" / "data"
    udev.mkdir(parents=True)
    (udev / "b8:0").write_text(
        "S:disk/by-id/ata-Samsung_SSD\nE:ID_MODEL=Samsung_SSD_860_EVO_1TB\n"
        "E:ID_SERIAL_SHORT=S3Z9NB0K123456A\nE:ID_TYPE=disk\n"
    )
    collector = host.collector()
    host.sample(collector, [SDA_1, DM_1])
    metrics = _by_device(host.sample(collector, [SDA_2, DM_2]))
    assert metrics["sda"].tags == {
        "device": "sda",
        "model": "Samsung_SSD_860_EVO_1TB",
        "serial": "S3Z9NB0K123456A",
    }
    assert metrics["dm-0"].tags == {"device": "dm-0", "dm_name": "vg0-data"}
    untagged = host.collector(device_tags=[])
    host.sample(untagged, [SDA_1])
    assert host.sample(untagged, [SDA_2])[0].tags == {"device": "sda"}


def test_device_appearing_gets_rates_from_its_second_sample_and_vanishing_is_silent(
    tmp_path: Path,
) -> None:
    host = Host(tmp_path)
    collector = host.collector()
    host.sample(collector, [SDA_1])
    assert set(_by_device(host.sample(collector, [SDA_2, DM_1]))) == {"sda"}
    assert set(_by_device(host.sample(collector, [SDA_2, DM_2]))) == {"sda", "dm-0"}
    assert set(_by_device(host.sample(collector, [DM_2]))) == {"dm-0"}
    assert "E!" not in host.log_stream.getvalue() and "W!" not in host.log_stream.getvalue()


def test_reset_skips_one_interval_then_rates_resume(tmp_path: Path) -> None:
    host = Host(tmp_path)
    collector = host.collector()
    host.sample(collector, [SDA_2])
    assert host.sample(collector, [SDA_1]) == []  # counters went backwards: re-added device
    metrics = host.sample(collector, [SDA_2])
    assert metrics[0].fields["reads_per_sec"] == 100.0


def test_same_name_with_new_device_numbers_is_a_new_device(tmp_path: Path) -> None:
    host = Host(tmp_path)
    collector = host.collector()
    host.sample(collector, [DM_1])
    assert host.sample(collector, [DM_2.replace("253       0", "253       7")]) == []


def test_counters_option_adds_integer_counters_even_on_the_first_sample(tmp_path: Path) -> None:
    host = Host(tmp_path)
    collector = host.collector(counters=True)
    first = host.sample(collector, [SDA_1])
    assert first[0].fields["reads"] == 100 and first[0].fields["read_bytes"] == 2000 * 512
    assert "reads_per_sec" not in first[0].fields
    second = host.sample(collector, [SDA_2])
    assert second[0].fields["flush_time_ms"] == 50 and second[0].fields["reads_per_sec"] == 100.0
    assert_schema(first + second)


def test_real_corpus_files_conform_to_the_schema(tmp_path: Path) -> None:
    for env in ("procfs_mixed", "sysstat_root1", "sysstat_root4", "sysstat_root6_cciss"):
        lines = (FIXTURES / env / "proc" / "diskstats").read_text().splitlines()
        host = Host(tmp_path / env)
        collector = host.collector(exclude=[], counters=True)
        host.sample(collector, lines)
        metrics = host.sample(collector, lines)
        assert len(metrics) == len(lines)
        assert_schema(metrics)
        for metric in metrics:
            assert metric.fields["util_percent"] == 0.0


def test_real_host_proc(tmp_path: Path) -> None:
    log = Logger(io.StringIO())
    collector = IoCollector(IoConfig(exclude=[], counters=True), CollectorContext(log=log))
    collector.collect()
    collection = collector.collect()
    assert collection.items > 0 and len(collection.metrics) == collection.items
    assert_schema(collection.metrics)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.text(alphabet="0123456789 -abcsdx\t\n", max_size=80), max_size=12), st.data())
def test_fuzzed_diskstats_never_raise_out_of_the_collector(
    tmp_path: Path, lines: list[str], data: st.DataObject
) -> None:
    host = Host(tmp_path)
    collector = host.collector(exclude=[])
    host.sample(collector, [SDA_1, *lines])
    more = data.draw(st.lists(st.text(alphabet="0123456789 sda\n", max_size=80), max_size=12))
    for metric in host.sample(
        collector, [SDA_2, *more], advance=data.draw(st.sampled_from([0.0, 1e-9, 5.0]))
    ):
        for value in metric.fields.values():
            assert not isinstance(value, float) or math.isfinite(value)


def test_an_idle_device_gets_exactly_the_computed_zero_rates(tmp_path: Path) -> None:
    # Unchanged lines take a shortcut (no parsing, a zero template): it must not show.
    host = Host(tmp_path)
    collector = host.collector()
    host.sample(collector, [SDA_2])
    idle = host.sample(collector, [SDA_2], advance=5.0)[0].fields
    deltas = counter_deltas(SDA_COUNTERS, SDA_COUNTERS, frozenset())
    assert deltas is not None
    assert idle == iostat_fields(deltas, SDA_COUNTERS, 5.0)
    assert idle["in_flight"] == 3 and idle["interval_sec"] == 5.0
    assert all(type(v) is float for k, v in idle.items() if k != "in_flight")


def test_partitions_off_keeps_block_info_cached(tmp_path: Path) -> None:
    host = Host(tmp_path)
    add_sys_block(host.sys, "sda")
    parts = [f"   8 {n} sda{n} 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0" for n in range(1, 90)]
    for n in range(1, 90):
        add_sys_block(host.sys, f"sda{n}", parent="sda")
    collector = host.collector(partitions=False)
    host.sample(collector, [SDA_1, *parts])
    cached = dict(collector._info)
    host.sample(collector, [SDA_2, *parts])
    assert collector._info == cached  # not pruned and re-read every cycle
