"""Fuzzing every source parser with realistic-but-broken input (issue #11, acceptance).

Each strategy starts from real input (a kernel's lines, captured smartctl / nvme-cli output) and
breaks it: tokens mutated, huge numbers, NaN/inf, random bytes, truncation, NUL bytes, other
encodings. Where a collector reads the input from a fake root, the COLLECTOR runs (so "no
exception escapes a collector" is what is tested); every emitted field must be finite, of the
schema's type, and within physical bounds. The normal set runs QUICK examples per parser, the
slow set SLOW (10,000) each: `pytest -m slow tests/test_fuzz_parsers.py`.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.cgroup_io import CgroupIoCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.pressure import PressureCollector
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.compute.iostat import IO_MS_SLACK_MS, IO_MS_TOLERANCE, MAX_QUEUE_DEPTH
from diskprobe.compute.mount_selection import select_mounts
from diskprobe.config import CgroupIoConfig, IoConfig, PressureConfig, ProcessIoConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.serializers import FORMATS, make_serializer
from diskprobe.smart import json_parser, nvme_smart_log, text_parser
from diskprobe.smart.afr import load_afr_table
from diskprobe.smart.metrics import Judged, attribute_metrics, smart_metric
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.verdict import Evidence, judge
from diskprobe.sources.mountinfo import parse_mountinfo

from helpers import FIXTURES, FakeClock, assert_schema, memory_scratch
from mutations import json_mutated, mutated

QUICK, SLOW = 200, 10_000
TESTS = Path(__file__).parent
SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck)}


def broken(text: str) -> st.SearchStrategy[bytes]:
    """Mutated text in one of the encodings a fake or damaged file may have, or noise."""
    return st.one_of(
        mutated(text).map(lambda t: t.encode("utf-8", "surrogateescape")),
        mutated(text).map(lambda t: t.encode("utf-16", "surrogatepass")),
        st.binary(max_size=300),
    )


def fuzz(strategy: st.SearchStrategy[object]) -> Callable[[Callable[..., None]], list[object]]:
    """Two tests from one check: QUICK examples in the normal set, SLOW in the slow one. Each
    example also draws the output format its points are written in: every format gets a third
    of the examples (writing each example in all three made serializing, not parsing, most of
    the slow set's time)."""

    def make(check: Callable[..., None]) -> list[object]:
        def test(examples: int) -> object:
            return settings(max_examples=examples, **SETTINGS)(  # type: ignore[arg-type]
                given(strategy, st.sampled_from(FORMATS))(check)
            )

        return [test(QUICK), pytest.mark.slow(test(SLOW))]

    return make


def assert_serializable(metrics: list[Metric], output: str) -> None:
    """The output format writes the batch as valid UTF-8, whatever bytes the sources read."""
    serializer = make_serializer(output, env={"COLLECTD_HOSTNAME": "fuzz"}, interval=10.0)
    serializer.serialize(metrics).encode("utf-8")


def assert_finite(metrics: list[Metric], output: str) -> None:
    assert_schema(metrics)
    assert_serializable(metrics, output)
    for metric in metrics:
        for name, value in metric.fields.items():
            if isinstance(value, float):
                assert math.isfinite(value), (metric, name)
            if name.endswith(("_per_sec", "_await_ms", "_request_bytes", "queue_size")):
                assert value >= 0, (metric, name)  # type: ignore[operator]


def roots(tmp: Path) -> HostRoots:
    return HostRoots(proc=str(tmp / "proc"), sys=str(tmp / "sys"), run=str(tmp / "run"))


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def quiet() -> Logger:
    return Logger(io.StringIO(), debug=True)


@pytest.fixture(scope="module")
def tmp() -> Iterator[Path]:
    """The collectors' fuzzers rewrite their fake /proc files every example: on ext4 that cost
    a quarter of their CPU (cgroup, process_io), hence in memory."""
    with memory_scratch("fuzz-") as directory:
        yield Path(directory)


# -- /proc/diskstats through IoCollector -------------------------------------------------------

DISKSTATS = (FIXTURES / "procfs_mixed" / "proc" / "diskstats").read_text()


def _io(tmp: Path, output: str, samples: list[bytes], elapsed: float, udev: bytes) -> None:
    # ram0 (1:0) is the fixture's first device: its udev entry holds any bytes (model, serial)
    write(tmp / "run" / "udev" / "data" / "b1:0", udev)
    clock = FakeClock()
    context = CollectorContext(roots(tmp), quiet(), clock=Clock(clock))
    collector = IoCollector(IoConfig(exclude=[], counters=True), context)
    for data in samples:
        write(tmp / "proc" / "diskstats", data)
        clock.now += elapsed
        metrics = collector.collect().metrics
        assert_finite(metrics, output)
        slack = IO_MS_SLACK_MS / (elapsed * 1000.0) * 100.0
        for metric in metrics:
            util = metric.fields.get("util_percent", 0.0)
            assert util <= 100.0 * IO_MS_TOLERANCE + slack, metric  # type: ignore[operator]
            assert metric.fields.get("queue_size", 0.0) <= MAX_QUEUE_DEPTH  # type: ignore[operator]


UDEV = "E:ID_MODEL=Samsung_SSD_860\nE:ID_SERIAL_SHORT=S3Z9NB0K123456\n"
diskstats_case = st.tuples(st.lists(broken(DISKSTATS), min_size=2, max_size=3),
                           st.sampled_from([0.01, 1.0, 10.0]), broken(UDEV))  # fmt: skip


def _diskstats(case: tuple[list[bytes], float, bytes], output: str) -> None:
    _io(Path(os.environ["FUZZ_TMP"]) / "io", output, *case)


test_diskstats_quick, test_diskstats_slow = fuzz(diskstats_case)(_diskstats)


# -- mountinfo -----------------------------------------------------------------------------------

MOUNTINFO = (FIXTURES / "mountinfo_escapes" / "proc" / "1" / "mountinfo").read_text()


def _mountinfo(data: bytes, output: str) -> None:
    mounts = parse_mountinfo(data.decode("utf-8", "surrogateescape"))  # as read_mountinfo
    points = []
    for target in select_mounts(mounts, ignore_fs=["proc"], prefix="/host"):
        assert "\0" not in target.stat_path
        tags = {"path": target.path, "fstype": target.fstype, "device": target.device}
        points.append(Metric("diskprobe_fs", tags, {"responsive": False}, 1))
    assert_serializable(points, output)


test_mountinfo_quick, test_mountinfo_slow = fuzz(broken(MOUNTINFO))(_mountinfo)

# -- PSI through PressureCollector ---------------------------------------------------------------

PSI = ("some avg10=1.50 avg60=0.80 avg300=0.20 total=123456\n"
       "full avg10=0.50 avg60=0.10 avg300=0.00 total=65432\n")  # fmt: skip


def _pressure(samples: list[bytes], output: str) -> None:
    tmp = Path(os.environ["FUZZ_TMP"]) / "psi"
    clock = FakeClock()
    context = CollectorContext(roots(tmp), quiet(), clock=Clock(clock))
    collector = PressureCollector(PressureConfig(), context)
    for data in samples:
        write(tmp / "proc" / "pressure" / "io", data)
        clock.now += 1.0
        metrics = collector.collect().metrics
        assert_finite(metrics, output)
        for metric in metrics:
            for name, value in metric.fields.items():
                if "avg" in name:
                    assert 0.0 <= value <= 100.0, (name, value)  # type: ignore[operator]
                else:  # stall time is wall time: at most a second per second (+ tolerance)
                    assert 0.0 <= value <= 1.25e6, (name, value)  # type: ignore[operator]


test_pressure_quick, test_pressure_slow = fuzz(st.lists(broken(PSI), min_size=2, max_size=3))(
    _pressure
)

# -- cgroup v2 io.stat and v1 blkio through CgroupIoCollector ----------------------------------

IO_STAT = ("8:0 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
           "259:0 rbytes=90112 wbytes=0 rios=12 wios=0 dbytes=4096 dios=1\n")  # fmt: skip
BLKIO = "8:0 Read 1234\n8:0 Write 5678\n8:0 Sync 1\n8:0 Total 6912\nTotal 6912\n"


def _cgroups(case: tuple[int, list[tuple[bytes, bytes]]], output: str) -> None:
    version, samples = case
    tmp = Path(os.environ["FUZZ_TMP"]) / f"cgroup{version}"
    root = tmp / "sys" / "fs" / "cgroup" / ("" if version == 2 else "blkio")
    if version == 2:
        write(root / "cgroup.controllers", b"io\n")
    clock = FakeClock()
    context = CollectorContext(roots(tmp), quiet(), clock=Clock(clock))
    collector = CgroupIoCollector(CgroupIoConfig(), context)
    for parent, child in samples:
        for directory, data in (("", parent), ("kubepods.slice", child)):
            if version == 2:
                write(root / directory / "io.stat", data)
            else:
                write(root / directory / "blkio.throttle.io_service_bytes_recursive", data)
                write(root / directory / "blkio.throttle.io_serviced_recursive", data)
        clock.now += 1.0
        assert_finite(collector.collect().metrics, output)


cgroup_case = st.one_of(
    st.tuples(st.just(2), st.lists(st.tuples(broken(IO_STAT), broken(IO_STAT)), min_size=2,
                                   max_size=3)),
    st.tuples(st.just(1), st.lists(st.tuples(broken(BLKIO), broken(BLKIO)), min_size=2,
                                   max_size=3)),
)  # fmt: skip
test_cgroup_io_quick, test_cgroup_io_slow = fuzz(cgroup_case)(_cgroups)

# -- /proc/<pid>/io through ProcessIoCollector ---------------------------------------------------

PROC_IO = ("rchar: 1948\nwchar: 0\nsyscr: 7\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 0\n"
           "cancelled_write_bytes: 0\n")  # fmt: skip


OWN_STAT = Path("/proc/self/stat").read_bytes()
OWN_STATUS = Path("/proc/self/status").read_bytes()


def _fake_process(proc: Path, name: bytes, cmdline: bytes, cgroup: bytes) -> None:
    """Pid 4242 for psutil: this process's stat and status, with any bytes as its name (comm
    in stat, as the kernel writes it: at most 15 bytes, no newline), command line and cgroup."""
    comm = name.replace(b"\n", b"")[:15]
    write(proc / "4242" / "stat", b"4242 (" + comm + OWN_STAT[OWN_STAT.rindex(b")") :])
    write(proc / "4242" / "status", OWN_STATUS)
    write(proc / "4242" / "comm", comm + b"\n")
    write(proc / "4242" / "cmdline", cmdline)
    write(proc / "4242" / "cgroup", cgroup)


def _process_io(case: tuple[list[bytes], bytes, bytes, bytes], output: str) -> None:
    samples, name, cmdline, cgroup = case
    tmp = Path(os.environ["FUZZ_TMP"]) / "procio"
    _fake_process(tmp / "proc", name, cmdline, cgroup)
    for system_file in ("stat", "uptime"):  # psutil's boot time and clock ticks
        if not (tmp / "proc" / system_file).exists():
            write(tmp / "proc" / system_file, Path("/proc", system_file).read_bytes())
    clock = FakeClock()
    config = ProcessIoConfig(min_bytes_per_sec=0)
    context = CollectorContext(roots(tmp), quiet(), clock=Clock(clock))
    collector = ProcessIoCollector(config, context)
    for data in samples:
        write(tmp / "proc" / "4242" / "io", data[:1024])
        clock.now += 1.0
        assert_finite(collector.collect().metrics, output)


# The io file as ever; the name, command line and cgroup as any bytes (issue #25: a name that
# is not UTF-8 ended the agent at its output).
process_case = st.tuples(
    st.lists(broken(PROC_IO), min_size=2, max_size=3),
    st.binary(max_size=20),
    st.binary(max_size=60),
    st.one_of(st.binary(max_size=40), st.binary(max_size=20).map(lambda b: b"0::/" + b)),
)
test_process_io_quick, test_process_io_slow = fuzz(process_case)(_process_io)

# -- SMART: smartctl JSON and text, nvme-cli JSON (captures mutated) --------------------------


AFR_TABLE = load_afr_table()  # once, as the collector does: a TOML parse per example cost more


def _smart_metrics(health: DriveHealth, output: str) -> None:
    values = dict(health.counters)
    table = AFR_TABLE
    estimate = table.estimate(health)
    evidence = Evidence(values, estimate=estimate, baseline_afr=table.baseline(health.media))
    judged = Judged(values, verdict=judge(health, evidence), estimate=estimate)
    metrics = [smart_metric(health, judged, 1), *attribute_metrics(health, 1, table)]
    assert_finite(metrics, output)


def _captures(folder: Path, name: str) -> list[str]:
    return [path.read_text(encoding="utf-8", errors="replace")
            for path in sorted(folder.glob(f"*/{name}"))][:40]  # fmt: skip


SMART_JSON = _captures(TESTS / "golden" / "smart-json", "response.json")
SMART_TEXT = _captures(TESTS / "golden" / "smart-text", "response.txt")
NVME_JSON = [path.read_text() for path in sorted((FIXTURES / "nvme-cli").glob("*.json"))]


def _smart_json(text: str, output: str) -> None:
    try:
        data = json_parser.load(text)
    except json_parser.NotSmartctlJson:
        return
    _smart_metrics(json_parser.parse(data, "sda"), output)


def _smart_text(text: str, output: str) -> None:
    _smart_metrics(text_parser.parse(text, "sda"), output)


def _nvme(text: str, output: str) -> None:
    try:
        health = nvme_smart_log.parse_smart_log(text, "nvme0")
    except nvme_smart_log.NotSmartLog:
        return
    _smart_metrics(health, output)


test_smartctl_json_quick, test_smartctl_json_slow = fuzz(json_mutated(SMART_JSON))(_smart_json)
test_smartctl_text_quick, test_smartctl_text_slow = fuzz(
    st.sampled_from(SMART_TEXT).flatmap(lambda t: mutated(t))
)(_smart_text)
test_nvme_cli_json_quick, test_nvme_cli_json_slow = fuzz(json_mutated(NVME_JSON))(_nvme)


@pytest.fixture(autouse=True)
def _fuzz_tmp(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Collectors under hypothesis share one module temp dir (files rewritten per example)."""
    monkeypatch.setenv("FUZZ_TMP", str(tmp))


def test_smartctl_json_with_a_scalar_where_an_array_belongs() -> None:
    """Found by the slow set: `"table": -1` (and `"messages": 5`) made the parser iterate an
    int; a damaged document loses those parts only."""
    _smart_json(
        '{"smartctl": {"messages": 5, "exit_status": 0}, "device": {"protocol": "ATA"},'
        ' "model_name": "HGST HUH721008ALE604", "power_cycle_count": 123,'
        ' "ata_smart_attributes": {"revision": 16, "table": -1}}',
        "influx",
    )
    health = json_parser.parse(json_parser.load('{"device": {}, "ata_smart_attributes": '
                                                '{"table": -1}, "power_cycle_count": 7}'), "sda")
    assert health.power_cycles == 7 and not health.attributes
