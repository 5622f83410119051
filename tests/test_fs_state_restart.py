"""The forecast window in the state file, end to end: the real `diskprobe` console script.

A 64 MiB tmpfs mounted by the fixture is filled at a steady rate by a thread of the test while
`diskprobe` (interval 500ms, state saved every second) reports it on stdout:

* kill -9 and restart: the first batch of the new process already carries the forecast, so
  the window came back from the state file (fresh, a forecast needs 6 samples: 3 s);
* a damaged state file (truncated, garbage, foreign JSON): one W! line, the file moved to
  state.json.corrupt, a fresh one written with mode 0600, metrics as usual, exit 0;
* an unwritable state_file: $XDG_STATE_HOME/diskprobe/state.json with an I! line; neither
  writable: one W! line and the state kept in memory, metrics as usual.

Root can write anywhere, so "unwritable" is a path whose parent is a regular file. tmpfs is in
the default ignore_fs, hence `ignore_fs = []` in the config. diskprobe stops when its stdin
closes (Telegraf stopping it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Callable, Optional

import pytest

from ci import skip_or_fail
from helpers import run_tool, unmount
from lineproto import Point, parse_lines

pytestmark = [pytest.mark.root, pytest.mark.slow]

MIB = 1024 * 1024
TMPFS_SIZE = "64m"
FILL_RATE = 2 * MIB  # bytes/s into the tmpfs
FILL_CHUNK = 64 * 1024
FILL_CAP = 40 * MIB  # never fill the tmpfs: the tests take well under 20 s of writing
MIN_SAMPLES = 6
START_TIMEOUT = 20.0  # interpreter start-up plus batches, on a loaded 2-core box
EXIT_TIMEOUT = 5.0  # diskprobe exits within a second of stdin EOF; slack for a busy box
RATE_TOLERANCE = 0.25
STATE_FORMAT = "diskprobe-state"


def _require_environment() -> None:
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append("needs root (mounts a tmpfs)")
    missing = [tool for tool in ("mount", "umount") if shutil.which(tool) is None]
    if missing:
        problems.append(f"{', '.join(missing)} not on PATH (package mount / util-linux)")
    if problems:
        skip_or_fail("; ".join(problems))


@pytest.fixture
def tmpfs_mount() -> Iterator[Path]:
    """A 64 MiB tmpfs on a fresh directory; unmounted (lazily if it must) even on failure."""
    _require_environment()
    mount_point = Path(tempfile.mkdtemp(prefix="diskprobe-state-")).resolve()
    try:
        run_tool("mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mount_point))
        yield mount_point
    finally:
        unmount(mount_point)
        if not os.path.ismount(mount_point):
            shutil.rmtree(mount_point, ignore_errors=True)


class FillWriter(threading.Thread):
    """Appends to one file on the mount at FILL_RATE, paced on the monotonic clock."""

    def __init__(self, path: Path) -> None:
        super().__init__(name="fill-writer", daemon=True)
        self.path = path
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.started_at = 0.0
        self._lock = threading.Lock()
        self._written = 0

    def start(self) -> None:
        self.started_at = time.monotonic()
        super().start()

    def rate(self) -> float:
        """The rate really written so far (bytes / elapsed, the test's clock)."""
        with self._lock:
            written = self._written
        return written / (time.monotonic() - self.started_at)

    def run(self) -> None:
        chunk = b"\x5a" * FILL_CHUNK
        try:
            with open(self.path, "wb", buffering=0) as out:
                while self._written + FILL_CHUNK <= FILL_CAP:
                    due = self.started_at + (self._written + FILL_CHUNK) / FILL_RATE
                    if self.stop_event.wait(max(0.0, due - time.monotonic())):
                        return
                    out.write(chunk)
                    with self._lock:
                        self._written += FILL_CHUNK
            raise AssertionError("fill writer reached its cap: the test ran far too long")
        except BaseException as error:  # reported by stop() in the test's thread
            self.error = error

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=10.0)
        assert not self.is_alive(), "fill writer did not stop"
        if self.error is not None:
            raise AssertionError(f"fill writer failed: {self.error!r}") from self.error


def _diskprobe_command() -> list[str]:
    script = Path(sys.executable).parent / "diskprobe"
    assert script.is_file() and os.access(script, os.X_OK), f"no console script at {script}"
    return [str(script)]


