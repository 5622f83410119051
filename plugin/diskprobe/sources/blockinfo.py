"""Per-device facts for tags: model, serial, dm name, partition-ness (from /sys and udev)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from diskprobe.roots import HostRoots


@dataclass(frozen=True)
class BlockInfo:
    model: str = ""
    serial: str = ""
    dm_name: str = ""
    is_partition: bool = False
    rotational: str = ""  # queue/rotational: "1" spinning, "0" solid state, "" unknown


def read_text(path: str) -> str:
    """A small text file (a sysfs attribute, a udev entry), stripped; "" if unreadable."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def parse_udev_data(text: str) -> dict[str, str]:
    """udev database entry: "E:ID_MODEL=Samsung_SSD_860" lines become {"ID_MODEL": ...}."""
    properties: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("E:") and "=" in line:
            key, _, value = line[2:].partition("=")
            properties[key] = value.strip()
    return properties


def read_block_info(roots: HostRoots, name: str, major: int, minor: int) -> BlockInfo:
    # Names with a slash in diskstats ("cciss/c0d0") appear with "!" in sysfs.
    block_dir = roots.sys_path("class", "block", name.replace("/", "!"))
    is_partition = os.path.exists(os.path.join(block_dir, "partition"))
    # A partition's model and serial are its disk's: the parent directory in sysfs.
    disk_dir = os.path.dirname(os.path.realpath(block_dir)) if is_partition else block_dir
    udev = parse_udev_data(read_text(roots.run_path("udev", "data", f"b{major}:{minor}")))
    model = udev.get("ID_MODEL") or read_text(os.path.join(disk_dir, "device", "model"))
    serial = udev.get("ID_SERIAL_SHORT") or read_text(os.path.join(disk_dir, "device", "serial"))
    dm_name = read_text(os.path.join(block_dir, "dm", "name"))
    rotational = read_text(os.path.join(disk_dir, "queue", "rotational"))
    return BlockInfo(model, serial, dm_name, is_partition, rotational)
