"""Drive specs ("/dev/sda -d sat", "/dev/bus/0 -d megaraid,5") and the `device` tag they get."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_CONTROLLER = re.compile(r"(megaraid|areca|3ware|cciss|hpt|aacraid|sssraid|jmb39x\w*),(.+)")


@dataclass(frozen=True)
class DriveSpec:
    path: str  # "/dev/sda"
    device_type: str = ""  # smartctl -d value: "sat", "nvme", "megaraid,5", "sat+megaraid,0"

    @classmethod
    def parse(cls, text: str) -> DriveSpec:
        """ "/dev/sda", "/dev/sda -d sat" or "/dev/bus/0 -d megaraid,5" (config or scan)."""
        words = shlex.split(text.split("#", 1)[0])
        if not words:
            raise ValueError(f"empty device spec {text!r}")
        device_type = ""
        if len(words) >= 3 and words[1] in ("-d", "--device"):
            device_type = words[2]
        elif len(words) != 1:
            raise ValueError(f"device spec {text!r}: expected 'PATH' or 'PATH -d TYPE'")
        return cls(words[0], device_type)

    def smartctl_args(self) -> list[str]:
        return ["-d", self.device_type, self.path] if self.device_type else [self.path]

    @property
    def tag(self) -> str:
        """Unique per drive: drives behind one RAID controller share a path, not an address."""
        base = self.path.removeprefix("/dev/").replace("/", "")
        controller = _CONTROLLER.search(self.device_type.split("+")[-1])
        if controller is None:
            return base
        address = re.sub(r"[^0-9A-Za-z]+", "_", controller.group(2)).strip("_")
        return f"{base}-{controller.group(1)}{address}"

    def __str__(self) -> str:
        return f"{self.path} -d {self.device_type}" if self.device_type else self.path


def parse_scan(text: str) -> list[DriveSpec]:
    """`smartctl --scan-open` text: "/dev/sda -d sat # /dev/sda [SAT], ATA device" per line.

    Lines smartctl could not open start with "# " and are skipped.
    """
    specs = []
    for line in text.splitlines():
        stripped = line.strip()
        # smartctl names a type on every drive line; anything else is not a drive.
        if not stripped or stripped.startswith("#") or " -d " not in stripped.split("#")[0]:
            continue
        try:
            specs.append(DriveSpec.parse(stripped))
        except ValueError:
            continue
    return specs