class Probe:
    """`diskprobe --config FILE` running; stdin a held-open pipe, stdout/stderr read by threads."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [*_diskprobe_command(), "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._lock = threading.Lock()
        self._stdout: list[str] = []
        self._stderr: list[str] = []
        assert self.process.stdout is not None and self.process.stderr is not None
        self._threads = [
            threading.Thread(target=self._read, args=(self.process.stdout, self._stdout)),
            threading.Thread(target=self._read, args=(self.process.stderr, self._stderr)),
        ]
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def _read(self, stream: IO[bytes], lines: list[str]) -> None:
        for raw in iter(stream.readline, b""):
            if raw.endswith(b"\n"):  # a line cut short by kill -9 is not a line
                with self._lock:
                    lines.append(raw.decode("utf-8", errors="replace"))

    @property
    def stderr(self) -> str:
        with self._lock:
            return "".join(self._stderr)

    def log_lines(self, prefix: str) -> list[str]:
        return [line.rstrip("\n") for line in self.stderr.splitlines() if line.startswith(prefix)]

    def batches(self) -> list[list[Point]]:
        """Complete batches so far; a batch ends with its diskprobe_agent point."""
        with self._lock:
            text = "".join(self._stdout)
        batches: list[list[Point]] = []
        current: list[Point] = []
        for point in parse_lines(text):
            current.append(point)
            if point.measurement == "diskprobe_agent":
                batches.append(current)
                current = []
        return batches

    def fs_points(self, mount_point: Path) -> list[Point]:
        """The diskprobe_fs point for `mount_point` of each batch that has one, in order."""
        return [
            point
            for batch in self.batches()
            for point in batch
            if point.measurement == "diskprobe_fs" and point.tags.get("path") == str(mount_point)
        ]

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None:
                raise AssertionError(
                    f"diskprobe exited ({self.process.returncode}) before {what}; "
                    f"stderr:\n{self.stderr}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout} s; stderr:\n{self.stderr}")
            time.sleep(0.05)

    def stop(self) -> tuple[int, float]:
        """Close stdin (Telegraf's way to stop it): (exit code, seconds it took)."""
        assert self.process.stdin is not None
        started = time.monotonic()
        self.process.stdin.close()
        try:
            code = self.process.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"diskprobe still running {EXIT_TIMEOUT} s after stdin EOF; stderr:\n{self.stderr}"
            ) from None
        self._join()
        return code, time.monotonic() - started

    def kill9(self) -> int:
        self.process.send_signal(signal.SIGKILL)
        code = self.process.wait(timeout=10.0)
        self._join()
        return code

    def _join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=5.0)

    def cleanup(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10.0)
        streams: list[Optional[IO[bytes]]] = [
            self.process.stdin,
            self.process.stdout,
            self.process.stderr,
        ]
        for stream in streams:
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@pytest.fixture
def start_probe() -> Iterator[Callable[[Path, dict[str, str]], Probe]]:
    """Starts diskprobe processes; any still running at the end is killed (by its own pid)."""
    started: list[Probe] = []

    def start(config: Path, env: dict[str, str]) -> Probe:
        probe = Probe(config, env)
        started.append(probe)
        return probe

    yield start
    for probe in started:
        probe.cleanup()


def _env(tmp_path: Path, xdg_state_home: Path | None = None) -> dict[str, str]:
    """This machine's /proc (no Telegraf HOST_* roots); XDG_STATE_HOME always inside tmp."""
    moved = ("HOST_PROC", "HOST_SYS", "HOST_RUN", "HOST_MOUNT_PREFIX")
    env = {key: value for key, value in os.environ.items() if key not in moved}
    env["XDG_STATE_HOME"] = str(xdg_state_home or tmp_path / "xdg-unused")
    return env


def _write_config(directory: Path, mount_point: Path, state_file: Path) -> Path:
    config = directory / "diskprobe.toml"
    config.write_text(
        'interval = "500ms"\n'
        f"state_file = {json.dumps(str(state_file))}\n"
        'state_save_interval = "1s"\n'
        "\n[io]\nenabled = false\n"
        "\n[filesystems]\n"
        f"mount_points = [{json.dumps(str(mount_point))}]\n"
        "ignore_fs = []\n"
        'forecast_window = "60s"\n'
        f"forecast_min_samples = {MIN_SAMPLES}\n",
        encoding="utf-8",
    )
    return config


