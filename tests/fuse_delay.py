"""A FUSE filesystem of fixed-size files whose reads and writes take an extra, adjustable delay.

    python fuse_delay.py MOUNTPOINT --files disk0,disk1,... --size BYTES --delays JSON

Serves, at MOUNTPOINT (fstype "fuse.delay", source "fuse_delay"), one flat directory of
files of BYTES each, their data held in this process's memory (zeros at first). Every read
and every write of a file first sleeps for that file's delay, in milliseconds, taken from the
JSON object in the file JSON ({"disk1": 8.0}; a file not named there has no delay; the files
listed under "@getattr" also wait that long in getattr, a wedged server). JSON is
re-read whenever its inode, mtime or size changes (polled every 20 ms), so one run can go
1x -> 2x -> 5x -> 10x: write the new object to a temp file and rename it over JSON (a new
inode: mtimes are coarse, two writes within a few ms of each other can share one).

For tests/failslow_host.py, whose loop devices sit on these files so that each device is as
slow as its file:
* every open answers with FUSE's direct_io flag (FOPEN_DIRECT_IO): the kernel keeps no page
  cache for the file and sends every read and write to this daemon, whoever opened it (the
  loop driver's own buffered reads included);
* libfuse's multi-threaded loop serves the requests, and the delay is a sleep outside the GIL
  and outside any lock, so a slow file does not slow the others;
* the read-only file `.stats` (not listed) holds the requests served so far, as JSON
  ({"disk0": {"reads": 120, "writes": 118}, ...}): the test compares it with the loop
  devices' counts in /proc/diskstats, to see that every request reached the daemon.

Library: mfusepy (PyPI), ctypes bindings over Debian's libfuse3-3, as for tests/fuse_hang.py.
Run as root: the mount is then made with mount(2) directly, without fusermount3.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import stat
import threading
import time
from typing import Any, Optional

import mfusepy

FSNAME = "fuse_delay"
SUBTYPE = "delay"  # mountinfo shows the fstype as "fuse.delay"
POLL_SEC = 0.02
BLOCK_SIZE = 4096
STATS = ".stats"
STATS_SIZE = 1 << 20  # any size above the JSON's: with direct_io a short read is the end


class DelayTable:
    """The per-file delays (ms), re-read from the JSON file by a thread when it changes."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._signature: Optional[tuple[int, int, int]] = None
        self.delays: dict[str, float] = {}
        self.getattr_slow: frozenset[str] = frozenset()
        self._reload()
        threading.Thread(target=self._watch, name="delays", daemon=True).start()

    def _reload(self) -> None:
        try:
            info = os.stat(self._path)
        except FileNotFoundError:
            self.delays = {}
            return
        signature = (info.st_ino, info.st_mtime_ns, info.st_size)
        if signature == self._signature:
            return
        with open(self._path, encoding="utf-8") as handle:
            loaded = json.load(handle)
        # "@getattr": files whose getattr (stat) waits too, as on a wedged network filesystem
        self.getattr_slow = frozenset(str(name) for name in loaded.pop("@getattr", []))
        # One assignment: a request thread sees either the old table or the new one.
        self.delays = {str(name): float(value) for name, value in loaded.items()}
        self._signature = signature

    def _watch(self) -> None:
        while True:
            time.sleep(POLL_SEC)
            # A file written in place, half-way: the next poll sees it whole.
            with contextlib.suppress(OSError, ValueError):
                self._reload()

    def sleep_for(self, name: str) -> None:
        delay_ms = self.delays.get(name, 0.0)
        if delay_ms > 0:
            time.sleep(delay_ms / 1000.0)


class DelayFs(mfusepy.Operations):  # type: ignore[misc]  # mfusepy ships no types
    use_ns = True

    def __init__(self, names: list[str], size: int, delays: DelayTable) -> None:
        self._data = {name: bytearray(size) for name in names}
        self._size = size
        self._delays = delays
        self._started = time.time_ns()
        self._counts = {name: {"reads": 0, "writes": 0} for name in names}
        self._lock = threading.Lock()  # += on a dict entry is no atomic step between threads

    def _count(self, name: str, kind: str) -> None:
        with self._lock:
            self._counts[name][kind] += 1

    def _stats(self) -> bytes:
        with self._lock:
            return json.dumps(self._counts).encode()

    def _name(self, path: str) -> str:
        name = path.lstrip("/")
        if name not in self._data:
            raise mfusepy.FuseOSError(errno.ENOENT)
        return name

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        times = {"st_atime": self._started, "st_mtime": self._started, "st_ctime": self._started}
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, **times}
        if path == f"/{STATS}":
            return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": STATS_SIZE, **times}
        name = self._name(path)
        if name in self._delays.getattr_slow:
            self._delays.sleep_for(name)
        blocks = self._size // 512
        return {"st_mode": stat.S_IFREG | 0o644, "st_nlink": 1, "st_size": self._size,
                "st_blocks": blocks, "st_blksize": BLOCK_SIZE, **times}  # fmt: skip

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", "..", *self._data]

    def open(self, path: str, info: Any) -> int:
        if path != f"/{STATS}":
            self._name(path)
        # FOPEN_DIRECT_IO: no page cache for this file, every read and write reaches us.
        info.direct_io = 1
        info.keep_cache = 0
        return 0

    def read(self, path: str, size: int, offset: int, info: Any) -> bytes:
        if path == f"/{STATS}":
            return self._stats()[offset : offset + size]
        name = self._name(path)
        self._delays.sleep_for(name)
        self._count(name, "reads")
        return bytes(self._data[name][offset : offset + size])

    def write(self, path: str, data: bytes, offset: int, info: Any) -> int:
        name = self._name(path)
        self._delays.sleep_for(name)
        self._count(name, "writes")
        size = min(len(data), self._size - offset)
        if size <= 0:
            raise mfusepy.FuseOSError(errno.ENOSPC)  # the files never grow
        self._data[name][offset : offset + size] = data[:size]
        return size

    def truncate(self, path: str, length: int, fh: Any = None) -> int:
        self._name(path)
        if length != self._size:
            raise mfusepy.FuseOSError(errno.EPERM)  # fixed size: a loop device's disk
        return 0

    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        return 0  # the data is in memory: nothing to flush

    def flush(self, path: str, fh: Any) -> int:
        return 0

    def release(self, path: str, fh: Any) -> int:
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        blocks = len(self._data) * self._size // BLOCK_SIZE
        return {"f_bsize": BLOCK_SIZE, "f_frsize": BLOCK_SIZE, "f_blocks": blocks,
                "f_bfree": 0, "f_bavail": 0, "f_files": len(self._data), "f_ffree": 0,
                "f_favail": 0, "f_namemax": 255}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mountpoint")
    parser.add_argument("--files", required=True, help="comma-separated file names")
    parser.add_argument("--size", type=int, required=True, help="bytes per file")
    parser.add_argument("--delays", required=True, metavar="JSON", help='{"name": ms, ...}')
    args = parser.parse_args()
    names = [name for name in args.files.split(",") if name]
    mfusepy.FUSE(
        DelayFs(names, args.size, DelayTable(args.delays)),
        args.mountpoint,
        raw_fi=True,  # open() gets fuse_file_info, to set direct_io
        foreground=True,
        fsname=FSNAME,
        subtype=SUBTYPE,
        allow_other=True,
    )


if __name__ == "__main__":
    main()
