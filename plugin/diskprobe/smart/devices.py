"""Drive specs ("/dev/sda -d sat", "/dev/bus/0 -d megaraid,5") and the `device` tag they get.

A spec's path and type end up on smartctl's (and nvme-cli's) command line, so a spec is
refused unless it is plainly a device path: a name from a scan or a config such as
`--set=standby,now` would otherwise be read as an option that changes a drive.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass

_CONTROLLER = re.compile(r"(megaraid|areca|3ware|cciss|hpt|aacraid|sssraid|jmb39x\w*),(.+)")
# smartctl -d values: "sat", "sat+megaraid,0", and areca's "areca,3/1" (disk 3, enclosure 1).
DEVICE_TYPE = re.compile(r"[A-Za-z0-9,+_/]+")
_BARE = re.compile(r"[A-Za-z0-9]+")
_UNPRINTABLE = re.compile(r"[\x00-\x20\x7f]")  # blanks, control characters, newlines
# smartctl's MegaRAID name: it opens /dev/megaraid_sas_ioctl_node and takes the bus number
# from this name, which is no node of its own (smartctl's os_linux.cpp).
_MEGARAID_BUS = re.compile(r"/dev/bus/[0-9]+")


def path_problem(path: str) -> str:
    """Why `path` is not a device name smartctl should open ("" when it is one): an absolute
    path, or smartctl's names on other systems, a macOS `IOService:/...` or a bare word such
    as Windows' "sda" (letters and digits only: never an option, never a relative path)."""
    if not (path.startswith(("/", "IOService:/")) or _BARE.fullmatch(path)):
        return "not an absolute path"
    if ".." in path.split("/"):
        return "has a '..' component"
    if _UNPRINTABLE.search(path):
        return "has a blank or control character"
    return ""


@dataclass(frozen=True)
class DriveSpec:
    path: str  # "/dev/sda"
    device_type: str = ""  # smartctl -d value: "sat", "nvme", "megaraid,5", "sat+megaraid,0"

    def __post_init__(self) -> None:
        # Every spec is checked, however it was made: none can smuggle an option in.
        problem = path_problem(self.path)
        if problem:
            raise ValueError(f"device path {self.path!r}: {problem}")
        if self.device_type and not DEVICE_TYPE.fullmatch(self.device_type):
            raise ValueError(f"device type {self.device_type!r}: not letters, digits and ,+_/")

    @classmethod
    def parse(cls, text: str) -> DriveSpec:
        """Exactly "PATH" or "PATH -d TYPE" (config or scan; a "# comment" is dropped). A bare
        name is a device under /dev ("sda" is /dev/sda): smartctl would open a bare name in
        its working directory, where whoever runs it may have put a link to any file."""
        try:
            words = shlex.split(text.split("#", 1)[0])
        except ValueError as error:  # an unclosed quote
            raise ValueError(f"device spec {text!r}: {error}") from None
        if not words:
            raise ValueError(f"empty device spec {text!r}")
        if _BARE.fullmatch(words[0]):
            words[0] = f"/dev/{words[0]}"
        if len(words) == 3 and words[1] in ("-d", "--device"):
            return cls(words[0], words[2])
        if len(words) != 1:
            raise ValueError(f"device spec {text!r}: expected 'PATH' or 'PATH -d TYPE'")
        return cls(words[0])

    def smartctl_args(self) -> list[str]:
        # `--` ends smartctl's options (getopt): the path is a path whatever it looks like.
        type_args = ["-d", self.device_type] if self.device_type else []
        return [*type_args, "--", self.path]

    @property
    def tag(self) -> str:
        """Unique per drive: drives behind one RAID controller share a path, not an address."""
        base = self.path[len("/dev/") :] if self.path.startswith("/dev/") else self.path
        base = base.replace("/", "")
        controller = _CONTROLLER.search(self.device_type.split("+")[-1])
        if controller is None:
            return base
        address = re.sub(r"[^0-9A-Za-z]+", "_", controller.group(2)).strip("_")
        return f"{base}-{controller.group(1)}{address}"

    def __str__(self) -> str:
        return f"{self.path} -d {self.device_type}" if self.device_type else self.path


