"""The state file under damage, bloat, links and a second instance (issue #11, items 1, 4, 14).

- a section of the wrong shape is dropped with one W! naming it, and its consumer works;
- a state file over MAX_BYTES is moved aside unread (a 100 MB one cannot inflate the RSS);
- a state file or directory that is a link another user planted is not followed;
- two processes on one state file: the second says so, keeps its state in memory and takes
  the file over (merging it) once the first is gone;
- fuzzing: whatever bytes the file holds, the store ends usable with well-formed sections.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stoplib import Probe

from diskprobe.log import Logger
from diskprobe.smart.memory import DriveMemory
from diskprobe.smart.model import DriveHealth
from diskprobe.state import StateStore

from faultlib import DISKPROBE, FakeHost, diskprobe_env, run_diskprobe, wait_for
from helpers import FIXTURES, memory_scratch
from mutations import json_mutated

NOBODY = 65534
MAX_BYTES = 16 * 1024 * 1024  # diskprobe.state.MAX_BYTES, as docs/filesystems.md documents it


def _envelope(sections: Any) -> str:
    return json.dumps({"format": "diskprobe-state", "version": 1, "sections": sections})


def _store(path: Path, xdg: Path | None = None) -> tuple[StateStore, io.StringIO]:
    log = io.StringIO()
    env = {"XDG_STATE_HOME": str(xdg or path.parent / "xdg")}
    return StateStore(str(path), Logger(log), 0.0, env=env), log


def _warnings(log: io.StringIO) -> list[str]:
    return [line for line in log.getvalue().splitlines() if line.startswith("W! ")]


def _drive() -> DriveHealth:
    health = DriveHealth(device="sda", model="M", serial="S", protocol="ata", media="hdd")
    health.counters["reallocated_sectors"] = 8
    return health


# -- item 14: a section of the wrong shape -----------------------------------------------------


def test_wrong_shape_smart_baselines_is_dropped_once_and_smart_works(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(_envelope({"smart_baselines": {"M|S": 5}, "smart_last": ["sda"]}))
    store, log = _store(path)
    memory = DriveMemory(store)
    for _ in range(3):  # before the fix: AttributeError on every read, forever
        assert memory.increases(_drive()) == {"reallocated_sectors": 0}
    memory.remember_identity(_drive())
    warnings = _warnings(log)
    assert len(warnings) == 2, log.getvalue()
    assert "smart_baselines" in warnings[0] and "smart_last" in warnings[1]
    store.save(force=True)
    saved = json.loads(path.read_text())["sections"]
    assert saved["smart_baselines"] == {"M|S": {"reallocated_sectors": 8}}


# -- item 4: the size bound --------------------------------------------------------------------


def test_state_file_over_the_bound_is_moved_aside_unread(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    foreign = {"someone_elses": {"blob": "x" * (MAX_BYTES + 1)}}
    path.write_text(_envelope(foreign))
    store, log = _store(path)
    assert store.sections == {}
    assert len(_warnings(log)) == 1 and "larger than" in _warnings(log)[0], log.getvalue()
    assert (tmp_path / "state.json.corrupt").stat().st_size > MAX_BYTES
    store.section("fs_forecast")["/"] = {"avail": [[1.0, 2.0]]}
    store.save(force=True)
    assert path.stat().st_size < 1000


class ReadWatch:
    """inotify IN_ACCESS on one file: whether anything read its content since the watch began
    (a read of any size raises one; the watch follows the inode through a rename)."""

    IN_ACCESS = 0x1

    def __init__(self, path: Path) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0 or self._libc.inotify_add_watch(
            self._fd, os.fsencode(path), self.IN_ACCESS
        ) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {path}")

    def reads(self) -> int:
        """The IN_ACCESS events queued (identical ones in a row are merged into one)."""
        count = 0
        with contextlib.suppress(BlockingIOError):
            data = os.read(self._fd, 1 << 16)
            offset = 0
            while offset < len(data):  # struct inotify_event: wd, mask, cookie, len, name
                _, mask, _, length = struct.unpack_from("iIII", data, offset)
                count += bool(mask & self.IN_ACCESS)
                offset += 16 + length
        return count

    def close(self) -> None:
        os.close(self._fd)


@pytest.mark.slow
def test_100_mb_state_file_is_moved_aside_unread(fake_host: FakeHost, tmp_path: Path) -> None:
    """The installed command sees the size and moves the file aside without reading a byte of
    it: no read at all, rather than a peak RSS under some bound (which a benchmark measures)."""
    state = tmp_path / "state" / "state.json"
    state.parent.mkdir(mode=0o700)
    with open(state, "w") as out:  # valid JSON, right envelope, one huge foreign section
        out.write('{"format":"diskprobe-state","version":1,"sections":{"foreign":[')
        out.write(",".join(['"' + "y" * 1000 + '"'] * 100_000) + "]}}")  # 100 MB
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{state}"\n[smart]\nenabled = false\n')
    watch = ReadWatch(state)
    try:
        result = subprocess.run(
            [str(DISKPROBE), "--config", str(config), "--once", "--interval", "100ms"],
            env=diskprobe_env(fake_host.env()), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        reads = watch.reads()
    finally:
        watch.close()
    assert result.returncode == 0 and "larger than" in result.stderr, result.stderr
    assert (tmp_path / "state" / "state.json.corrupt").stat().st_size > 100_000_000
    assert reads == 0, "the oversized state file was read"


# -- item 1: links -----------------------------------------------------------------------------


def test_state_file_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(_envelope({"fs_forecast": {"/planted": {"avail": [[1.0, 2.0]]}}}))
    path = tmp_path / "state" / "state.json"
    path.parent.mkdir(mode=0o700)
    path.symlink_to(elsewhere)
    store, log = _store(path)
    assert store.section("fs_forecast") == {}, "the link's target was read"
    assert len(_warnings(log)) == 1 and "symlink" in _warnings(log)[0], log.getvalue()
    store.save(force=True)
    assert not path.is_symlink() and "/planted" in elsewhere.read_text()


@pytest.mark.root
def test_state_directory_symlink_planted_by_another_user_is_not_followed(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    """A sticky world-writable parent (like /tmp): `nobody` plants diskprobe's state dir."""
    parent = Path(tempfile.mkdtemp(prefix="diskprobe-state-", dir="/tmp"))
    try:
        parent.chmod(0o1777)
        trap = parent / "trap"
        trap.mkdir()
        os.chown(trap, NOBODY, NOBODY)
        link = parent / "diskprobe"
        link.symlink_to(trap)
        os.lchown(link, NOBODY, NOBODY)
        config = tmp_path / "diskprobe.toml"
        config.write_text(f'state_file = "{link}/state.json"\n[smart]\nenabled = false\n')
        xdg = tmp_path / "xdg"
        env = {**fake_host.env(), "XDG_STATE_HOME": str(xdg)}
        result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env)
        assert result.returncode == 0, result.stderr
        assert os.listdir(trap) == [], "diskprobe wrote into another user's directory"
        assert "symlink owned by uid 65534" in result.stderr, result.stderr
        assert (xdg / "diskprobe" / "state.json").exists()
    finally:
        subprocess.run(["rm", "-rf", str(parent)], check=False)


