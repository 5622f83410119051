"""diskprobe.guard.DiskGuard: sizes, thresholds, reasons, caching and the forecast threshold.

statvfs is injected (ThreadStatfs with a fake) so every number is known; mounts are real
(/proc/self/mountinfo), and the path is "/" or a temporary directory; the read-only and
unmounted cases mount real filesystems (root).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from diskprobe.guard import DiskGuard, format_size, parse_size
from diskprobe.sources.statfs import StatfsProber, ThreadStatfs

from ci import skip_or_fail
from helpers import EVERY_CALL, FakeClock, loop_ext4

BLOCK = 4096


class FakeFs:
    """statvfs of a filesystem of `total` bytes with `avail` free (no root reserve)."""

    def __init__(self, total: int, avail: int) -> None:
        self.total, self.avail, self.calls = total, avail, 0

    def __call__(self, path: str) -> os.statvfs_result:
        self.calls += 1
        blocks, free = self.total // BLOCK, self.avail // BLOCK
        return os.statvfs_result((BLOCK, BLOCK, blocks, free, free, 1000, 900, 900, 0, 255))


def _guard(fs: FakeFs, path: str = "/", **kwargs: Any) -> DiskGuard:
    kwargs.setdefault("check_every", EVERY_CALL)
    return DiskGuard(path, prober=StatfsProber(5.0, ThreadStatfs(fs)), **kwargs)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("20GB", 20 * 10**9), ("20G", 20 * 10**9), ("20GiB", 20 * 2**30), ("1.5 MB", 1_500_000),
     ("512", 512), ("512B", 512), ("3kib", 3072), (" 2 TB ", 2 * 10**12), (1000, 1000)],
)  # fmt: skip
def test_parse_size(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "GB", "20XB", "-1GB", "20 G B", "5%", "iB", -3])
def test_parse_size_rejects(text: str | int) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize(
    ("count", "text"),
    [(512, "512 B"), (1_200_000_000, "1.2 GB"), (20 * 10**9, "20 GB"), (123_456_789, "123 MB"),
     (5_000, "5 kB"), (16_666, "16.7 kB")],
)  # fmt: skip
def test_format_size(count: int, text: str) -> None:
    assert format_size(count) == text


def test_ok_above_every_threshold() -> None:
    fs = FakeFs(total=100 * 10**9, avail=30 * 10**9)
    status = _guard(fs, min_free_bytes="20GB", min_free_percent="5%").check()
    assert status.ok and bool(status) and status.reasons == ()
    (path,) = status.paths
    assert path.mount_point == "/" and path.avail_bytes == 30 * 10**9 // BLOCK * BLOCK
    assert path.used_percent == pytest.approx(70.0, abs=0.01)


def test_free_bytes_threshold_and_reason() -> None:
    fs = FakeFs(total=100 * 10**9, avail=1_200_001_024)
    status = _guard(fs, min_free_bytes="20GB").check()
    assert not status.ok
    assert status.reasons == ("/: 1.2 GB free, below 20 GB",)
    assert status.paths[0].reasons == status.reasons


def test_free_percent_threshold_like_df() -> None:
    # used / (used + avail): 96 GB used, 4 GB avail -> 4.0 % free, below 5 % and above 3 %.
    fs = FakeFs(total=100 * 10**9, avail=4 * 10**9)
    assert _guard(fs, min_free_percent=3).check().ok
    status = _guard(fs, min_free_bytes="5%").check()  # a percentage as min_free_bytes
    assert status.reasons == ("/: 4.0% free, below 5%",)


def test_exactly_at_threshold_is_ok() -> None:
    fs = FakeFs(total=100 * BLOCK * 1000, avail=1000 * BLOCK)
    assert _guard(fs, min_free_bytes=1000 * BLOCK).check().ok
    assert not _guard(fs, min_free_bytes=1000 * BLOCK + 1).check().ok


def test_path_resolves_to_its_mount(tmp_path: Path) -> None:
    fs = FakeFs(total=10**9, avail=10**8)
    status = _guard(fs, path=str(tmp_path / "not-yet-created"), min_free_bytes=1).check()
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    real = os.path.realpath(tmp_path)
    expected = max((m for m in mounts if real == m or real.startswith(m.rstrip("/") + "/")),
                   key=len)  # fmt: skip
    assert status.ok and status.paths[0].mount_point == expected


def test_check_every_caches() -> None:
    fs, clock = FakeFs(total=10**9, avail=5 * 10**8), FakeClock()
    guard = _guard(fs, min_free_bytes="100MB", check_every="30s", clock=clock)
    first = guard.check()
    fs.avail = 10**6  # the filesystem fills, but the cached status stands for 30 s
    clock.now += 29
    assert guard.check() is first and fs.calls == 1
    clock.now += 1
    assert not guard.check().ok and fs.calls == 2
    assert not guard.check(force=True).ok and fs.calls == 3


def test_statfs_failure_is_not_ok() -> None:
    def broken(path: str) -> os.statvfs_result:
        raise PermissionError(13, "Permission denied")

    guard = DiskGuard("/", min_free_bytes=1, prober=StatfsProber(5.0, ThreadStatfs(broken)))
    status = guard.check()
    assert not status.ok and status.reasons == ("/: statfs on / failed or did not answer",)


def _fill(guard: DiskGuard, fs: FakeFs, wall: FakeClock, checks: int) -> list[bool]:
    """One check a minute while 1 MB a minute is written."""
    oks = []
    for _ in range(checks):
        oks.append(guard.check().ok)
        wall.now += 60
        fs.avail -= 10**6
    return oks


def test_min_hours_to_full_uses_the_forecast() -> None:
    # 1 GB free, falling by 1 MB a minute: full in ~1000 min = 16.6 h once 6 samples are in.
    wall, fs = FakeClock(1_000_000.0), FakeFs(total=10 * 10**9, avail=10**9)
    guard = _guard(fs, min_hours_to_full=24, wall=wall, forecast_window="1h")
    assert _fill(guard, fs, wall, 8) == [True] * 5 + [False] * 3  # forecast from the 6th
    last = guard.check().paths[0]  # the 9th sample, on the same trend
    assert last.fill_rate_bytes_per_sec == pytest.approx(10**6 / 60, rel=0.01)
    assert last.time_to_full_sec == pytest.approx(last.avail_bytes / (10**6 / 60), rel=0.01)
    assert last.reasons[0].startswith("/: full in 16.")
    assert last.reasons[0].endswith(" h at 16.7 kB/s, below 24 h")
    # A shorter horizon does not trigger on the same trend.
    wall2, fs2 = FakeClock(1_000_000.0), FakeFs(total=10 * 10**9, avail=10**9)
    guard2 = _guard(fs2, min_hours_to_full=10, wall=wall2, forecast_window="1h")
    assert all(_fill(guard2, fs2, wall2, 8))


def test_state_file_keeps_the_window(tmp_path: Path) -> None:
    wall, fs = FakeClock(1_000_000.0), FakeFs(total=10 * 10**9, avail=10**9)
    state = str(tmp_path / "state.json")
    with _guard(fs, min_hours_to_full=24, wall=wall, state_file=state) as guard:
        assert all(_fill(guard, fs, wall, 5))
    # A new guard (a restarted job) continues the window: its first sample is the 6th.
    assert not _guard(fs, min_hours_to_full=24, wall=wall, state_file=state).check().ok
    # Without the state file it starts from nothing.
    assert _guard(fs, min_hours_to_full=24, wall=wall).check().ok


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        DiskGuard([])
    with pytest.raises(ValueError):
        DiskGuard("/", min_free_percent="120%")


@pytest.mark.parametrize(("argument", "value"), [
    ("check_every", float("nan")), ("check_every", float("inf")), ("check_every", -1),
    ("check_every", "-1s"), ("check_every", 0), ("check_every", "0s"),
    ("min_hours_to_full", -1), ("min_hours_to_full", float("nan")),
])  # fmt: skip
def test_a_time_that_cannot_work_is_refused_by_name(argument: str, value: object) -> None:
    """An infinite check_every never measured again (ok after a read-only remount); NaN,
    zero and negative ones and a negative min_hours_to_full were taken silently (issue 37,
    item 7: zero would measure at every batch of a training loop)."""
    with pytest.raises(ValueError, match=argument):
        DiskGuard("/", **{argument: value})  # type: ignore[arg-type]


class _BytesPath:
    def __fspath__(self) -> bytes:
        return b"/"


@pytest.mark.parametrize("path", [b"/", [b"/"], _BytesPath(), Path("/")])
def test_bytes_and_path_like_paths_are_paths(path: Any) -> None:
    """As os takes them (before: b"/" was iterated, and 47 gave a TypeError about int)."""
    fs = FakeFs(total=100 * 10**9, avail=30 * 10**9)
    status = _guard(fs, path, min_free_bytes="20GB").check()
    assert status.ok and [p.path for p in status.paths] == ["/"]
    assert status.paths[0].mount_point == "/"


def test_importing_diskprobe_imports_no_framework() -> None:
    code = (
        "import sys, diskprobe, diskprobe.guard, diskprobe.integrations\n"
        "bad = [m for m in ('keras', 'torch', 'lightning', 'pytorch_lightning', 'tensorflow',"
        " 'jax', 'numpy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- mounts that cannot take a checkpoint (issue #25, item 4), on real mounts -------------------


@pytest.fixture
def mount_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty directory to mount on; whatever is mounted there is unmounted after."""
    if os.geteuid() != 0:
        skip_or_fail("needs root to mount")
    target = tmp_path / "mnt"
    target.mkdir()
    yield target
    while os.path.ismount(target):
        subprocess.run(["umount", "-l", str(target)], check=False)


