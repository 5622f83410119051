"""A FUSE filesystem whose statfs hangs: a wedged FUSE daemon, for tests/test_fs_hung_mount.py.

    python fuse_hang.py MOUNTPOINT --hang-while FLAG [--calls LOG]

Mounts an empty, read-only directory at MOUNTPOINT (fstype "fuse.hang", source "fuse_hang") and
serves it in the foreground with libfuse's multi-threaded loop, so getattr, lookup and readdir of
the root keep answering while statfs calls sit blocked. statfs blocks for as long as the file FLAG
exists and answers normally once it is removed (the test's "the mount recovers"). Each statfs
request appends the calling process's pid (its thread group, not the thread) to LOG, one a line,
before it blocks, so the test can count the calls and tell who made them (diskprobe's statfs
worker process).

Library: mfusepy (PyPI), ctypes bindings over Debian's libfuse3-3 (or libfuse2). Run as root: the
mount is then made with mount(2) directly, without fusermount3.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import threading
import time
from typing import Any

import mfusepy

FSNAME = "fuse_hang"
SUBTYPE = "hang"  # mountinfo shows the fstype as "fuse.hang"
POLL_SEC = 0.05
BLOCK_SIZE = 4096
STATFS_ANSWER = {
    "f_bsize": BLOCK_SIZE,
    "f_frsize": BLOCK_SIZE,
    "f_blocks": 25_600,  # 100 MiB
    "f_bfree": 12_800,
    "f_bavail": 10_240,
    "f_files": 1_000,
    "f_ffree": 600,
    "f_favail": 600,
    "f_namemax": 255,
}


def _process_of(tid: int) -> int:
    """The process (thread group) of the calling thread: FUSE passes the thread's id."""
    try:
        with open(f"/proc/{tid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return tid


class HangingStatfs(mfusepy.Operations):  # type: ignore[misc]  # mfusepy ships no types
    use_ns = True

    def __init__(self, flag: str, calls: str | None) -> None:
        self._flag = flag
        self._calls = calls
        self._lock = threading.Lock()
        self._started = time.time_ns()

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        if path != "/":
            raise mfusepy.FuseOSError(errno.ENOENT)
        return {
            "st_mode": stat.S_IFDIR | 0o555,
            "st_nlink": 2,
            "st_uid": 0,
            "st_gid": 0,
            "st_atime": self._started,
            "st_mtime": self._started,
            "st_ctime": self._started,
        }

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", ".."]

    def statfs(self, path: str) -> dict[str, int]:
        if self._calls is not None:
            _uid, _gid, tid = mfusepy.fuse_get_context()
            with self._lock, open(self._calls, "a", encoding="ascii") as log:
                log.write(f"{_process_of(tid)}\n")
        # A wedged daemon: the request stays unanswered, the caller sits in the kernel.
        while os.path.exists(self._flag):
            time.sleep(POLL_SEC)
        return dict(STATFS_ANSWER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mountpoint")
    parser.add_argument("--hang-while", required=True, metavar="FLAG", help="statfs blocks while")
    parser.add_argument("--calls", metavar="LOG", help="append the caller's pid per statfs")
    args = parser.parse_args()
    mfusepy.FUSE(
        HangingStatfs(args.hang_while, args.calls),
        args.mountpoint,
        foreground=True,
        ro=True,
        fsname=FSNAME,
        subtype=SUBTYPE,
    )


if __name__ == "__main__":
    main()
