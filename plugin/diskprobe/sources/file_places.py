"""Where a process's open file lives: its mount (in the process's own mount namespace), the
block device under it, or no local device at all (NFS, FUSE, CIFS...). For `diagnose`.

One FilePlaces per watch: a process's mount table is read once, device names are cached.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from diskprobe.roots import HostRoots
from diskprobe.sources.cgroups import DeviceNames
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
ACCELERATORS = ("/dev/nvidia", "/dev/accel/", "/dev/dri/", "/dev/kfd", "/dev/neuron",
                "/dev/davinci")  # fmt: skip


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

    @staticmethod
    def _source_device(mount: Mount) -> tuple[int, int] | None:
        """btrfs and others show an anonymous device (0:NN); the source names the disk."""
        if not mount.source.startswith("/dev/"):
            return None
        try:
            info = os.stat(mount.source)
        except OSError:
            return None
        return (os.major(info.st_rdev), os.minor(info.st_rdev)) if info.st_rdev else None


def _under(path: str, mount_point: str) -> bool:
    return mount_point == "/" or path == mount_point or path.startswith(mount_point + "/")