def node_problem(spec: DriveSpec) -> str:
    """Why root's smartctl must not open this drive's path on this host ("" when it may): it
    must be a block or character device under /dev, reached only through directories that
    root alone can write (/dev/shm is under /dev too, and anyone may put a link there). A
    path that does not exist (a drive pulled for now) passes if its directories do; MegaRAID's
    /dev/bus/N names no node and needs only /dev/bus to be root's. Checked at load and when
    `diskprobe sudoers` writes a rule: the agent's user may edit the config, not /dev."""
    path = spec.path
    if not path.startswith("/dev/"):
        return f"device path {path!r}: not under /dev"
    if _through_proc(path):  # /dev/stdin, /dev/fd/N: whatever the opener holds, no drive
        return f"device path {path!r}: resolves through /proc (a process's own descriptors)"
    real = os.path.realpath(path)
    if not real.startswith("/dev/"):
        return f"device path {path!r}: leads out of /dev, to {real!r}"
    for candidate in dict.fromkeys((path, real)):
        problem = _writable_directory(candidate)
        if problem:
            return f"device path {path!r}: {problem}"
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"device path {path!r}: {error.strerror}"
    if _MEGARAID_BUS.fullmatch(path) or stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        return ""
    return f"device path {path!r}: not a block or character device"


def rule_problem(spec: DriveSpec) -> str:
    """Why a sudo rule must not name this drive ("" when it may): node_problem, and the node
    must be a drive's, a block device or an NVMe controller's character device (a rule lets
    the agent's user run root's smartctl on it). Absent for now, or MegaRAID's /dev/bus/N:
    as node_problem has them."""
    problem = node_problem(spec)
    if problem or _MEGARAID_BUS.fullmatch(spec.path):
        return problem
    try:
        info = os.stat(spec.path)
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"device path {spec.path!r}: {error.strerror}"
    if stat.S_ISBLK(info.st_mode) or (stat.S_ISCHR(info.st_mode) and _nvme(info.st_rdev)):
        return ""
    return f"device path {spec.path!r}: not a drive's node (a block device or an NVMe controller)"


def _nvme(rdev: int) -> bool:
    """Is this character device an NVMe controller? (sysfs: its subsystem is class/nvme.)"""
    link = f"/sys/dev/char/{os.major(rdev)}:{os.minor(rdev)}/subsystem"
    return os.path.basename(os.path.realpath(link)) == "nvme"


def _through_proc(path: str) -> bool:
    """Does resolving `path`, link by link, pass through /proc? /dev/stdin, /dev/fd/N and
    /proc/self/fd/N lead there, to a descriptor of whichever process opens the path."""
    pending = [part for part in path.split("/") if part][::-1]  # a stack: the next part last
    current, links = "/", 0
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        current = os.path.dirname(current) if part == ".." else os.path.join(current, part)
        if current == "/proc" or current.startswith("/proc/"):
            return True
        try:
            target = os.readlink(current)
        except OSError:  # not a link, or nothing there
            continue
        links += 1
        if links > 40:  # a loop: os.stat says so (ELOOP) in node_problem
            return False
        pending += [part for part in target.split("/") if part][::-1]
        current = "/" if target.startswith("/") else os.path.dirname(current)
    return False


def _writable_directory(path: str) -> str:
    """The first directory above `path` that a user other than root may write to, said."""
    directory = os.path.dirname(path)
    while True:
        try:
            info = os.stat(directory)
        except FileNotFoundError:
            info = None
        except OSError as error:
            return f"{directory}: {error.strerror}"
        if info is not None and (info.st_uid != 0 or info.st_mode & 0o022):
            mode = info.st_mode & 0o7777
            return f"{directory} may be written by others than root (mode {mode:o})"
        if directory == "/":
            return ""
        directory = os.path.dirname(directory)


def scan_specs(text: str) -> tuple[list[DriveSpec], list[str]]:
    """`smartctl --scan-open` text: "/dev/sda -d sat # /dev/sda [SAT], ATA device" per line.

    Returns the drives and the refused drive lines, each with why ("NAME: reason").
    Lines smartctl could not open start with "# " and are skipped.
    """
    specs: list[DriveSpec] = []
    refused: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        # smartctl names a type on every drive line; anything else is not a drive.
        if not stripped or stripped.startswith("#") or " -d " not in stripped.split("#")[0]:
            continue
        try:
            specs.append(DriveSpec.parse(stripped))
        except ValueError as error:
            refused.append(str(error))
    return specs, refused


def parse_scan(text: str) -> list[DriveSpec]:
    """The drives of a `--scan-open` text (refused names left out: see scan_specs)."""
    return scan_specs(text)[0]
