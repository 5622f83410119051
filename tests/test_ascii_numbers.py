"""Numbers are ASCII digits only, as the kernel and Go print them (issue #25, item 10):
Python's int(), float() and a regex's \\d also take other scripts' digits ("\\u0661" is an
Arabic-Indic one) and int()/float() take "1_0"; none of those is a duration, a kernel counter
or a device number."""

from __future__ import annotations

import pytest

from diskprobe.config import ConfigError
from diskprobe.config.checks import collectd_interval
from diskprobe.durations import parse_duration
from diskprobe.guard_units import parse_percent, parse_size
from diskprobe.sources.diskstats import parse_diskstats_parts
from diskprobe.sources.mountinfo import parse_mountinfo_line
from diskprobe.sources.pressure import parse_pressure
from diskprobe.sources.privileges import parse_effective_capabilities

ONE = "\u0661"  # ARABIC-INDIC DIGIT ONE: int(ONE) == 1
COUNTERS = "1 0 8 1 1 0 8 1 0 1 2"


@pytest.mark.parametrize("text", [f"{ONE}s", f"{ONE}0ms", "1_0s", f"1.{ONE}s"])
def test_durations(text: str) -> None:
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration(text)
    assert parse_duration("1.5s") == 1.5  # ASCII still works


def test_collectd_interval() -> None:
    meta = {"minimum": 0.01, "maximum": 86400.0}
    for raw in (f"{ONE}0", "1_0", "1e1"):
        with pytest.raises(ConfigError, match="is not a number of seconds"):
            collectd_interval({"COLLECTD_INTERVAL": raw}, meta)
    assert collectd_interval({"COLLECTD_INTERVAL": "10.000"}, meta) == 10.0


def test_kernel_numbers() -> None:
    assert parse_diskstats_parts(["8", "0", "sda", COUNTERS]) is not None
    assert parse_diskstats_parts([f"{ONE}", "0", "sda", COUNTERS]) is None
    assert parse_diskstats_parts(["8", "1_0", "sda", COUNTERS]) is None
    line = "36 35 8:1 / /mnt rw - ext4 /dev/sda1 rw"
    assert parse_mountinfo_line(line) is not None
    assert parse_mountinfo_line(line.replace("8:1", f"8:{ONE}")) is None
    assert parse_mountinfo_line(line.replace("36 35", f"3{ONE} 35")) is None
    psi = "some avg10=1.50 avg60=0.80 avg300=0.20 total=1234\n"
    assert parse_pressure(psi) is not None
    assert parse_pressure(psi.replace("1.50", f"{ONE}.50")) is None
    assert parse_pressure(psi.replace("1.50", "1_0.5")) is None
    assert parse_effective_capabilities("CapEff:\t00000000000000ff\n") == 255
    assert parse_effective_capabilities(f"CapEff:\t{ONE}f\n") is None


def test_guard_sizes_and_percentages() -> None:
    assert parse_size("20GB") == 20 * 10**9 and parse_percent("5%") == 5.0
    for bad in (f"{ONE}GB", "1_0GB"):
        with pytest.raises(ValueError, match="bad size"):
            parse_size(bad)
    with pytest.raises(ValueError, match="bad percentage"):
        parse_percent(f"{ONE}%")
