"""The mount table: `read_mountinfo(roots)` is `parse_mountinfo(text)` on /proc/1/mountinfo.

Line format (proc(5)):
  36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
  id parent maj:min root mountpoint options [optional fields...] - fstype source superoptions
Quirks handled, each seen in real files:
  "\\040" space, "\\011" tab, "\\012" newline, "\\134" backslash: octal escapes (paths, sources);
  "/mnt/test/foo\\rbar": a raw carriage return is not escaped by the kernel;
  "- tmpfs  rw": an empty source field (two spaces);
  "1 1 0:5 /  /root rw": a doubled space between fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diskprobe.roots import HostRoots
from diskprobe.sources.u64 import parse_u64

_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    mount_id: int
    major: int
    minor: int
    root: str
    mount_point: str
    options: str
    fstype: str
    source: str
    super_options: str = ""  # the filesystem's own ("ro" after ext4 remounted it on errors)

    @property
    def read_only(self) -> bool:
        """Read-only as a mount ("ro" in its options) or as a filesystem: ext4's
        errors=remount-ro sets only the superblock's flag, which shows in its options."""
        return "ro" in self.options.split(",") or "ro" in self.super_options.split(",")


def unescape(text: str) -> str:
    """Decode the kernel's octal escapes ("\\040" -> " ")."""
    if "\\" not in text:
        return text
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), text)


def parse_mountinfo_line(line: str) -> Mount | None:
    head, separator, tail = line.partition(" - ")
    if not separator:
        return None
    fields = [part for part in head.split(" ") if part]
    described = tail.split(" ", 2)
    if len(fields) < 6 or len(described) < 2:
        return None
    numbers = [parse_u64(fields[0]), *map(parse_u64, fields[2].split(":"))]  # ASCII digits
    if len(numbers) != 3 or None in numbers:
        return None
    mount_id, major, minor = (int(number or 0) for number in numbers)
    mount_point = unescape(fields[4])
    if "\0" in mount_point:  # a NUL ("\\000", or a raw one) is no path statfs can take
        return None
    return Mount(
        mount_id=mount_id,
        major=major,
        minor=minor,
        root=unescape(fields[3]),
        mount_point=mount_point,
        options=fields[5],
        fstype=described[0],
        source=unescape(described[1]),
        super_options=described[2].strip() if len(described) > 2 else "",
    )


def parse_mountinfo(text: str) -> list[Mount]:
    # Split on "\n" only: a raw "\r" can be part of a mount point.
    mounts = (parse_mountinfo_line(line) for line in text.split("\n") if line.strip())
    return [mount for mount in mounts if mount is not None]


def read_mountinfo(roots: HostRoots) -> list[Mount]:
    """The host's mounts (PID 1's view); in a container without the host's PID 1, our own."""
    for pid in ("1", "self"):
        try:
            # newline="": keep a raw "\r" inside a mount point instead of translating it.
            path = roots.proc_path(pid, "mountinfo")
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                text = f.read()
        except OSError:
            continue
        if text.strip():
            return parse_mountinfo(text)
    raise OSError(f"no readable mountinfo under {roots.proc} (tried 1/ and self/)")


def read_process_mountinfo(roots: HostRoots, pid: int) -> list[Mount]:
    """One process's view of the mounts (its mount namespace: the paths its fds show)."""
    try:
        path = roots.proc_path(str(pid), "mountinfo")
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            return parse_mountinfo(f.read())
    except OSError:
        return []
