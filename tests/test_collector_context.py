"""Every collector is built the same way: `(config, context, *, test seams)`, BaseCollector's
subclass, its time from `context.clock` only (issue #12).

The fake Clock tests fail when a collector stamps points or measures intervals with the real
clock; the source check catches a `time` import before it is used anywhere.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import os
import pkgutil
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import diskprobe.collectors
from diskprobe.collectors.base import BaseCollector, Clock, CollectorContext
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.pressure import PressureCollector
from diskprobe.compute.mount_selection import MountTarget
from diskprobe.config import FilesystemsConfig, IoConfig, PressureConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.statfs import StatfsProber, ThreadStatfs

from helpers import FakeClock, write_diskstats

SPECIAL = {"OutputStatsCollector"}  # no config section: built by the CLI around an output
FAKE_WALL_NS = 1_234_567_890_123_456_789  # far from any real time
STEP_NS = 10_000_000_000


def _collector_modules() -> list[ModuleType]:
    package = diskprobe.collectors
    names = [info.name for info in pkgutil.iter_modules(package.__path__)]
    return [importlib.import_module(f"{package.__name__}.{name}") for name in sorted(names)]


def _collector_classes() -> list[type]:
    return [
        cls
        for module in _collector_modules()
        for name, cls in vars(module).items()
        if inspect.isclass(cls)
        and cls.__module__ == module.__name__
        and name.endswith("Collector")
        and cls is not BaseCollector
        and name not in SPECIAL
        and not getattr(cls, "_is_protocol", False)
    ]


def test_the_collectors_are_found() -> None:
    names = {cls.__name__ for cls in _collector_classes()}
    assert names >= {
        "IoCollector",
        "FilesystemsCollector",
        "SmartCollector",
        "PressureCollector",
        "ProcessIoCollector",
        "CgroupIoCollector",
    }


@pytest.mark.parametrize("cls", _collector_classes(), ids=lambda cls: cls.__name__)
def test_every_collector_derives_from_base_collector(cls: type) -> None:
    assert issubclass(cls, BaseCollector)
    assert isinstance(vars(cls).get("name"), str), "name is a class attribute"
    assert isinstance(getattr(cls, "needs_prime", None), bool)


@pytest.mark.parametrize("cls", _collector_classes(), ids=lambda cls: cls.__name__)
def test_every_collector_takes_config_and_context_then_keywords(cls: type) -> None:
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters[:2]] == ["config", "context"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[:2])
    for seam in parameters[2:]:  # test seams: keyword-only, with a production default
        assert seam.kind is seam.KEYWORD_ONLY and seam.default is not seam.empty, seam


@pytest.mark.parametrize("cls", _collector_classes(), ids=lambda cls: cls.__name__)
def test_close_is_inherited_unless_there_is_something_to_release(cls: type) -> None:
    close = vars(cls).get("close")
    if close is not None:
        body = ast.parse(textwrap.dedent(inspect.getsource(close))).body[0]
        assert isinstance(body, ast.FunctionDef)
        statements = body.body[1:] if ast.get_docstring(body) is not None else body.body
        assert statements and not all(isinstance(s, ast.Pass) for s in statements)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_collector_module_reads_the_clock_itself() -> None:
    """Only base.py (Clock's production defaults) may import time or datetime."""
    directory = Path(diskprobe.collectors.__file__).parent
    for path in sorted(directory.glob("*.py")):
        if path.name != "base.py":
            assert not _imports(path) & {"time", "datetime"}, path.name


def _fake_clock() -> tuple[FakeClock, Clock, list[int]]:
    """A monotonic clock moved by hand, and a wall clock whose readings are recorded."""
    monotonic = FakeClock()
    readings: list[int] = []

    def wall_ns() -> int:
        readings.append(FAKE_WALL_NS + len(readings) * STEP_NS)
        return readings[-1]

    return monotonic, Clock(monotonic=monotonic, wall_ns=wall_ns), readings


SDA_1 = "   8       0 sda 100 10 2000 500 50 5 1000 250 0 1000 2000"
SDA_2 = "   8       0 sda 300 30 6000 1500 150 15 3000 1250 0 2000 5000"


def test_io_collector_runs_on_the_context_clock(tmp_path: Path) -> None:
    monotonic, clock, readings = _fake_clock()
    roots = HostRoots(proc=str(tmp_path / "proc"), sys=str(tmp_path), run=str(tmp_path))
    context = CollectorContext(roots, Logger(io.StringIO()), clock=clock)
    collector = IoCollector(IoConfig(exclude=[], device_tags=[]), context)
    write_diskstats(tmp_path / "proc", [SDA_1])
    collector.collect()
    write_diskstats(tmp_path / "proc", [SDA_2])
    monotonic.now += 7.0  # the real clock moves on by far less between two collect() calls
    (metric,) = collector.collect().metrics
    assert metric.time_ns == readings[-1]
    assert metric.fields["interval_sec"] == 7.0
    assert metric.fields["reads_per_sec"] == pytest.approx(200 / 7.0)


def test_pressure_collector_runs_on_the_context_clock(tmp_path: Path) -> None:
    monotonic, clock, readings = _fake_clock()
    (tmp_path / "pressure").mkdir()
    psi = tmp_path / "pressure" / "io"
    context = CollectorContext(HostRoots(proc=str(tmp_path)), Logger(io.StringIO()), clock=clock)
    collector = PressureCollector(PressureConfig(), context)
    psi.write_text("some avg10=1.00 avg60=0.50 avg300=0.10 total=1000000\n")
    collector.collect()
    psi.write_text("some avg10=1.00 avg60=0.50 avg300=0.10 total=3000000\n")
    monotonic.now += 4.0
    (metric,) = collector.collect().metrics
    assert metric.time_ns == readings[-1]
    assert metric.fields["some_stall_us_per_sec"] == pytest.approx(2_000_000 / 4.0)


def test_filesystems_collector_stamps_and_forecasts_on_the_context_clock() -> None:
    _monotonic, clock, readings = _fake_clock()
    avail = [10_000_000]

    def statvfs(path: str) -> os.statvfs_result:
        return os.statvfs_result((4096, 4096, 50_000_000, avail[0], avail[0], 100, 50, 50, 0, 255))

    target = MountTarget("/data", "/data", "/dev/sdz1", "ext4", "rw", 8, 1)
    config = FilesystemsConfig(forecast_min_samples=3, forecast_window=600.0)
    collector = FilesystemsCollector(
        config,
        CollectorContext(log=Logger(io.StringIO()), clock=clock),
        prober=StatfsProber(1.0, ThreadStatfs(statvfs)),
        targets=lambda: [target],
    )
    try:
        for _ in range(3):
            (metric,) = collector.collect().metrics
            assert metric.time_ns == readings[-1]
            avail[0] -= 25_000  # 100 MB per STEP_NS (10 s) of the fake wall clock
    finally:
        collector.close()
    assert metric.fields["fill_rate_bytes_per_sec"] == pytest.approx(10_240_000.0)