def _mount_tmpfs(target: Path, options: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=8m,{options}", "tmpfs", str(target)],
                   check=True)  # fmt: skip


def test_a_read_only_filesystem_is_not_ok(mount_dir: Path) -> None:
    _mount_tmpfs(mount_dir, "ro")
    status = DiskGuard(mount_dir / "checkpoints", min_free_bytes=1).check()
    assert not status.ok
    assert status.reasons[0] == f"{mount_dir}/checkpoints: {mount_dir} is mounted read-only"


def test_a_filesystem_remounted_read_only_is_not_ok(mount_dir: Path) -> None:
    """As ext4 does on errors (errors=remount-ro): the filesystem's own flag; the
    superblock's options say "ro"."""
    with loop_ext4(16 * 1024 * 1024, "diskprobe-guard-ro-", skip_or_fail) as point:
        guard = DiskGuard(point, min_free_bytes=1, check_every=EVERY_CALL)
        assert guard.check().ok
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
        try:
            status = guard.check()
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(point)], check=True)
        assert not status.ok and status.reasons == (f"{point}: {point} is mounted read-only",)
        assert guard.check().ok  # writable again
        guard.close()


def test_an_unmounted_mount_is_not_ok_and_a_remount_is(mount_dir: Path) -> None:
    _mount_tmpfs(mount_dir, "rw")
    guard = DiskGuard(mount_dir, min_free_bytes=1, check_every=EVERY_CALL)
    assert guard.check().ok and guard.check().paths[0].mount_point == str(mount_dir)
    subprocess.run(["umount", str(mount_dir)], check=True)
    status = guard.check()
    assert not status.ok, status  # before: it checked the filesystem below, and said ok
    assert status.reasons[0].startswith(f"{mount_dir}: {mount_dir} is no longer mounted")
    _mount_tmpfs(mount_dir, "rw")
    assert guard.check().ok  # mounted there again
    guard.close()
