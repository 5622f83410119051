"""Fail-slow on fast devices (issue 27): peers at about 0.3 ms a request, below what whole
milliseconds of /proc/diskstats resolve in one interval, one of them slowed to about 20 ms.

Three loop devices on files of tests/fuse_delay.py (direct_io: every request reaches the
daemon), each request delayed BASE_MS; the same fio job on each: 40 random 4 KiB direct reads
a second (psync), so the peers' expected time is ~12 ms an interval, under the 50 ms below
which diskprobe used to give no ratio at all. The installed `diskprobe`, interval 1 s,
fail_slow_window 1 m, the three as one peer group. Every healthy ratio is read before the
delay comes on (the same backing for all: none is slower to begin with); then one device gets
SLOW_MS more per request: it must be flagged within the window, counted in intervals, and
the others never. Needs root, /dev/fuse, fio and mfusepy; about a minute and a half.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import failslow_probe as fp
from failslow_host import Load, SlowHost, slow_host
from failslow_probe import Diskprobe, between, ratios
from kernel_diskstats import reads_line

from ci import skip_or_fail
from helpers import add_sys_block, write_diskstats
from lineproto import parse_line

DEVICES = 3
INTERVAL, INTERVAL_SEC = "1s", 1.0
WINDOW, WINDOW_SEC = "1m", 60.0
LOAD = Load(40, reads_only=True)
BASE_MS = 0.3  # every request's delay: the healthy latency, the same on every device
SLOW_MS = 20.0  # the slowed device's delay on top of it
WARMUP_SEC = 20.0  # healthy intervals, each device's ratios read, before the delay
HEALTHY_MAX_MEDIAN = 1.5  # a healthy device's median slowdown_ratio stays under this


@pytest.fixture(scope="module")
def host() -> Iterator[SlowHost]:
    with slow_host(DEVICES, skip_or_fail, base_ms=BASE_MS) as slow:
        slow.set_load(LOAD)
        yield slow


def _intervals_until_flagged(probe: Diskprobe, device: str, since: float) -> int | None:
    mine = [s for s in probe.samples() if s.device == device and s.arrived >= since]
    return next((index + 1 for index, s in enumerate(mine) if s.fail_slow), None)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.xdist_group("test_failslow_fast")
def test_a_fast_device_slowed_to_20_ms_is_flagged_within_the_window_and_no_peer(
    host: SlowHost, tmp_path: Path
) -> None:
    slow = host.devices[2]
    with fp.running_diskprobe(tmp_path, host.devices, INTERVAL, WINDOW) as probe:
        assert probe.wait_for(lambda: bool(probe.samples()), 15.0), probe.stderr
        time.sleep(WARMUP_SEC)
        healthy = probe.samples()
        host.set_delays({slow: SLOW_MS})
        delay_on = time.monotonic()
        flagged = probe.wait_for(lambda: bool(probe.fail_slow_lines(slow)[0]), WINDOW_SEC + 10)
        time.sleep(2 * INTERVAL_SEC)
        samples = probe.samples()
        host.set_delays({})
        said = probe.log("", "fail-slow")
        intervals = _intervals_until_flagged(probe, slow, delay_on + INTERVAL_SEC)
    medians = {device: statistics.median(ratios([s for s in healthy if s.device == device]) or
                                         [float("nan")]) for device in host.devices}  # fmt: skip
    judged = {device: len(ratios([s for s in healthy if s.device == device]))
              for device in host.devices}  # fmt: skip
    slowed = ratios([s for s in between(samples, delay_on + 2 * INTERVAL_SEC, time.monotonic())
                     if s.device == slow])  # fmt: skip
    print(f"\nhealthy: judged intervals {judged}, median ratios {medians}; {slow} +{SLOW_MS} ms: "
          f"flagged after {intervals} intervals, median ratio "
          f"{statistics.median(slowed) if slowed else float('nan'):.1f}")  # fmt: skip
    # Before the delay every device was judged in most intervals, and none looked slow.
    assert all(count >= WARMUP_SEC / INTERVAL_SEC / 2 for count in judged.values()), judged
    assert all(median < HEALTHY_MAX_MEDIAN for median in medians.values()), medians
    assert not [s for s in healthy if s.fail_slow]
    # Slowed: flagged within the window (in intervals: 1 s each), and only it.
    assert flagged and intervals is not None and intervals <= WINDOW_SEC / INTERVAL_SEC, said
    assert not [s for s in samples if s.fail_slow and s.device != slow]
    assert [line for _, line in said if f" {slow} " in line] and all(
        f" {slow} " in line for _, line in said), said  # fmt: skip
    assert slowed and statistics.median(slowed) > 10, slowed  # its ratio reads the slowdown


@pytest.mark.slow  # 18 s of real gaps: the installed command measures them on its own clock
def test_one_long_gap_under_trigger_stdin_flags_nothing(tmp_path: Path) -> None:
    # A suspended VM, a stalled agent, a long gap between two `--trigger stdin` lines: four
    # identical disks, three quick batches of equal load, then one batch 16 s later in which
    # one disk's await was 10x its peers' over 100 requests. Weighed by its length, that one
    # interval was 90 % of the active time and turned the disk fail-slow alone.
    disks = ("sda", "sdb", "sdc", "sdd")
    for disk in disks:
        add_sys_block(tmp_path / "sys", disk, device__model="ST8000", queue__rotational="1")
    counters = dict.fromkeys(disks, (0, 0))

    def write(reads: int, slow_factor: float) -> None:
        lines = []
        for minor, disk in enumerate(disks):
            done, ms = counters[disk]
            factor = slow_factor if disk == "sdd" else 1.0
            done, ms = done + reads, ms + round(reads * 8 * factor)
            counters[disk] = (done, ms)
            lines.append(reads_line(8, minor * 16, disk, done, ms))
        write_diskstats(tmp_path / "proc", lines)

    config = tmp_path / "diskprobe.toml"
    config.write_text(f'interval = "500ms"\nstate_file = "{tmp_path / "state.json"}"\n'
                      '[io]\nfail_slow_window = "1m"\n[filesystems]\nenabled = false\n'
                      "[smart]\nenabled = false\n[pressure]\nenabled = false\n"
                      "[process_io]\nenabled = false\n[cgroup_io]\nenabled = false\n")  # fmt: skip
    env = {"HOST_PROC": str(tmp_path / "proc"), "HOST_SYS": str(tmp_path / "sys"),
           "HOST_RUN": str(tmp_path / "run"), "PATH": "/usr/bin:/bin"}  # fmt: skip
    write(0, 1.0)
    process = subprocess.Popen([*fp.diskprobe_command(), "--config", str(config), "--trigger",
                                "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert process.stdin is not None
    for step, (pause, reads, factor) in enumerate([(0.0, 0, 1.0), (0.5, 20, 1.0), (0.5, 20, 1.0),
                                                  (0.5, 20, 1.0), (16.0, 100, 10.0)]):  # fmt: skip
        time.sleep(pause)
        if step:
            write(reads, factor)
        process.stdin.write("\n")
        process.stdin.flush()
    time.sleep(1.0)
    out, err = process.communicate(timeout=30)  # closes stdin: the end of the run
    points = [parse_line(line) for line in out.splitlines() if line.startswith("diskprobe_io,")]
    last = {p.tags["device"]: p.fields for p in points}
    assert last["sdd"]["slowdown_ratio"] == pytest.approx(10.0)  # judged, as one interval
    assert not [p for p in points if p.fields.get("fail_slow") is True], out
    assert "fail-slow" not in err, err
