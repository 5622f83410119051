"""diskprobe_fs on this machine's real mounts: df agreement, schema, stuck-mount bookkeeping."""

from __future__ import annotations

import io
import math
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Union

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.compute.mount_selection import MountTarget
from diskprobe.config import PSEUDO_FILESYSTEMS, FilesystemsConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.sources.statfs import StatfsProber, ThreadStatfs, WorkerStatfs
from diskprobe.state import StateStore

from helpers import assert_schema

# Real mounts here: ext4 "/" plus the tmpfs and devtmpfs ones, for more than one sample.
CONFIG = FilesystemsConfig(ignore_fs=[t for t in PSEUDO_FILESYSTEMS if "tmpfs" not in t])
UNRESPONSIVE_FIELDS = {"responsive", "unresponsive_sec"}  # all a mount not answering sends
# The tests that count warnings or errors look at "/" and /dev/shm only: a mount of this host
# that really does not answer (a stale NFS, a dead FUSE) is not theirs to count.
ROOT_AND_SHM = FilesystemsConfig(mount_points=["/", "/dev/shm"], ignore_fs=CONFIG.ignore_fs)

def _same_filesystem(result: object, path: str) -> bool:
    """The helper's statvfs of `path`: its size fields, not its free counts, which another
    process on this shared machine may change between the helper's call and ours."""
    now = os.statvfs(path)
    keys = ("f_bsize", "f_frsize", "f_blocks", "f_files", "f_namemax")
    return [getattr(result, key, None) for key in keys] == [getattr(now, key) for key in keys]



def _collector(
    tmp_path: Path, config: FilesystemsConfig = CONFIG, clock: Clock | None = None, **kw: object
) -> tuple[FilesystemsCollector, io.StringIO]:
    stream = io.StringIO()
    log = Logger(stream)
    state = StateStore(str(tmp_path / "state.json"), log)
    context = CollectorContext(HostRoots(), log, state, clock or Clock())
    return FilesystemsCollector(config, context, **kw), stream  # type: ignore[arg-type]


def _df(args: list[str], path: str) -> list[int | str]:
    out = subprocess.run(["df", *args, path], capture_output=True, text=True, check=True).stdout
    values = out.splitlines()[1].split()
    return [int(v) if v.isdigit() else v for v in values]


DfFigures = tuple[list[Union[int, str]], list[Union[int, str]]]  # 3.9: no `|` at run time


def _df_figures(path: str) -> DfFigures | None:
    """df's size, used, avail, Use% and its inode counterparts for the mount at `path`;
    None if df fails (another test's scratch mount, gone meanwhile)."""
    try:
        return (_df(["-B1", "--output=size,used,avail,pcent"], path),
                _df(["--output=itotal,iused,iavail,ipcent"], path))  # fmt: skip
    except subprocess.CalledProcessError:
        return None


def _percent(text: int | str) -> int | None:
    return None if text == "-" else int(str(text).rstrip("%"))


def _within(value: object, first: int | str, second: int | str) -> bool:
    """`value` equals one of df's two readings or lies between them."""
    if not isinstance(first, int) or not isinstance(second, int):
        return False
    return min(first, second) <= value <= max(first, second)  # type: ignore[operator]


def _agrees(metric: Metric, before: DfFigures | None, after: DfFigures | None) -> bool:
    """df ran just before and just after diskprobe's statfs (a sandwich): the sizes must be
    df's exactly, and what other processes change meanwhile (used, avail, free inodes)
    between df's two readings; with nothing written meanwhile, that is equality."""
    if before is None or after is None:
        return False
    f = metric.fields
    (size, used, avail, pcent), (itotal, iused, ifree, ipcent) = before
    (size2, used2, avail2, pcent2), (itotal2, iused2, ifree2, ipcent2) = after
    sizes_ok = f["total_bytes"] == size == size2 and f["inodes_total"] == itotal == itotal2
    counts_ok = all(_within(f[name], a, b) for name, a, b in (
        ("used_bytes", used, used2), ("avail_bytes", avail, avail2),
        ("inodes_used", iused, iused2), ("inodes_free", ifree, ifree2)))  # fmt: skip
    # df prints Use% rounded up; "-" where there is nothing to divide.
    percents_ok = all(
        (name not in f and _percent(a) is None)
        or _within(math.ceil(float(f[name])), _percent(a) or 0, _percent(b) or 0)
        for name, a, b in (("used_percent", pcent, pcent2),
                           ("inodes_used_percent", ipcent, ipcent2))
    )  # fmt: skip
    return sizes_ok and counts_ok and percents_ok


