"""Where a process's open file lives: its mount (in the process's own mount namespace), the
block device under it, or no local device at all (NFS, FUSE, CIFS...). For `diagnose`.

One FilePlaces per watch: a process's mount table is read once, device names are cached.
"""

from __future__ import annotations

import os
import posixpath
import stat as modes
from dataclasses import dataclass

from diskprobe.roots import HostRoots
from diskprobe.sources.cgroups import DeviceNames
from diskprobe.sources.job_procs import ACCELERATOR_PREFIXES
from diskprobe.sources.mountinfo import Mount, read_process_mountinfo
from diskprobe.sources.tasks import OpenFile

# Filesystems whose files have no local block device under them: network and FUSE stores
# ("fuse.s3fs", "fuse.gcsfuse", "fuse.sshfs"; but "fuseblk", ntfs-3g on a local disk, has one).
REMOTE_TYPES = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "9p", "virtiofs",
                          "glusterfs", "lustre", "afs", "gpfs", "beegfs", "wekafs",
                          "fuse"})  # fmt: skip
# In memory or the kernel's own: a wait on them is no storage wait.
PSEUDO_TYPES = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "tmpfs", "ramfs", "devtmpfs",
                          "devpts", "mqueue", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
                          "hugetlbfs", "configfs", "fusectl", "pipefs", "sockfs", "anon_inodefs",
                          "nsfs"})  # fmt: skip
MAX_LINKS = 8  # symlinks followed inside /dev (udev's by-id, mapper links: one or two)
ACCELERATORS = ACCELERATOR_PREFIXES  # the nodes the agent finds jobs by (sources/job_procs.py)


def is_remote(fstype: str) -> bool:
    return fstype in REMOTE_TYPES or (fstype.startswith("fuse.") and fstype != "fuseblk")


def is_accelerator(file: OpenFile) -> bool:
    return file.is_device and file.path.startswith(ACCELERATORS)


@dataclass(frozen=True)
class Place:
    """Where a file wait goes: a filesystem's device (None when unknown) and mount."""

    device: str | None
    mount_point: str | None = None
    remote: bool = False  # NFS, FUSE, CIFS...: no local block device under the files
    fstype: str = ""


@dataclass(frozen=True)
class Located:
    place: Place
    devno: tuple[int, int] | None  # the block device's number, for its counters and limits
    fstype: str = ""


class FilePlaces:
    def __init__(self, roots: HostRoots) -> None:
        self._roots = roots
        self._names = DeviceNames(roots)
        self._mounts: dict[int, list[Mount]] = {}
        self.devices: dict[Place, tuple[int, int]] = {}  # every local place located so far
        self._below_dev: list[str] | None = None  # our mounts under /dev (shm, mqueue, pts)

    def locate(self, pid: int, file: OpenFile) -> Located | None:
        """None for a file on a pseudo filesystem (/proc, tmpfs): no storage behind it."""
        located = self._locate(pid, file)
        if located is not None and located.devno is not None:
            self.devices[located.place] = located.devno
        return located

    def device_name(self, devno: tuple[int, int]) -> str:
        return self._names.name(devno)

    def _locate(self, pid: int, file: OpenFile) -> Located | None:
        if file.is_device:  # a raw device read (fio, dd): the device itself
            return Located(Place(self._names.name(file.rdevice)), file.rdevice)
        mount = self._mount_of(pid, file)
        if mount is None:
            devno = file.device if file.device[0] else None
            return Located(Place(self._names.name(devno) if devno else None), devno)
        if mount.fstype in PSEUDO_TYPES:
            return None
        if is_remote(mount.fstype):
            return Located(Place(None, mount.mount_point, True, mount.fstype), None, mount.fstype)
        devno = (mount.major, mount.minor) if mount.major else self._source_device(mount)
        name = self._names.name(devno) if devno else None
        return Located(Place(name, mount.mount_point, False, mount.fstype), devno, mount.fstype)

    def fstype(self, pid: int, mount_id: int) -> str | None:
        mount = next((m for m in self._table(pid) if m.mount_id == mount_id), None)
        return mount.fstype if mount else None

    def _table(self, pid: int) -> list[Mount]:
        mounts = self._mounts.get(pid)
        if mounts is None:
            mounts = self._mounts[pid] = read_process_mountinfo(self._roots, pid)
        return mounts

    def _mount_of(self, pid: int, file: OpenFile) -> Mount | None:
        mounts = self._table(pid)
        if file.mount_id is not None:
            return next((m for m in mounts if m.mount_id == file.mount_id), None)
        same = [m for m in mounts if (m.major, m.minor) == file.device]
        if not same:
            return None
        inside = [m for m in same if _under(file.path, m.mount_point)]
        return max(inside or same, key=lambda mount: len(mount.mount_point))

    def forget(self, pid: int) -> None:
        """The process ended (or its mounts may have changed): its table is read again."""
        self._mounts.pop(pid, None)

    def _source_device(self, mount: Mount) -> tuple[int, int] | None:
        """btrfs and others show an anonymous device (0:NN); the source names the disk.

        The source is text a job controls (a mount in its own namespace): it is followed only
        inside devtmpfs, our /dev without the mounts below it (/dev/shm and /dev/mqueue are
        tmpfs any user writes), by lstat and readlink, never stat: nothing there can lead to
        a file on a hung FUSE or NFS mount."""
        source = posixpath.normpath(mount.source)  # "/dev/../x" is "/x": not under /dev
        for _ in range(MAX_LINKS):
            if not source.startswith("/dev/") or _under_any(source, self._dev_submounts()):
                return None
            try:
                info = os.lstat(source)
                if modes.S_ISBLK(info.st_mode):
                    return os.major(info.st_rdev), os.minor(info.st_rdev)
                if not modes.S_ISLNK(info.st_mode):
                    return None
                target = os.readlink(source)  # /dev/mapper/vg-root -> ../dm-0
            except (OSError, ValueError):
                return None
            source = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        return None

    def _dev_submounts(self) -> list[str]:
        if self._below_dev is None:
            mounts = read_process_mountinfo(HostRoots(), os.getpid())  # where lstat looks
            self._below_dev = [mount.mount_point for mount in mounts
                               if mount.mount_point.startswith("/dev/")]  # fmt: skip
        return self._below_dev


def _under_any(path: str, mount_points: list[str]) -> bool:
    return any(_under(path, mount_point) for mount_point in mount_points)


def _under(path: str, mount_point: str) -> bool:
    return mount_point == "/" or path == mount_point or path.startswith(mount_point + "/")
