"""Test helpers: fixture paths, a fake /proc + /sys tree, a controllable clock."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from diskprobe.metric import Metric
from diskprobe.schema import FIELD_TYPES, measurement

FIXTURES = Path(__file__).parent / "fixtures"
# DiskGuard's check_every for a test whose every check() measures afresh (0 is refused): two
# calls are microseconds apart at the least, a thousand times this.
EVERY_CALL = 1e-9
MEMORY_FS = "/dev/shm"


def memory_scratch(prefix: str = "diskprobe-") -> tempfile.TemporaryDirectory[str]:
    """A temporary directory in memory (tmpfs) where the machine has one, else the default
    place: for tests that write files thousands of times (on ext4 the writes and fsyncs cost
    more than the code under test, and measure a disk other tests keep busy)."""
    return tempfile.TemporaryDirectory(dir=MEMORY_FS if os.path.isdir(MEMORY_FS) else None,
                                       prefix=prefix)  # fmt: skip


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def write_diskstats(proc: Path, lines: list[str]) -> None:
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "diskstats").write_text("".join(line + "\n" for line in lines))


def add_sys_block(sys_root: Path, name: str, parent: str | None = None, **files: str) -> Path:
    """A /sys/class/block entry; partitions live inside their disk's directory, as in sysfs."""
    devices = sys_root / "devices" / "virtual" / "block"
    target = devices / parent / name if parent else devices / name
    target.mkdir(parents=True, exist_ok=True)
    if parent:
        (target / "partition").write_text("1\n")
    for relative, text in files.items():
        path = target / relative.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    link = sys_root / "class" / "block" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        os.symlink(target, link)
    return target


def assert_schema(metrics: list[Metric]) -> None:
    """Every field is declared for its measurement, with the declared type; tags declared."""
    for metric in metrics:
        spec = measurement(metric.measurement)
        tag_names = {tag.name for tag in spec.tags}
        assert set(metric.tags) <= tag_names, (metric.measurement, set(metric.tags) - tag_names)
        for name, value in metric.fields.items():
            field = spec.field(name)
            assert field is not None, f"{metric.measurement}.{name} not in schema"
            assert type(value) is FIELD_TYPES[field.type], (name, value, field.type)


LOOP_TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")


def smart_verdict(metrics: list[Metric]) -> tuple[str | None, tuple[str, ...]]:
    """The one drive's verdict and its reasons, from a SMART collection of a single drive."""
    smart = [m for m in metrics if m.measurement == "diskprobe_smart"]
    assert len(smart) == 1
    status = smart[0].fields.get("verdict")
    reasons = str(smart[0].fields.get("verdict_reasons", ""))
    return (str(status) if status is not None else None), tuple(r for r in reasons.split(",") if r)


def installed_command() -> list[str]:
    """The console script pip installed next to this interpreter (the installed command)."""
    script = Path(sys.executable).parent / "diskprobe"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "diskprobe"]


def run_tool(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=60)


@contextlib.contextmanager
def loop_ext4(size_bytes: int, prefix: str, skip: Callable[[str], None]) -> Iterator[Path]:
    """A fresh ext4 image on a loop device, mounted; unmounted and detached even on failure.

    `skip` is called with the reason when root or a tool is missing (skip, or fail under CI).
    """
    problems = [] if os.geteuid() == 0 else ["needs root (losetup, mount)"]
    missing = [tool for tool in LOOP_TOOLS if shutil.which(tool) is None]
    if missing:
        problems.append(f"{', '.join(missing)} not on PATH (packages util-linux, e2fsprogs)")
    if problems:
        skip("; ".join(problems))
    workdir = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    image, mount_point = workdir / "ext4.img", workdir / "mnt"
    mount_point.mkdir()
    loop_device = ""
    try:
        with open(image, "wb") as handle:
            handle.truncate(size_bytes)
        # lazy_*_init=0: no ext4lazyinit thread zeroing inode tables behind the writer's back.
        run_tool("mkfs.ext4", "-q", "-F", "-m", "0",
                 "-E", "lazy_itable_init=0,lazy_journal_init=0", str(image))  # fmt: skip
        loop_device = run_tool("losetup", "--find", "--show", str(image)).stdout.strip()
        assert loop_device.startswith("/dev/loop"), loop_device
        run_tool("mount", "-t", "ext4", loop_device, str(mount_point))
        yield mount_point
    finally:
        unmount(mount_point)
        if loop_device:
            _detach(loop_device)
        if not os.path.ismount(mount_point):
            shutil.rmtree(workdir, ignore_errors=True)


def unmount(mount_point: Path) -> None:
    """Unmount, retrying a busy mount for 2 s; still busy: detached lazily (umount -l)."""
    for _attempt in range(10):
        if not os.path.ismount(mount_point):
            return
        if run_tool("umount", str(mount_point), check=False).returncode == 0:
            return
        time.sleep(0.2)
    run_tool("umount", "-l", str(mount_point), check=False)  # still busy: detach it lazily


def _detach(loop_device: str) -> None:
    for _attempt in range(20):
        if run_tool("losetup", "-d", loop_device, check=False).returncode == 0:
            return
        time.sleep(0.25)