def test_values_match_df_on_this_machines_mounts(tmp_path: Path) -> None:
    """Robust on a busy machine by construction: df before and after each collect, and a
    mount judged on a sandwich it passes (one where it was quiet enough to be consistent;
    a mount that disagrees every time, all 10, is a real disagreement)."""
    collector, _ = _collector(tmp_path)
    metrics = collector.collect().metrics
    assert {m.tags["path"] for m in metrics} >= {"/", "/dev/shm"}
    assert_schema(metrics)
    pending = {m.tags["path"]: m for m in metrics}
    judged = {"/", "/dev/shm"}  # this machine's own: df reads them, whatever runs beside
    assert all(_df_figures(path) is not None for path in judged)
    for _ in range(10):
        before = {path: _df_figures(path) for path in pending}
        fresh = {m.tags["path"]: m for m in collector.collect().metrics}
        after = {path: _df_figures(path) for path in pending}
        # Left out: a path gone from `fresh`, or one df cannot read (another test's scratch
        # mount, unmounted meanwhile, or a FUSE test daemon without statfs): no df to agree with.
        pending = {
            path: fresh[path] for path in pending
            if path in fresh and before[path] is not None and after[path] is not None
            and not _agrees(fresh[path], before[path], after[path])
        }  # fmt: skip
        if not pending:
            break
    assert not pending, {path: m.fields for path, m in pending.items()}


def test_tags_of_the_root_filesystem(tmp_path: Path) -> None:
    collector, _ = _collector(tmp_path)
    root = next(m for m in collector.collect().metrics if m.tags["path"] == "/")
    source = subprocess.run(
        ["findmnt", "-no", "SOURCE,FSTYPE", "/"], capture_output=True, text=True
    )
    if source.returncode == 0:
        device, fstype = source.stdout.split()
        assert root.tags["device"] == device.removeprefix("/dev/") and root.tags["fstype"] == fstype
    assert root.tags["mode"] == ("ro" if os.statvfs("/").f_flag & os.ST_RDONLY else "rw")


class BlockingStatvfs:
    """The OS call as a hung NFS server makes it behave: chosen paths block until released."""

    def __init__(self, hung: str) -> None:
        self.hung, self.release, self.calls = hung, threading.Event(), 0

    def __call__(self, path: str) -> os.statvfs_result:
        if path == self.hung:
            self.calls += 1
            self.release.wait()
        return os.statvfs(path)


def test_stuck_mount_is_reported_unresponsive_once_logged_and_not_probed_again(
    tmp_path: Path,
) -> None:
    statvfs = BlockingStatvfs("/dev/shm")
    prober = StatfsProber(1.0, ThreadStatfs(statvfs))
    collector, log = _collector(tmp_path, ROOT_AND_SHM, prober=prober)
    for _ in range(3):
        by_path = {m.tags["path"]: m for m in collector.collect().metrics}
        assert set(by_path["/dev/shm"].fields) == UNRESPONSIVE_FIELDS
        assert by_path["/dev/shm"].fields["responsive"] is False
        assert by_path["/"].fields["responsive"] is True and "total_bytes" in by_path["/"].fields
    assert statvfs.calls == 1  # at most one outstanding call per mount
    assert (
        log.getvalue().count("W! ") == 1 and "/dev/shm did not answer within 1s" in log.getvalue()
    )
    statvfs.release.set()
    # The blocked call returns in its own thread; until it has, the mount is still stuck.
    deadline = time.monotonic() + 10
    while prober.stuck() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert prober.stuck() == []
    by_path = {m.tags["path"]: m for m in collector.collect().metrics}
    assert by_path["/dev/shm"].fields["responsive"] is True
    assert log.getvalue().count("I! ") == 1 and "answers again" in log.getvalue()
    assert statvfs.calls == 2


def test_statfs_errors_are_counted_and_logged_once(tmp_path: Path) -> None:
    def failing(path: str) -> os.statvfs_result:
        if path == "/dev/shm":
            raise PermissionError(13, "Permission denied")
        return os.statvfs(path)

    collector, log = _collector(
        tmp_path, ROOT_AND_SHM, prober=StatfsProber(1.0, ThreadStatfs(failing))
    )
    for _ in range(2):
        collection = collector.collect()
        assert collection.errors == 1
        assert "/dev/shm" not in {m.tags["path"] for m in collection.metrics}
    assert log.getvalue().count("W! filesystems: statfs /dev/shm: Permission denied") == 1


