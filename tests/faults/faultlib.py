"""Fault-injection suite helpers: each case runs the installed `diskprobe` command against a fake
host (HOST_PROC/HOST_SYS trees), fake child programs, a local unprivileged user or a
misbehaving loopback server, and checks what a fleet would see: stdout, stderr, exit status,
files left behind, whether it ended (a 60 s hang guard; what a stop or a read costs in time
is measured by tests/bench/bench_stop.py, never asserted).

Every case here failed on the code before the hardening issue (#11) and passes after it.
To check that again, run a case against an older source tree: the command is the installed
console script, which imports `diskprobe` through sys.path, so PYTHONPATH wins:

    git archive <old commit> plugin | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/plugin .venv/bin/pytest tests/faults/test_x.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import pytest

TESTS = Path(__file__).resolve().parent.parent
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
FAKE_SMARTCTL_CASES = TESTS / "fake_smartctl" / "cases"
DISKPROBE = Path(sys.executable).parent / "diskprobe"

# A small but complete host: two disks (one 17-field line, one 11-field partition), PSI.
DISKSTATS = (
    "   8       0 sda 3462 1109 219406 1550 7719 5462 315706 8713 0 9592 10263 "
    "0 0 0 0 120 35\n"
    "   8       1 sda1 3386 1109 215366 1530 7714 5462 315706 8712 0 9576 10242\n"
)
MOUNTINFO = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
PRESSURE_IO = (
    "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=500\n"
)


@dataclass
class FakeHost:
    """A HOST_PROC / HOST_SYS / HOST_RUN tree a case can break as it needs."""

    root: Path

    @property
    def proc(self) -> Path:
        return self.root / "proc"

    @property
    def sys(self) -> Path:
        return self.root / "sys"

    def env(self) -> dict[str, str]:
        return {
            "HOST_PROC": str(self.proc),
            "HOST_SYS": str(self.sys),
            "HOST_RUN": str(self.root / "run"),
        }

    def write(self, relative: str, data: str | bytes) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
        return path


def make_fake_host(root: Path, diskstats: str = DISKSTATS) -> FakeHost:
    """A small host tree under `root` (the fixture's, and tests/bench/bench_stop.py's)."""
    host = FakeHost(root)
    host.write("proc/diskstats", diskstats)
    host.write("proc/1/mountinfo", MOUNTINFO)
    host.write("proc/self/mountinfo", MOUNTINFO)
    host.write("proc/pressure/io", PRESSURE_IO)
    (host.sys / "class" / "block").mkdir(parents=True)
    (host.sys / "fs" / "cgroup").mkdir(parents=True)
    (host.root / "run").mkdir()
    return host


@pytest.fixture
def fake_host(tmp_path: Path) -> FakeHost:
    return make_fake_host(tmp_path / "host")


def diskprobe_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a diskprobe under test: this one, minus what would leak state in."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HOST_")}
    env.update(extra or {})
    return env


def run_diskprobe(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    """Run the installed command to completion (for --once, config errors, ...)."""
    return subprocess.run(
        [str(DISKPROBE), *args],
        env=diskprobe_env(env),
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_diskprobe(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    stdin: int | None = subprocess.PIPE,
    stdout: int | None = subprocess.PIPE,
) -> subprocess.Popen[bytes]:
    """Start the installed command in the background (the caller stops it)."""
    return subprocess.Popen(
        [str(DISKPROBE), *args],
        env=diskprobe_env(env),
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
    )


def wait_for(predicate: object, timeout: float, step: float = 0.05) -> bool:
    """Poll `predicate()` until it is true or `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(step)
    return bool(predicate())  # type: ignore[operator]


def assert_no_traceback(stderr: str | bytes) -> None:
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    assert "Traceback" not in text, text[-3000:]


@pytest.fixture
def reap() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a case started; killed (whole group where they have one) at the end."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)
