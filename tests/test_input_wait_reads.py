"""What the in-job meter reads at each window's close: the one sysfs `stat` file of the device
under its data, never the whole /proc/diskstats (thousands of lines on some hosts, read in the
training loop). The files it opens are seen by an audit hook in a real job's process; and
sources.diskstats.read_device_counters on a fake sysfs as the kernel lays it out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from diskprobe.roots import HostRoots
from diskprobe.sources.diskstats import parse_diskstats, read_device_counters

from ci import skip_or_fail
from helpers import loop_ext4

# A 5.5+ kernel's line (17 stats), from a real host's /proc/diskstats.
SDA = "8 0 sda 3462 1109 219406 1550 1232 2024 89504 2630 0 3680 4180 0 0 0 0 12 1"
WINDOWS = 3

JOB = textwrap.dedent("""
    import json, os, sys
    opened = []
    def hook(event, args):
        if event == "open" and isinstance(args[0], str):
            opened.append(args[0])
    from diskprobe.integrations.input_wait import InputWaitMeter, measure_input
    data = sys.argv[1]
    meter = InputWaitMeter(data_paths=[data], window_steps=2)
    sys.addaudithook(hook)
    def batches():
        for index in range(2 * %(windows)d + 1):
            with open(os.path.join(data, "w"), "wb") as f:  # a write the device sees
                f.write(os.urandom(65536))
                os.fsync(f.fileno())
            yield index
    for _ in measure_input(batches(), meter):
        pass
    print(json.dumps({"opened": opened, "device": meter.last["device"],
                      "iostat": meter.last["device_iostat"],
                      "windows": len(meter.windows)}))
""") % {"windows": WINDOWS}


def test_a_job_on_a_loop_device_reads_that_device_s_stat_file_only(tmp_path: Path) -> None:
    with loop_ext4(64 << 20, "diskprobe-meter-reads-", skip_or_fail) as mount_point:
        out = subprocess.run([sys.executable, "-c", JOB, str(mount_point)], check=True,
                             capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    found = json.loads(out)
    device = found["device"]
    assert device.startswith("loop"), found
    assert found["windows"] == WINDOWS
    reads = [path for path in found["opened"]
             if "diskstats" in path or ("/block/" in path and path.endswith("/stat"))]
    # One read per window's close (the first, at the meter's start, came before the hook).
    assert reads == [f"/sys/class/block/{device}/stat"] * WINDOWS, found["opened"]
    assert found["iostat"]["writes_per_sec"] > 0, found["iostat"]  # the windows' fsynced writes


def _sys_block(tmp_path: Path, name: str, text: str | bytes) -> HostRoots:
    stat = tmp_path / "sys" / "class" / "block" / name / "stat"
    stat.parent.mkdir(parents=True, exist_ok=True)
    stat.write_bytes(text if isinstance(text, bytes) else text.encode())
    return HostRoots(sys=str(tmp_path / "sys"))


def test_a_disk_s_stat_file_holds_its_diskstats_line_s_counters(tmp_path: Path) -> None:
    # /sys/class/block/sda/stat: the same counters, in columns, without major, minor, name
    roots = _sys_block(tmp_path, "sda", "    " + "    ".join(SDA.split()[3:]) + "\n")
    assert read_device_counters(roots, "sda") == parse_diskstats(SDA)["sda"].counters


def test_a_kernel_name_with_a_slash_is_sysfs_s_bang(tmp_path: Path) -> None:
    roots = _sys_block(tmp_path, "cciss!c0d0", " ".join(SDA.split()[3:]))
    assert read_device_counters(roots, "cciss/c0d0") == parse_diskstats(SDA)["sda"].counters


@pytest.mark.parametrize("name", ["", ".", "..", "sda\0", "absent"])
def test_a_name_that_is_no_device_reads_nothing(tmp_path: Path, name: str) -> None:
    roots = _sys_block(tmp_path, "sda", " ".join(SDA.split()[3:]))
    assert read_device_counters(roots, name) is None


@pytest.mark.parametrize("text", [b"", b"1 2 3\n", b"\xff\xfe" + b" 1" * 17,
                                  b" ".join([b"1"] * 16 + [b"-1"]), b"9" * 30 + b" 1" * 16])
def test_a_garbled_stat_file_is_no_counters(tmp_path: Path, text: bytes) -> None:
    assert read_device_counters(_sys_block(tmp_path, "sda", text), "sda") is None


def test_the_running_kernel_s_files_agree_for_its_first_disk() -> None:
    with open("/proc/diskstats", encoding="ascii") as f:
        stats = parse_diskstats(f.read())
    disk = next((name for name in sorted(stats) if os.path.exists(f"/sys/block/{name}")), None)
    if disk is None:
        skip_or_fail("no block device in /sys/block")
    counters = read_device_counters(HostRoots(), disk)
    assert counters is not None and len(counters) == len(stats[disk].counters)
    assert counters[0] >= stats[disk].counters[0]  # reads only grow