# -- item 14: two instances on one state file --------------------------------------------------


def test_second_instance_on_one_state_file_says_so_and_takes_over_later(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    state = tmp_path / "state" / "state.json"
    config = tmp_path / "diskprobe.toml"
    config.write_text(
        f'state_file = "{state}"\nstate_save_interval = "200ms"\n'
        '[smart]\nenabled = false\n[process_io]\nenabled = false\n'
    )
    args = ["--config", str(config), "--interval", "100ms"]
    first = Probe(fake_host, args)
    second = None
    try:
        first.wait_log("started")
        assert wait_for(state.exists, 10.0)
        second = Probe(fake_host, args)
        line = second.wait_log("in use by another diskprobe")
        assert line.startswith("W! ") and f"pid {first.process.pid}" in line
        first_window = json.loads(state.read_text())["sections"]["fs_forecast"]["/"]["avail"]
        assert first.stop("SIGTERM")[0] == 0
        second.wait_log("is free now")
        assert wait_for(lambda: _first_point(state) == first_window[0], 10.0)
    finally:
        if second is not None:
            second.stop("SIGTERM")
        if first.process.poll() is None:
            first.stop("SIGTERM")
    assert not any(line.startswith("W! ") for line in first.stderr), first.text_err()


def _first_point(state: Path) -> Any:
    with open(state) as handle:
        return json.load(handle)["sections"]["fs_forecast"]["/"]["avail"][0]


# -- fuzzing the loader ------------------------------------------------------------------------

# A state file the agent wrote (fs_forecast, smart_baselines, smart_last and the sections no
# test here reads), its values swapped for hostile ones, its end cut off now and then
# (tests/mutations.py), or any bytes. It replaced random JSON from st.recursive: Hypothesis
# spent ~4 ms an example building it (all of this test's time) and its sections seldom had
# the shapes the checks look at.
STATE_DOCUMENT = (FIXTURES / "state_agent_run" / "state.json").read_text()


@st.composite
def _content(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    return draw(json_mutated([STATE_DOCUMENT])).encode("utf-8", "surrogateescape")


def _load_and_use(content: bytes) -> None:
    from diskprobe.collectors.filesystems import STATE_SECTION, _valid_windows

    # Every save fsyncs: 10,000 fsyncs on a disk that other tests keep busy measured the
    # disk, not the loader.
    with memory_scratch() as directory:
        path = Path(directory) / "state.json"
        path.write_bytes(content)
        store, _ = _store(path)
        windows = store.section(STATE_SECTION, _valid_windows)
        memory = DriveMemory(store)
        memory.increases(_drive())
        memory.remember_identity(_drive())
        declared = ("fs_forecast", "smart_baselines", "smart_last")
        assert all(isinstance(store.sections[name], dict) for name in declared)
        assert all(_valid_windows(entry) for entry in windows.values())
        baselines = store.sections["smart_baselines"]
        assert all(
            all(isinstance(v, int) for v in entry.values()) for entry in baselines.values()
        )
        store.save(force=True)
        again, log = _store(path)
        assert _warnings(log) == [], log.getvalue()
        again.close()
        store.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_content())
def test_fuzzed_state_file_leaves_a_usable_store(content: bytes) -> None:
    _load_and_use(content)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_content())
def test_fuzzed_state_file_leaves_a_usable_store_10000(content: bytes) -> None:
    _load_and_use(content)
