"""A really slow disk with a dataset on it, for tests/test_diagnose.py: one loop device on a
tests/fuse_delay.py file (every request delayed), ext4 on it, mounted, files written.

    with dataset_host(skip, delay_ms=4.0) as host:
        host.data        # the mounted ext4's dataset directory (48 files of 1 MiB)
        host.small       # another, of 32 files of 256 KiB
        host.big         # one 48 MiB file on it, for mmap reads
        host.device      # "loop7"
        host.fuse_file   # the FUSE file itself (a remote_fs read)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Callable, Iterator

from failslow_host import SlowHost, slow_host

FILES, FILE_BYTES, BIG_BYTES = 48, 1 << 20, 48 << 20
SMALL_FILES, SMALL_BYTES = 32, 256 << 10


class DatasetHost:
    def __init__(self, slow: SlowHost) -> None:
        self.slow = slow
        self.device = slow.devices[0]
        self.mountpoint = slow.workdir / "data-mnt"
        self.data = self.mountpoint / "dataset"
        self.small = self.mountpoint / "small"
        self.big = self.mountpoint / "big.bin"
        self.checkpoints = self.mountpoint / "checkpoints"
        self.fuse_file = slow.mountpoint / slow.files[1]

    def start(self, delay_ms: float) -> None:
        subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{self.device}"], check=True, timeout=120)
        self.mountpoint.mkdir()
        subprocess.run(["mount", f"/dev/{self.device}", str(self.mountpoint)], check=True,
                       timeout=60)  # fmt: skip
        self.data.mkdir()
        self.checkpoints.mkdir()
        for index in range(FILES):
            (self.data / f"sample-{index:03}.bin").write_bytes(os.urandom(FILE_BYTES))
        self.small.mkdir()
        for index in range(SMALL_FILES):
            (self.small / f"sample-{index:03}.bin").write_bytes(os.urandom(SMALL_BYTES))
        with open(self.big, "wb") as handle:
            for _ in range(BIG_BYTES >> 20):
                handle.write(os.urandom(1 << 20))
        os.sync()
        self.slow.set_delays({self.device: delay_ms, self.slow.devices[1]: delay_ms})

    def close(self) -> None:
        if os.path.ismount(self.mountpoint):
            for _ in range(20):
                done = subprocess.run(["umount", str(self.mountpoint)], check=False, timeout=60)
                if done.returncode == 0:
                    break
            else:
                subprocess.run(["umount", "-l", str(self.mountpoint)], check=False, timeout=60)


@contextlib.contextmanager
def in_memory_dataset(name: str) -> Iterator[Path]:
    """16 sample files of 256 KiB in /dev/shm (tmpfs): reading them never waits on a device."""
    directory = Path("/dev/shm") / f"{name}-{os.getpid()}"
    directory.mkdir()
    try:
        for index in range(16):
            (directory / f"sample-{index}").write_bytes(os.urandom(256 * 1024))
        yield directory
    finally:
        for path in directory.iterdir():
            path.unlink()
        directory.rmdir()


@contextlib.contextmanager
def dataset_host(skip: Callable[[str], None], delay_ms: float) -> Iterator[DatasetHost]:
    """Two FUSE files: the first under the loop device and ext4, the second read directly."""
    with slow_host(2, skip, file_bytes=128 << 20) as slow:
        host = DatasetHost(slow)
        try:
            host.start(delay_ms)
            yield host
        finally:
            host.close()
