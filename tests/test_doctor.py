"""`diskprobe doctor`: the self-check a new user runs, as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from diskprobe.collectors.smart import NO_DRIVES

from ci import skip_or_fail
from helpers import installed_command

ROOT = Path(__file__).resolve().parent.parent


def _doctor(
    tmp_path: Path, extra: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n{extra}')
    return subprocess.run(
        [sys.executable, "-m", "diskprobe", "doctor", "--config", str(config)],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_healthy_setup_passes_and_reports_what_it_sees(tmp_path: Path) -> None:
    result = _doctor(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert all(line[:5].rstrip() in ("OK", "INFO", "WARN", "FAIL") for line in lines)
    assert f"OK   state file: {tmp_path / 'state.json'}" in lines
    assert any(line.startswith("OK   I/O: ") for line in lines)
    assert any(line.startswith("OK   filesystems: ") and " / " in line + " " for line in lines)
    assert lines[-1].startswith("INFO 0 problem(s)")


def test_missing_proc_files_and_smartctl_fail_with_the_fix(tmp_path: Path) -> None:
    empty_proc = tmp_path / "proc"
    empty_proc.mkdir()
    result = _doctor(
        tmp_path,
        '[smart]\nsmartctl_path = "/nonexistent/smartctl"\n',
        env={"HOST_PROC": str(empty_proc)},
    )
    assert result.returncode == 1
    assert f"FAIL {empty_proc}/diskstats NOT readable" in result.stdout
    assert "FAIL smartctl not found (/nonexistent/smartctl): install smartmontools" in result.stdout
    assert "Traceback" not in result.stderr


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _doctor(tmp_path, "[smart]\nconcurency = 2\n")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "unknown key 'concurency' (closest valid key: 'concurrency')"
    )


FAKE_SMARTCTL = ROOT / "tests" / "fake_smartctl" / "smartctl"
ONE_DRIVE = ROOT / "tests" / "fake_smartctl" / "cases" / "pysmart-text-sat-hikvision-hs-ssd-c100"
SMART_ONLY = """
[io]
enabled = false
[filesystems]
enabled = false
[process_io]
enabled = false
[cgroup_io]
enabled = false
[pressure]
enabled = false
[smart]
smartctl_path = "{smartctl}"
"""


def _once_with_drives(tmp_path: Path, cases: list[Path]) -> subprocess.CompletedProcess[str]:
    """`--once` with SMART only, smartctl replaying `cases` (none: a VM's virtio disk)."""
    drives = tmp_path / "drives"
    drives.mkdir()
    for case in cases:
        (drives / case.name).symlink_to(case)
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n'
                      + SMART_ONLY.format(smartctl=FAKE_SMARTCTL))  # fmt: skip
    return subprocess.run(
        [*installed_command(), "--once", "--config", str(config)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "FAKE_SMARTCTL_DIR": str(drives)},
    )  # fmt: skip


def test_once_without_smart_drives_says_why_in_one_info_line(tmp_path: Path) -> None:
    result = _once_with_drives(tmp_path, [])
    assert result.returncode == 0, result.stderr
    assert "diskprobe_smart," not in result.stdout
    said = [line for line in result.stderr.splitlines() if "no drives found" in line]
    assert said == [f"I! {NO_DRIVES}"], result.stderr
    assert "diskprobe doctor" in said[0]


def test_once_with_a_drive_says_nothing_of_the_kind(tmp_path: Path) -> None:
    result = _once_with_drives(tmp_path, [ONE_DRIVE])
    assert result.returncode == 0, result.stderr
    assert "diskprobe_smart," in result.stdout
    assert "no drives found" not in result.stderr


def test_doctor_explains_an_empty_scan(tmp_path: Path) -> None:
    drives = tmp_path / "drives"
    drives.mkdir()
    result = _doctor(tmp_path, SMART_ONLY.format(smartctl=FAKE_SMARTCTL),
                     env={"FAKE_SMARTCTL_DIR": str(drives)})  # fmt: skip
    assert "INFO SMART drives found by --scan-open: 0" in result.stdout
    assert "INFO no SMART-capable drives: virtual disks (virtio" in result.stdout


def _proc_with_delayacct(tmp_path: Path, value: str | None) -> Path:
    """A HOST_PROC whose kernel.task_delayacct is `value` (None: a kernel before 5.14)."""
    proc = tmp_path / "proc"
    (proc / "1").mkdir(parents=True)
    (proc / "diskstats").write_text("")
    (proc / "1" / "mountinfo").write_text("")
    if value is not None:
        (proc / "sys" / "kernel").mkdir(parents=True)
        (proc / "sys" / "kernel" / "task_delayacct").write_text(value + "\n")
    return proc


def test_doctor_says_how_to_turn_delay_accounting_on_and_what_it_costs(tmp_path: Path) -> None:
    said = {}
    for value in ("0", "1", None):
        proc = _proc_with_delayacct(tmp_path / str(value), value)
        result = _doctor(proc.parent, "[smart]\nenabled = false\n", env={"HOST_PROC": str(proc)})
        said[value] = [line for line in result.stdout.splitlines() if "delay" in line]
    (off,) = said["0"]
    assert off.startswith("INFO kernel.task_delayacct = 0: process_io cannot rank processes")
    assert "`delayacct`" in off and "sysctl -w kernel.task_delayacct=1" in off
    assert "only processes started after it are counted" in off and "cost" in off.lower()
    assert said["1"] == ["OK   delay accounting on: process_io reports blkio_wait_ratio"]
    assert said[None] == ["INFO no kernel.task_delayacct (kernel before 5.14): delay accounting "
                          "is on unless booted with nodelayacct"]  # fmt: skip
    proc = _proc_with_delayacct(tmp_path / "disabled", "0")
    result = _doctor(proc.parent, "[smart]\nenabled = false\n[process_io]\nenabled = false\n",
                     env={"HOST_PROC": str(proc)})  # fmt: skip
    assert "delay" not in result.stdout  # nothing to advise when process_io is off


def test_doctor_says_whether_it_may_read_what_jobs_wait_on(tmp_path: Path) -> None:
    """[jobs] with a match: OK as root; WARN with the fix when CAP_SYS_PTRACE is dropped (a
    container's root); INFO when there is nothing to look for."""
    if os.geteuid() != 0:
        skip_or_fail("needs root, to drop CAP_SYS_PTRACE from it")
    assert "jobs: watching 1 match pattern(s); CAP_SYS_PTRACE: blocked calls readable" in _doctor(
        tmp_path, '[jobs]\nmatch = ["train"]\n').stdout
    config = tmp_path / "diskprobe.toml"  # the one _doctor just wrote
    dropped = subprocess.run(["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace",
                              sys.executable, "-m", "diskprobe", "doctor", "--config",
                              str(config)], capture_output=True, text=True, timeout=120)
    line = next(line for line in dropped.stdout.splitlines() if " jobs: " in line)
    assert line.startswith("WARN jobs: what other users' jobs' threads wait on is unreadable")
    assert "--cap-add SYS_PTRACE" in line
    assert "INFO jobs: no accelerator node under /dev" in _doctor(tmp_path).stdout
