"""A running diskprobe whose stdout and stderr are read line by line in the background, so a
case can send signals, close stdin and look at what was written up to that moment."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from diskprobe.compute.forecast import ForecastWindow

from ci import HANG_GUARD_SEC
from faultlib import FakeHost, assert_no_traceback, start_diskprobe, wait_for

# Nothing but the collectors with a file to read; a forecast window whose resolution (36 s /
# 360 points = 0.1 s) keeps every 200 ms sample, so the state holds one point per batch.
CONFIG = """
interval = "{interval}"
state_file = "{state}"
state_save_interval = "1h"
[smart]
enabled = false
[process_io]
enabled = false
[filesystems]
forecast_window = "36s"
"""


def write_config(tmp_path: Path, interval: str = "200ms") -> tuple[Path, Path]:
    """A config file and the state file it names."""
    state = tmp_path / "state" / "state.json"
    config = tmp_path / "diskprobe.toml"
    config.write_text(CONFIG.format(interval=interval, state=state))
    return config, state


def forecast_points(state: Path) -> list[list[float]]:
    """The samples (time, avail bytes) of "/" in the state file's forecast window."""
    sections: dict[str, Any] = json.loads(state.read_text())["sections"]
    points: list[list[float]] = sections["fs_forecast"]["/"]["avail"]
    return points


def expected_points(fs_lines: list[str]) -> list[list[float]]:
    """The window those diskprobe_fs lines make, replayed (a sample that comes within the
    window's resolution of the one before replaces it rather than adding a point)."""
    window = ForecastWindow(36.0)
    for line in fs_lines:
        avail = re.search(r"avail_bytes=(\d+)i", line)
        assert avail is not None, line
        window.add(int(line.split()[-1]) / 1e9, float(avail.group(1)))
    return window.points


def assert_same_window(saved: list[list[float]], written: list[list[float]]) -> None:
    """Every written sample is in the state file: same count, same values, same times."""
    assert [p[1] for p in saved] == [p[1] for p in written], (saved, written)
    assert all(abs(a[0] - b[0]) < 0.05 for a, b in zip(saved, written)), (saved, written)


class Probe:
    """The installed command, started against a fake host with a config file."""

    def __init__(self, host: FakeHost, args: list[str], stdout: int | None = subprocess.PIPE):
        self.process = start_diskprobe(args, host.env(), stdout=stdout)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._threads = [self._drain(self.process.stderr, self.stderr)]
        if self.process.stdout is not None:
            self._threads.append(self._drain(self.process.stdout, self.stdout))

    @staticmethod
    def _drain(stream: IO[bytes] | None, into: list[str]) -> threading.Thread:
        def _read() -> None:
            assert stream is not None
            for raw in stream:
                into.append(raw.decode("utf-8", "replace"))

        thread = threading.Thread(target=_read, daemon=True)
        thread.start()
        return thread

    def lines(self, prefix: str) -> list[str]:
        return [line for line in list(self.stdout) if line.startswith(prefix)]

    def count(self, prefix: str) -> int:
        return len(self.lines(prefix))

    def wait_lines(self, prefix: str, count: int, timeout: float = HANG_GUARD_SEC) -> None:
        assert wait_for(lambda: self.count(prefix) >= count, timeout), self.text_err()

    def wait_log(self, needle: str, timeout: float = HANG_GUARD_SEC) -> str:
        assert wait_for(lambda: any(needle in line for line in self.stderr), timeout), (
            self.text_err()
        )
        return next(line for line in self.stderr if needle in line)

    def stop(self, how: str, timeout: float = HANG_GUARD_SEC) -> tuple[int, float]:
        """Send a signal by name, or close stdin ("EOF"); the exit status and seconds taken."""
        started = time.monotonic()
        if how == "EOF":
            assert self.process.stdin is not None
            self.process.stdin.close()
        else:
            self.process.send_signal(getattr(signal, how))
        code = self.process.wait(timeout)
        elapsed = time.monotonic() - started
        for thread in self._threads:
            thread.join(5)
        assert_no_traceback(self.text_err())
        return code, elapsed

    def text_err(self) -> str:
        return "".join(self.stderr)


def shrink_pipe(fd: int, size: int = 4096) -> None:
    """F_SETPIPE_SZ (1031; in fcntl from Python 3.10): a pipe that fills after one page."""
    import fcntl

    fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)


def many_devices(count: int) -> str:
    """diskstats for `count` whole disks: big batches that fill a pipe quickly."""
    return "".join(
        f" 8 {i * 16} sdx{i} 3462 1109 219406 1550 7719 5462 315706 8713 0 9592 10263 "
        "0 0 0 0 120 35\n"
        for i in range(count)
    )
