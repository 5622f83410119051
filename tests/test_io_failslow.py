"""Fail-slow through the I/O collector: a HOST_PROC/HOST_SYS/HOST_RUN tree of three identical
hard drives whose /proc/diskstats counters the test advances, one drive taking 5x the time
per request. The fields on diskprobe_io, the W!/I! lines, the state file across a restart,
and a hostile state file through the installed `diskprobe` command.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.io_failslow import STATE_SECTION
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.state import StateStore
from kernel_diskstats import diskstats_line

from helpers import FakeClock, add_sys_block, write_diskstats
from lineproto import parse_lines

MODEL = "ST8000NM0055-1RM112"
DRIVES = {"sda": (8, 0), "sdb": (8, 16), "sdc": (8, 32)}
INTERVAL = 2.0
WINDOW = 60.0  # the smallest fail_slow_window: a quarter of it (15 s) must be active
WALL_START = 1_700_000_000


class Drives:
    """Three drives of one model; each sample adds 200 reads, at 2 ms each, 10 ms on sdc."""

    def __init__(self, root: Path) -> None:
        self.roots = HostRoots(
            proc=str(root / "proc"), sys=str(root / "sys"), run=str(root / "run")
        )
        self.root, self.clock, self.log = root, FakeClock(), io.StringIO()
        self.reads = {name: 0 for name in DRIVES}
        self.read_ms = {name: 0 for name in DRIVES}
        for name in DRIVES:
            add_sys_block(root / "sys", name, device__model=MODEL, queue__rotational="1")
            add_sys_block(root / "sys", f"{name}1", parent=name)
        self.wall = WALL_START

    def collector(self, state: StateStore | None = None) -> IoCollector:
        logger = Logger(self.log)
        clock = Clock(monotonic=self.clock, wall_ns=lambda: self.wall * 10**9)
        config = IoConfig(fail_slow_window=WINDOW)
        return IoCollector(config, CollectorContext(self.roots, logger, state, clock))

    def sample(self, collector: IoCollector, slow_ms: int = 10) -> dict[str, Metric]:
        lines = []
        for name, (major, minor) in DRIVES.items():
            self.reads[name] += 200
            self.read_ms[name] += 200 * (slow_ms if name == "sdc" else 2)
            reads, read_ms = self.reads[name], self.read_ms[name]
            counters = (reads, 0, reads * 8, read_ms, 0, 0, 0, 0, 0, min(read_ms, 99), 0)
            lines.append(diskstats_line(major, minor, name, counters))
            lines.append(diskstats_line(major, minor + 1, f"{name}1", (1, 0, 8, *[0] * 8)))
        write_diskstats(self.root / "proc", lines)
        self.clock.now += INTERVAL
        self.wall += int(INTERVAL)
        return {m.tags["device"]: m for m in collector.collect().metrics}

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.log.getvalue().splitlines() if line.startswith(prefix)]


def test_the_drive_taking_five_times_longer_turns_fail_slow_once(tmp_path: Path) -> None:
    drives = Drives(tmp_path)
    collector = drives.collector()
    drives.sample(collector)
    flagged_at = None
    for number in range(1, 31):
        points = drives.sample(collector)
        if flagged_at is None and points["sdc"].fields["fail_slow"] is True:
            flagged_at = number * INTERVAL
        assert points["sda"].fields["slowdown_ratio"] == 1.0  # vs sdb: the lower of the others
        assert points["sdc"].fields["slowdown_ratio"] == 5.0
        assert points["sda"].fields["fail_slow"] is False
        assert points["sdb"].fields["fail_slow"] is False
        assert "slowdown_ratio" not in points["sda1"].fields  # partitions are not judged
        assert "fail_slow" not in points["sda1"].fields
    # The first sample once a quarter of the window was active (all of it slow): 16 s.
    assert flagged_at is not None and WINDOW / 4 <= flagged_at < WINDOW / 4 + INTERVAL
    [warning] = drives.lines("W!")
    assert warning.startswith("W! io: sdc is fail-slow") and f"hdd:{MODEL}" in warning
    assert drives.lines("I!") == []


def test_the_state_survives_a_restart_and_recovery_is_said_once(tmp_path: Path) -> None:
    drives = Drives(tmp_path)
    path = str(tmp_path / "state.json")
    store = StateStore(path, Logger(drives.log), save_interval=0.0)
    collector = drives.collector(store)
    for _ in range(12):
        drives.sample(collector)
    store.save(force=True)
    store.close()
    saved = json.loads(Path(path).read_text())["sections"][STATE_SECTION]
    assert saved["sdc"]["fail_slow"] is True and saved["sda"]["fail_slow"] is False

    again = StateStore(path, Logger(drives.log), save_interval=0.0)
    restarted = drives.collector(again)
    drives.sample(restarted)  # the first sample of a new process: no rates, no point
    points = drives.sample(restarted)
    assert points["sdc"].fields["fail_slow"] is True  # from the file: no W! again
    assert len(drives.lines("W!")) == 1
    for _ in range(40):
        points = drives.sample(restarted, slow_ms=2)
    assert points["sdc"].fields["fail_slow"] is False
    [recovered] = drives.lines("I! io:")
    assert recovered.startswith("I! io: sdc is no longer fail-slow")


HOSTILE: dict[str, Any] = {
    "sda": {"group": f"hdd:{MODEL}", "fail_slow": "yes"},  # not a bool: dropped
    "sdb": {"group": f"hdd:{MODEL}", "fail_slow": False, "window_sec": WINDOW,
            "window": [[10**30, {"r/12/13": [-5, 2**80]}], "slot", [1, {"../etc": [1, 2]}]],
            "evidence": [[1, {"e/0/0": [1, 2, 3]}]] * 100_000,  # before issue 27: ignored
            "evidence_n": [[1, {"e/0/0": [1, 2, 3, 4]}]] * 100_000},
    "sdc": {"group": f"hdd:{MODEL}", "fail_slow": True, "window_sec": 1e308,
            "window": {"r/12/13": [1, 2]}, "history": [[0, {"w/999/1": [1, 1, 1]}]]},
    "gone": 12,
}  # fmt: skip


def test_a_hostile_fail_slow_section_through_the_installed_command(tmp_path: Path) -> None:
    drives = Drives(tmp_path)
    drives.sample(drives.collector())  # writes the diskstats the command reads
    state = tmp_path / "state.json"
    sections = {STATE_SECTION: HOSTILE}
    state.write_text(json.dumps({"format": "diskprobe-state", "version": 1, "sections": sections}))
    config = tmp_path / "diskprobe.toml"
    config.write_text(
        f'state_file = "{state}"\n[filesystems]\nenabled = false\n[smart]\nenabled = false\n'
        '[io]\nfail_slow_window = "1m"\n'
    )
    script = Path(sys.executable).parent / "diskprobe"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "diskprobe"]
    env = {**os.environ, "HOST_PROC": drives.roots.proc, "HOST_SYS": drives.roots.sys,
           "HOST_RUN": drives.roots.run}  # fmt: skip
    done = subprocess.run(
        [*command, "--config", str(config), "--once", "--interval", "500ms"],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    io_points = [p for p in parse_lines(done.stdout) if p.measurement == "diskprobe_io"]
    points = {p.tags["device"]: p for p in io_points}
    assert set(points) >= set(DRIVES)
    assert points["sdc"].fields["fail_slow"] is True  # its state was well-formed
    assert points["sdb"].fields["fail_slow"] is False
    warnings = [line for line in done.stderr.splitlines() if line.startswith("W!")]
    dropped = f"section {STATE_SECTION}: dropped 2 malformed entries"
    assert any(dropped in warning for warning in warnings), done.stderr
    assert not [line for line in done.stderr.splitlines() if line.startswith("E!")]
    saved = json.loads(state.read_text())["sections"][STATE_SECTION]
    assert len(json.dumps(saved)) < 10_000  # 100,000 evidence slots were not kept


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('fail_slow_ratio = 1.0', "must be at least 1.1"),
        ('fail_slow_ratio = nan', "finite number"),
        ('fail_slow_window = "10s"', "must be 1m to 24h"),
        ('peer_groups = ["sd*"]', "must be a list of lists of device-name globs"),
        ('peer_groups = [[]]', "must be a list of lists of device-name globs"),
        ('peer_groups = [["sd*", 3]]', "must be a list of lists of device-name globs"),
    ],
)
def test_bad_fail_slow_settings_stop_the_start_with_one_line(
    tmp_path: Path, config: str, message: str
) -> None:
    path = tmp_path / "diskprobe.toml"
    path.write_text(f"[io]\n{config}\n")
    script = Path(sys.executable).parent / "diskprobe"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "diskprobe"]
    done = subprocess.run([*command, "--config", str(path), "--once"], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("E! ") and message in line and "[io]" in line, line