def test_forecast_fields_appear_after_min_samples(tmp_path: Path) -> None:
    now, avail = [1000.0], [10_000_000]

    def filling(path: str) -> os.statvfs_result:
        # bsize frsize blocks bfree bavail files ffree favail flag namemax: 4 KiB blocks
        return os.statvfs_result((4096, 4096, 50_000_000, avail[0], avail[0], 100, 50, 50, 0, 255))

    config = FilesystemsConfig(mount_points=["/"], forecast_min_samples=3, forecast_window=600.0)
    collector, _ = _collector(
        tmp_path, config, prober=StatfsProber(1.0, ThreadStatfs(filling)),
        clock=Clock(wall_ns=lambda: round(now[0] * 1e9)),
    )
    seen = []
    for _ in range(4):
        seen.append(collector.collect().metrics[0].fields)
        now[0] += 10
        avail[0] -= 25_000  # 100 MB per 10 s
    assert ["fill_rate_bytes_per_sec" in fields for fields in seen] == [False, False, True, True]
    assert seen[-1]["fill_rate_bytes_per_sec"] == pytest.approx(10_240_000.0)
    assert seen[-1]["time_to_full_sec"] == pytest.approx(seen[-1]["avail_bytes"] / 10_240_000.0)
    assert "inodes_time_to_full_sec" not in seen[-1]  # inodes flat


def test_dead_fuse_or_stale_nfs_errors_report_unresponsive(tmp_path: Path) -> None:
    broken = [True]

    def dead(path: str) -> os.statvfs_result:
        if path == "/dev/shm" and broken[0]:
            raise OSError(107, "Transport endpoint is not connected")  # ENOTCONN
        return os.statvfs(path)

    collector, log = _collector(
        tmp_path, ROOT_AND_SHM, prober=StatfsProber(1.0, ThreadStatfs(dead))
    )
    for _ in range(2):
        collection = collector.collect()
        by_path = {m.tags["path"]: m for m in collection.metrics}
        assert set(by_path["/dev/shm"].fields) == UNRESPONSIVE_FIELDS and collection.errors == 1
    broken[0] = False
    by_path = {m.tags["path"]: m for m in collector.collect().metrics}
    assert by_path["/dev/shm"].fields["responsive"] is True
    assert log.getvalue().splitlines() == [
        "W! filesystems: statfs /dev/shm: Transport endpoint is not connected",
        "I! filesystems: statfs /dev/shm works again",
    ]


def test_unresponsive_sec_counts_from_the_first_point_and_restarts_after_an_answer(
    tmp_path: Path,
) -> None:
    now, broken, mounted = [1000.0], [True], [True]

    def dead(path: str) -> os.statvfs_result:
        if path == "/dev/shm" and broken[0]:
            raise OSError(107, "Transport endpoint is not connected")  # ENOTCONN
        return os.statvfs(path)

    shm = MountTarget("/dev/shm", "/dev/shm", "tmpfs", "tmpfs", "rw", 0, 0)
    collector, _ = _collector(
        tmp_path, prober=StatfsProber(1.0, ThreadStatfs(dead)),
        clock=Clock(wall_ns=lambda: round(now[0] * 1e9)),
        targets=lambda: [shm] if mounted[0] else [],
    )

    def seconds(at: float) -> object:
        now[0] = at
        metrics = collector.collect().metrics
        return metrics[0].fields.get("unresponsive_sec", "answers") if metrics else "gone"

    # 10 s points, one 0.4 s late: rounded to the interval it stands for.
    assert [seconds(t) for t in (1000, 1010, 1020.4, 1300)] == [0, 10, 20, 300]
    broken[0] = False
    assert seconds(1310) == "answers"
    broken[0] = True
    assert [seconds(t) for t in (1320, 1330)] == [0, 10]  # a new hang counts from its start
    mounted[0] = False
    assert seconds(1340) == "gone"
    mounted[0] = True
    assert seconds(1350) == 0  # unmounted and mounted again: not the old hang's count
    assert [seconds(t) for t in (1290, 1300)] == [0, 10]  # clock stepped back: never below 0


def test_worker_process_answers_like_statvfs_and_survives_its_own_death() -> None:
    backend = WorkerStatfs()
    try:
        call = backend.start("/")
        assert call.done.wait(10) and _same_filesystem(call.result, "/")
        missing = backend.start("/nonexistent/path")
        assert missing.done.wait(10) and isinstance(missing.result, FileNotFoundError)
        # Several deaths in a row: the dead helper's reader thread may notice its end of file
        # only after the call to the replacement was sent, and must not fail that call.
        for _ in range(5):
            process = backend.helper_process
            assert process is not None
            process.kill()
            process.wait()
            again = backend.start("/")  # a new helper is started
            assert again.done.wait(10) and _same_filesystem(again.result, "/")
            assert backend.helper_process is not process
        helper = backend.helper_process
    finally:
        backend.close()
    assert helper is not None and helper.wait(10) == 0  # end of input: the helper exits