def _read_state(state_file: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _persisted_avail(state_file: Path, mount_point: Path) -> list[list[float]]:
    """The persisted avail window of `mount_point`; [] when there is none (yet)."""
    data = _read_state(state_file) or {}
    window = data.get("sections", {}).get("fs_forecast", {}).get(str(mount_point), {})
    points = window.get("avail", []) if isinstance(window, dict) else []
    return points if isinstance(points, list) else []


def _has_forecast(point: Point) -> bool:
    return "fill_rate_bytes_per_sec" in point.fields and "time_to_full_sec" in point.fields


def _number(point: Point, name: str) -> float:
    value = point.fields[name]
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, value)
    return float(value)


def _assert_fresh_state(state_file: Path, mount_point: Path) -> None:
    data = _read_state(state_file)
    assert data is not None, f"{state_file} is not valid JSON"
    assert data.get("format") == STATE_FORMAT, data
    assert _persisted_avail(state_file, mount_point), f"no window for {mount_point}: {data}"
    mode = stat.S_IMODE(state_file.stat().st_mode)
    assert mode == 0o600, f"{state_file} has mode {mode:o}"


def test_forecast_resumes_from_the_state_file_after_kill_9(
    tmpfs_mount: Path, tmp_path: Path, start_probe: Callable[[Path, dict[str, str]], Probe]
) -> None:
    state_file = tmp_path / "state.json"
    config = _write_config(tmp_path, tmpfs_mount, state_file)
    writer = FillWriter(tmpfs_mount / "fill.bin")
    writer.start()
    try:
        first = start_probe(config, _env(tmp_path))
        first.wait_for(
            lambda: (
                any(_has_forecast(p) for p in first.fs_points(tmpfs_mount))
                and len(_persisted_avail(state_file, tmpfs_mount)) >= MIN_SAMPLES
            ),
            f"time_to_full_sec on stdout and {MIN_SAMPLES} points in {state_file}",
            START_TIMEOUT,
        )
        # Fresh start: the first batch has two samples (prime + batch), no forecast yet.
        assert not _has_forecast(first.fs_points(tmpfs_mount)[0]), first.fs_points(tmpfs_mount)
        assert first.kill9() == -signal.SIGKILL
        saved = _persisted_avail(state_file, tmpfs_mount)
        assert len(saved) >= MIN_SAMPLES, saved

        second = start_probe(config, _env(tmp_path))
        second.wait_for(
            lambda: bool(second.fs_points(tmpfs_mount)), "diskprobe_fs point", START_TIMEOUT
        )
        resumed = second.fs_points(tmpfs_mount)[0]
        true_rate = writer.rate()
        code, took = second.stop()
    finally:
        writer.stop()
    print(
        f"\nrestart: {len(saved)} points persisted; first batch after restart: "
        f"fill_rate={resumed.fields.get('fill_rate_bytes_per_sec')} "
        f"time_to_full={resumed.fields.get('time_to_full_sec')} "
        f"avail={resumed.fields.get('avail_bytes')}; true rate {true_rate:.0f}; "
        f"exit {code} in {took:.2f}s"
    )
    assert _has_forecast(resumed), f"no forecast in the first batch after restart: {resumed}"
    rate = _number(resumed, "fill_rate_bytes_per_sec")
    assert abs(rate / true_rate - 1) <= RATE_TOLERANCE, (rate, true_rate)
    true_remaining = _number(resumed, "avail_bytes") / true_rate
    ttf = _number(resumed, "time_to_full_sec")
    assert abs(ttf / true_remaining - 1) <= RATE_TOLERANCE, (ttf, true_remaining)
    assert code == 0, second.stderr
    # The window carried on: the oldest persisted sample is still its first point.
    after = _persisted_avail(state_file, tmpfs_mount)
    assert after[0] == saved[0] and len(after) > len(saved), (saved, after)
    for probe in (first, second):
        assert not probe.log_lines("W! ") and not probe.log_lines("E! "), probe.stderr


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "garbage",
        "foreign",
        "nested",  # json.load raises RecursionError, not ValueError, on deep nesting
    ],
)
def test_a_damaged_state_file_is_moved_aside_and_replaced(
    damage: str,
    tmpfs_mount: Path,
    tmp_path: Path,
    start_probe: Callable[[Path, dict[str, str]], Probe],
) -> None:
    state_file = tmp_path / "state.json"
    config = _write_config(tmp_path, tmpfs_mount, state_file)
    if damage == "truncated":
        seed = start_probe(config, _env(tmp_path))
        seed.wait_for(
            lambda: len(_persisted_avail(state_file, tmpfs_mount)) >= 3,
            f"3 points in {state_file}",
            START_TIMEOUT,
        )
        assert seed.stop()[0] == 0, seed.stderr
        good = state_file.read_bytes()
        bad = good[: len(good) // 2]
    elif damage == "garbage":
        bad = b"\x00\xff{{ not JSON at all \x1b[0m\n"
    elif damage == "foreign":
        bad = b'{"hello": 1}\n'
    else:  # garbage that is JSON-shaped all the way down
        bad = b"[" * 100_000
    state_file.write_bytes(bad)

    probe = start_probe(config, _env(tmp_path))
    probe.wait_for(
        lambda: len(probe.fs_points(tmpfs_mount)) >= 2, "two diskprobe_fs points", START_TIMEOUT
    )
    code, took = probe.stop()
    print(f"\n{damage}: exit {code} in {took:.2f}s; stderr: {probe.stderr!r}")
    assert code == 0, probe.stderr
    warnings = probe.log_lines("W! ")
    assert len(warnings) == 1, probe.stderr
    assert str(state_file) in warnings[0] and ".corrupt" in warnings[0], warnings
    assert not probe.log_lines("E! "), probe.stderr
    aside = tmp_path / "state.json.corrupt"
    assert aside.read_bytes() == bad
    _assert_fresh_state(state_file, tmpfs_mount)


def test_unwritable_state_file_falls_back_to_xdg_state_home(
    tmpfs_mount: Path, tmp_path: Path, start_probe: Callable[[Path, dict[str, str]], Probe]
) -> None:
    blocker = tmp_path / "a-regular-file"
    blocker.write_text("not a directory\n", encoding="utf-8")
    configured = blocker / "state.json"
    xdg = tmp_path / "xdg"
    fallback = xdg / "diskprobe" / "state.json"
    config = _write_config(tmp_path, tmpfs_mount, configured)

    probe = start_probe(config, _env(tmp_path, xdg))
    probe.wait_for(
        lambda: len(probe.fs_points(tmpfs_mount)) >= 2 and fallback.exists(),
        f"two diskprobe_fs points and {fallback}",
        START_TIMEOUT,
    )
    code, took = probe.stop()
    print(f"\nxdg fallback: exit {code} in {took:.2f}s; stderr: {probe.stderr!r}")
    assert code == 0, probe.stderr
    notes = [line for line in probe.log_lines("I! ") if "state" in line]
    assert len(notes) == 1, probe.stderr
    assert str(configured) in notes[0] and str(fallback) in notes[0], notes
    assert not probe.log_lines("W! ") and not probe.log_lines("E! "), probe.stderr
    _assert_fresh_state(fallback, tmpfs_mount)
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"


def test_no_writable_state_location_keeps_state_in_memory(
    tmpfs_mount: Path, tmp_path: Path, start_probe: Callable[[Path, dict[str, str]], Probe]
) -> None:
    blocker = tmp_path / "a-regular-file"
    blocker.write_text("not a directory\n", encoding="utf-8")
    configured = blocker / "state.json"
    config = _write_config(tmp_path, tmpfs_mount, configured)

    probe = start_probe(config, _env(tmp_path, blocker / "xdg"))
    probe.wait_for(
        lambda: len(probe.fs_points(tmpfs_mount)) >= 2, "two diskprobe_fs points", START_TIMEOUT
    )
    code, took = probe.stop()
    print(f"\nno state location: exit {code} in {took:.2f}s; stderr: {probe.stderr!r}")
    assert code == 0, probe.stderr
    warnings = probe.log_lines("W! ")
    assert len(warnings) == 1, probe.stderr
    assert str(configured) in warnings[0] and str(blocker / "xdg") in warnings[0], warnings
    assert not probe.log_lines("E! "), probe.stderr
    assert not list(tmp_path.rglob("state.json")), list(tmp_path.rglob("*"))
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"
