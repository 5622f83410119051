"""NVMe health without smartctl: one `nvme smart-log <dev> -o json` per read (parsed in
nvme_smart_log), identity and discovery from sysfs.

nvme-cli's exit code is not smartctl's bitmask: exit_status is 0 for a read that parsed and
-1 for one that did not. Identity (model, serial, firmware, capacity) and the kernel's
warning temperature come from HOST_SYS/class/nvme/<controller>/, as does discovery.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, replace

from diskprobe.roots import HostRoots
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.nvme_smart_log import KELVIN_OFFSET, NotSmartLog, number, parse_smart_log
from diskprobe.smart.nvme_smart_log import SOURCE as SOURCE  # the collector tells reads by it
from diskprobe.smart.reader import DriveRead, failure, problem_from_text
from diskprobe.smart.runner import CommandRunner, ExecResult
from diskprobe.sources.blockinfo import read_text

SECTOR_BYTES = 512  # sysfs `size` counts 512-byte sectors whatever the LBA format
_CONTROLLER = re.compile(r"nvme\d+$")
_DEVICE = re.compile(r"(nvme\d+)(n\d+)?$")
_NAMESPACE = re.compile(r"nvme\d+(c\d+)?n\d+$")


@dataclass(frozen=True)
class Identity:
    """What sysfs says about a controller; empty / None where it says nothing."""

    model: str = ""
    serial: str = ""
    firmware: str = ""
    capacity_bytes: int | None = None
    temperature_warning_c: int | None = None  # hwmon temp1_max: the over-temperature limit


# -- sysfs ----------------------------------------------------------------------------------


def discover(roots: HostRoots) -> list[DriveSpec]:
    """One spec per NVMe controller in HOST_SYS/class/nvme (nvme2 before nvme10)."""
    try:
        names = [name for name in os.listdir(roots.sys_path("class", "nvme"))
                 if _CONTROLLER.match(name)]  # fmt: skip
    except OSError:
        return []
    names.sort(key=lambda name: int(name[4:]))
    return [DriveSpec(f"/dev/{name}", "nvme") for name in names]


def controller_of(spec: DriveSpec) -> str | None:
    """ "nvme0" for /dev/nvme0 and /dev/nvme0n1; None for paths that do not say."""
    match = _DEVICE.match(os.path.basename(spec.path))
    return match.group(1) if match else None


def is_nvme(spec: DriveSpec) -> bool:
    return spec.device_type == "nvme" or controller_of(spec) is not None


def read_identity(roots: HostRoots, controller: str) -> Identity:
    base = roots.sys_path("class", "nvme", controller)
    return Identity(
        model=read_text(os.path.join(base, "model")),
        serial=read_text(os.path.join(base, "serial")),
        firmware=read_text(os.path.join(base, "firmware_rev")),
        capacity_bytes=_capacity(base),
        temperature_warning_c=_warning_temperature(base),
    )


def _capacity(base: str) -> int | None:
    """The controller's namespaces (nvme0n1, or nvme0c0n1 under native multipath)."""
    try:
        names = [name for name in os.listdir(base) if _NAMESPACE.match(name)]
    except OSError:
        return None
    sizes = [number(read_text(os.path.join(base, name, "size"))) for name in names]
    known = [size for size in sizes if size is not None]
    return sum(known) * SECTOR_BYTES if known else None


def _warning_temperature(base: str) -> int | None:
    """hwmon temp1_max, in m°C from kelvin (358 K: 84850), back to smartctl's 358 - 273."""
    # Kernels >= 5.10 hang hwmon under the controller, 5.5-5.9 under its PCI device.
    for pattern in ("hwmon*/temp1_max", "device/hwmon/hwmon*/temp1_max"):
        for path in sorted(glob.glob(os.path.join(glob.escape(base), pattern))):
            millidegrees = number(read_text(path))
            if millidegrees:
                return round((millidegrees + 273_150) / 1000) - KELVIN_OFFSET
    return None


def with_identity(health: DriveHealth, identity: Identity) -> DriveHealth:
    return replace(
        health,
        model=identity.model,
        serial=identity.serial,
        firmware=identity.firmware,
        capacity_bytes=identity.capacity_bytes,
        temperature_warning_c=identity.temperature_warning_c,
    )


# -- one read -------------------------------------------------------------------------------


def smart_log_args(spec: DriveSpec) -> list[str]:
    # `--` ends the options (nvme-cli 2.3 checked): the path is a path whatever it looks like.
    return ["smart-log", "-o", "json", "--", spec.path]


def read_nvme_cli(spec: DriveSpec, runner: CommandRunner, roots: HostRoots) -> DriveRead:
    """One `nvme smart-log` process per read; identity from sysfs, even for a failed read."""
    controller = controller_of(spec)
    identity = read_identity(roots, controller) if controller else Identity()
    result = runner.run(smart_log_args(spec))
    read = _outcome(spec, result, runner.timeout)
    if read.problem:  # tags only: a failed read carries no health fields; one exec failure
        runner.count_failure(result)
        tags = replace(read.health, model=identity.model, serial=identity.serial)
        return replace(read, health=tags)
    return replace(read, health=with_identity(read.health, identity))


def _outcome(spec: DriveSpec, result: ExecResult, timeout: float) -> DriveRead:
    empty = DriveHealth(spec.tag, protocol="nvme", media="nvme", exit_status=-1, source=SOURCE)
    failed = failure(spec, result, timeout)  # timed out, not installed, killed
    if failed is not None:
        return replace(failed, health=empty)
    if result.exit_status != 0:
        return problem_from_text(spec, empty, result)
    try:
        return DriveRead(spec, parse_smart_log(result.stdout, spec.tag))
    except NotSmartLog as error:
        if result.stderr.strip():  # what nvme said is the better reason
            return problem_from_text(spec, empty, result)
        return DriveRead(spec, empty, f"nvme smart-log gave no smart log: {error}")