def test_a_dead_helper_fails_only_its_own_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The order CI once hit: a call is sent to the replacement helper before the dead
    helper's reader thread has seen its end of file. Each reader is held at a gate so that
    order is forced, not left to the scheduler."""
    backend = WorkerStatfs()
    real_read = backend._read
    gates: list[threading.Event] = []
    readers: list[threading.Thread] = []

    def gated_read(*args: object) -> None:
        gate = threading.Event()
        gates.append(gate)
        readers.append(threading.current_thread())
        gate.wait(10)
        real_read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "_read", gated_read)
    try:
        first = backend.start("/")
        dead = backend.helper_process
        assert dead is not None
        dead.kill()
        dead.wait()
        second = backend.start("/")  # sent to a replacement; both readers still held
        assert backend.helper_process is not dead and len(gates) == 2
        gates[0].set()  # the dead helper's reader now reaches its end of file ...
        readers[0].join(10)
        assert first.done.is_set()  # answered before the kill, or failed by its reader
        assert not second.done.is_set()  # ... and leaves the replacement's call alone
        gates[1].set()
        assert second.done.wait(10) and _same_filesystem(second.result, "/")
    finally:
        for gate in gates:
            gate.set()
        backend.close()


def test_nan_in_a_stored_window_is_dropped_not_kept_forever(tmp_path: Path) -> None:
    state_path = tmp_path / "state.json"
    state_path.write_text(
        '{"format": "diskprobe-state", "version": 1, "sections": {"fs_forecast": '
        '{"/": {"avail": [[NaN, 1.0], [2.0, 1.0]]}, "/ok": {"avail": [[1.0, 2.0]]}}}}'
    )
    log = Logger(io.StringIO())
    state = StateStore(str(state_path), log)
    context = CollectorContext(HostRoots(), log, state)
    FilesystemsCollector(CONFIG, context, prober=StatfsProber(1.0, ThreadStatfs()))
    assert state.section("fs_forecast") == {"/ok": {"avail": [[1.0, 2.0]]}}


def test_unresponsive_sec_continues_across_a_restart_until_the_mount_answers(
    tmp_path: Path,
) -> None:
    """The wall time a mount was first found hung is in the state file: a restart continues
    from it while the mount still hangs; one that answered since starts at 0 again."""
    now, broken = [1000.0], [True]

    def dead(path: str) -> os.statvfs_result:
        if path == "/dev/shm" and broken[0]:
            raise OSError(107, "Transport endpoint is not connected")  # ENOTCONN
        return os.statvfs(path)

    shm = MountTarget("/dev/shm", "/dev/shm", "tmpfs", "tmpfs", "rw", 0, 0)

    def run(*times: float) -> list[object]:
        """A diskprobe started on the state file, collecting at `times`, then stopped."""
        log = Logger(io.StringIO())
        state = StateStore(str(tmp_path / "state.json"), log)
        context = CollectorContext(HostRoots(), log, state,
                                   Clock(wall_ns=lambda: round(now[0] * 1e9)))  # fmt: skip
        collector = FilesystemsCollector(CONFIG, context, targets=lambda: [shm],
                                         prober=StatfsProber(1.0, ThreadStatfs(dead)))  # fmt: skip
        seen = []
        for at in times:
            now[0] = at
            seen.append(collector.collect().metrics[0].fields.get("unresponsive_sec", "answers"))
        collector.close()
        state.save(force=True)
        state.close()
        return seen

    assert run(1000, 1010) == [0, 10]
    assert run(1600, 1610) == [600, 610]  # restarted 10 minutes later: still the same hang
    broken[0] = False
    assert run(1620) == ["answers"]
    broken[0] = True
    assert run(1700) == [0]  # answered in between: a new hang


@pytest.mark.parametrize("stored", ['{"/dev/shm": NaN}', '{"/dev/shm": "1000"}',
                                    '{"/dev/shm": true}', '[1000]'])  # fmt: skip
def test_a_broken_stored_hang_start_is_dropped(tmp_path: Path, stored: str) -> None:
    state_path = tmp_path / "state.json"
    state_path.write_text('{"format": "diskprobe-state", "version": 1, "sections": '
                          f'{{"fs_unresponsive": {stored}}}}}')  # fmt: skip
    log = Logger(io.StringIO())
    state = StateStore(str(state_path), log)
    FilesystemsCollector(CONFIG, CollectorContext(HostRoots(), log, state),
                         prober=StatfsProber(1.0, ThreadStatfs()))  # fmt: skip
    assert state.section("fs_unresponsive") == {}
