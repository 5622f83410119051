"""The installed `diskprobe`, run as Telegraf's execd would, watching only given loop devices.

For tests/test_failslow_devices.py and tests/bench/bench_failslow.py: the config judges the
devices as one peer group (`[io] peer_groups`; loop devices are never grouped on their own and
are excluded by default), with a short `fail_slow_window`. Each stdout line and stderr line is
kept with the monotonic time it arrived, so a test can tell how long after a change of delay
the W! line or the first `fail_slow=true` came.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Callable, NamedTuple, Optional

from lineproto import Point, parse_line

IO_MEASUREMENT = "diskprobe_io"
STOP_TIMEOUT_SEC = 10.0
Lines = list[tuple[float, str]]  # (time.monotonic() it arrived, the line without its newline)


def diskprobe_command() -> list[str]:
    """The console script next to this interpreter (what pip installed), as the other tests."""
    script = Path(sys.executable).parent / "diskprobe"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "diskprobe"]


def config_text(devices: list[str], state_file: Path, interval: str, window: str) -> str:
    names = ", ".join(f'"{device}"' for device in devices)
    return (
        f'interval = "{interval}"\nstate_file = "{state_file}"\n\n'
        # exclude = []: the default leaves out loop*; devices: only ours, not the others'
        # loop devices (other tests on this machine may have some)
        f"[io]\nexclude = []\ndevices = [{names}]\npeer_groups = [[{names}]]\n"
        f'fail_slow_window = "{window}"\n\n'
        "[filesystems]\nenabled = false\n\n[smart]\nenabled = false\n\n"
        "[pressure]\nenabled = false\n\n[process_io]\nenabled = false\n\n"
        "[cgroup_io]\nenabled = false\n"
    )


class Sample(NamedTuple):
    """One diskprobe_io point of a judged device, with the time it arrived."""

    arrived: float  # time.monotonic()
    time_ns: int  # the point's timestamp: the same for every point of one batch
    device: str
    ratio: Optional[float]  # slowdown_ratio; None when diskprobe left it out
    fail_slow: bool
    await_ms: float
    reads_per_sec: float
    writes_per_sec: float


def _sample(arrived: float, point: Point) -> Sample:
    fields = point.fields
    ratio = fields.get("slowdown_ratio")

    def number(name: str) -> float:
        value = fields.get(name, 0.0)
        return float(value) if isinstance(value, (int, float)) else 0.0

    return Sample(
        arrived,
        point.time_ns,
        point.tags["device"],
        float(ratio) if isinstance(ratio, (int, float)) else None,
        fields.get("fail_slow") is True,
        number("await_ms"),
        number("reads_per_sec"),
        number("writes_per_sec"),
    )


class Diskprobe:
    """`diskprobe --config ...` with stdin a pipe (EOF ends it); output read by threads."""

    def __init__(self, workdir: Path, devices: list[str], interval: str, window: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "diskprobe.toml"
        config.write_text(config_text(devices, workdir / "state.json", interval, window))
        self.devices = devices
        self.stdout: list[tuple[float, str]] = []
        self.stderr: list[tuple[float, str]] = []
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
        self.process = subprocess.Popen(
            [*diskprobe_command(), "--config", str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        self._threads = [
            threading.Thread(target=_read, args=(stream, lines), daemon=True)
            for stream, lines in (
                (self.process.stdout, self.stdout),
                (self.process.stderr, self.stderr),
            )
        ]
        for thread in self._threads:
            thread.start()

    def samples(self, since: float = 0.0) -> list[Sample]:
        """The diskprobe_io points of our devices that arrived at or after `since`."""
        found = []
        for arrived, line in list(self.stdout):
            if arrived >= since and line.startswith(IO_MEASUREMENT + ","):
                point = parse_line(line)
                if point.measurement == IO_MEASUREMENT and point.tags["device"] in self.devices:
                    found.append(_sample(arrived, point))
        return found

    def log(self, prefix: str, text: str = "") -> Lines:
        """stderr lines starting with `prefix` ("W! ") that contain `text`."""
        lines = list(self.stderr)
        return [(t, line) for t, line in lines if line.startswith(prefix) and text in line]

    def fail_slow_lines(self, device: str) -> tuple[Lines, Lines]:
        """(W! lines saying `device` turned fail-slow, I! lines saying it recovered)."""
        return (
            self.log("W! ", f"io: {device} is fail-slow"),
            self.log("I! ", f"io: {device} is no longer fail-slow"),
        )

    def wait_for(self, done: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not done():
            if self.process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> int:
        """EOF on stdin, as when Telegraf stops; killed if it does not exit in time."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            code = self.process.wait(STOP_TIMEOUT_SEC)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(STOP_TIMEOUT_SEC)
        for thread in self._threads:
            thread.join(STOP_TIMEOUT_SEC)
        return code


def _read(stream: Optional[IO[bytes]], lines: list[tuple[float, str]]) -> None:
    assert stream is not None
    with contextlib.suppress(OSError, ValueError):
        for raw in iter(stream.readline, b""):
            lines.append((time.monotonic(), raw.decode("utf-8", errors="replace").rstrip("\n")))


@contextlib.contextmanager
def running_diskprobe(
    workdir: Path, devices: list[str], interval: str = "2s", window: str = "1m"
) -> Iterator[Diskprobe]:
    probe = Diskprobe(workdir, devices, interval, window)
    try:
        yield probe
    finally:
        probe.stop()


def between(samples: list[Sample], start: float, end: float) -> list[Sample]:
    return [sample for sample in samples if start <= sample.arrived < end]


def ratios(samples: list[Sample]) -> list[float]:
    return [sample.ratio for sample in samples if sample.ratio is not None]


def ratio_summary(samples: list[Sample]) -> str:
    """A report line's figures: `n=12 undefined=0 median=5.10 max=5.90 >=2: 100%`."""
    found = ratios(samples)
    if not found:
        return f"n=0 undefined={len(samples)}"
    slow = sum(1 for ratio in found if ratio >= 2.0) / len(found)
    return (
        f"n={len(found)} undefined={len(samples) - len(found)} "
        f"median={statistics.median(found):.2f} max={max(found):.2f} >=2: {slow:.0%}"
    )


def await_ratios(samples: list[Sample], device: str) -> list[float]:
    """Per batch, `device`'s await_ms over the median of the other devices' (the truth that
    slowdown_ratio estimates, from the same points)."""
    batches: dict[int, dict[str, float]] = {}
    for sample in samples:
        batches.setdefault(sample.time_ns, {})[sample.device] = sample.await_ms
    found = []
    for awaits in batches.values():
        others = [value for name, value in awaits.items() if name != device]
        if device in awaits and others and statistics.median(others) > 0:
            found.append(awaits[device] / statistics.median(others))
    return found


def median_of(samples: list[Sample], device: str, field: str) -> float:
    values = [float(getattr(s, field)) for s in samples if s.device == device]
    return round(statistics.median(values), 2)


def per_device(samples: list[Sample], devices: list[str]) -> str:
    """One report line per device: its slowdown_ratio summary."""
    return "\n".join(
        f"  {device}: slowdown_ratio {ratio_summary([s for s in samples if s.device == device])}"
        for device in devices
    )
