"""diskprobe_pressure on this machine's /proc/pressure/io and on fake HOST_PROC trees."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.pressure import PressureCollector
from diskprobe.config import PressureConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.pressure import PsiLine, parse_pressure

from helpers import FakeClock, assert_schema

FIRST = (
    "some avg10=1.50 avg60=0.75 avg300=0.25 total=1000000\n"
    "full avg10=0.50 avg60=0.25 avg300=0.10 total=400000\n"
)
SECOND = (
    "some avg10=2.00 avg60=1.00 avg300=0.30 total=1250000\n"
    "full avg10=0.60 avg60=0.30 avg300=0.12 total=430000\n"
)
SOME_ONLY_1 = "some avg10=0.10 avg60=0.20 avg300=0.30 total=500\n"
SOME_ONLY_2 = "some avg10=0.10 avg60=0.20 avg300=0.30 total=2500\n"


def _collector(proc: Path, clock: FakeClock, stream: io.StringIO) -> PressureCollector:
    roots = HostRoots(proc=str(proc))
    context = CollectorContext(roots, Logger(stream), clock=Clock(clock, lambda: 1))
    return PressureCollector(PressureConfig(), context)


def _write(proc: Path, text: str) -> None:
    (proc / "pressure").mkdir(parents=True, exist_ok=True)
    (proc / "pressure" / "io").write_text(text)


def test_parse_both_lines_and_some_only() -> None:
    parsed = parse_pressure(FIRST)
    assert parsed is not None
    assert parsed.some == PsiLine(1.5, 0.75, 0.25, 1000000)
    assert parsed.full == PsiLine(0.5, 0.25, 0.1, 400000)
    old = parse_pressure(SOME_ONLY_1)
    assert old is not None and old.full is None
    assert parse_pressure("") is None
    assert parse_pressure("some avg10=x avg60=0 avg300=0 total=1\n") is None


def test_stall_rates_from_two_samples(tmp_path: Path) -> None:
    clock, stream = FakeClock(), io.StringIO()
    collector = _collector(tmp_path, clock, stream)
    _write(tmp_path, FIRST)
    first = collector.collect().metrics
    assert "some_stall_us_per_sec" not in first[0].fields
    assert first[0].fields["some_avg10"] == 1.5
    _write(tmp_path, SECOND)
    clock.now += 10.0
    fields = collector.collect().metrics[0].fields
    # (1250000 - 1000000) us / 10 s and (430000 - 400000) us / 10 s
    assert fields["some_stall_us_per_sec"] == 25000.0
    assert fields["full_stall_us_per_sec"] == 3000.0
    assert fields["full_avg300"] == 0.12
    assert_schema(first + collector.collect().metrics)


def test_some_only_file_has_no_full_fields(tmp_path: Path) -> None:
    clock = FakeClock()
    collector = _collector(tmp_path, clock, io.StringIO())
    _write(tmp_path, SOME_ONLY_1)
    collector.collect()
    _write(tmp_path, SOME_ONLY_2)
    clock.now += 4.0
    fields = collector.collect().metrics[0].fields
    assert fields == {
        "some_avg10": 0.1,
        "some_avg60": 0.2,
        "some_avg300": 0.3,
        "some_stall_us_per_sec": 500.0,
    }


def test_no_psi_is_logged_once_and_turns_the_collector_off(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()  # a kernel without PSI: no pressure/ directory
    stream = io.StringIO()
    collector = _collector(tmp_path / "proc", FakeClock(), stream)
    for _ in range(3):
        collection = collector.collect()
        assert collection.metrics == [] and collection.errors == 0
    assert stream.getvalue().count("I! pressure:") == 1 and len(stream.getvalue().splitlines()) == 1
    _write(tmp_path / "proc", FIRST)  # off for good: it is not read again
    assert collector.collect().metrics == []


def test_eopnotsupp_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr("diskprobe.sources.pressure.open", refuse, raising=False)
    stream = io.StringIO()
    collector = _collector(tmp_path, FakeClock(), stream)
    assert collector.collect().metrics == [] and collector.disabled
    assert "I! pressure:" in stream.getvalue()


def test_other_read_errors_do_not_turn_it_off(tmp_path: Path) -> None:
    (tmp_path / "pressure" / "io").mkdir(parents=True)  # EISDIR: not "no PSI"
    stream = io.StringIO()
    collector = _collector(tmp_path, FakeClock(), stream)
    assert collector.collect().errors == 1 and collector.collect().errors == 1
    assert not collector.disabled and stream.getvalue().count("W!") == 1


@pytest.mark.skipif(not os.path.exists("/proc/pressure/io"), reason="no PSI on this kernel")
def test_real_proc_pressure_io() -> None:
    context = CollectorContext(HostRoots(), Logger(io.StringIO()))
    collector = PressureCollector(PressureConfig(), context)
    collector.collect()
    metrics = collector.collect().metrics
    assert len(metrics) == 1
    fields = metrics[0].fields
    assert {"some_avg10", "some_stall_us_per_sec"} <= set(fields)
    assert float(fields["some_stall_us_per_sec"]) >= 0
    assert 0 <= float(fields["some_avg10"]) <= 100
    assert_schema(metrics)
