"""NVMe health without smartctl: `nvme smart-log <dev> -o json`, identity from sysfs.

nvme-cli's JSON differs by version, and every variant is read into the same DriveHealth
fields as the smartctl JSON path (counter names from json_parser.NVME_COUNTERS):
- critical_warning: an int (2.3), an object {"value": N, "available_spare": 0, ...} (the 2.11
  capture; recent releases print it so with --verbose, some spell it "Value"), or bits only;
- temperature and temperature_sensor_N are kelvin (0: not reported); sent as °C, K - 273 as
  smartctl does, so a drive reads the same whichever tool read it;
- 128-bit counters: JSON integers (2.x), floats (1.x: 9898518.0 or 1.2e+10) or strings
  ("9898518", "%Lf" "9898518.000000"); some releases capitalise keys ("Temperature").
nvme-cli's exit code is not smartctl's bitmask: exit_status is 0 for a read that parsed and
-1 for one that did not. Identity (model, serial, firmware, capacity) and the kernel's
warning temperature come from HOST_SYS/class/nvme/<controller>/, as does discovery.
"""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from diskprobe.roots import HostRoots
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.json_parser import NVME_COUNTERS, NVME_DATA_UNIT_BYTES, NVME_DATA_UNITS
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.rawvalues import bounded_int, parse_raw
from diskprobe.smart.reader import DriveRead, failure, problem_from_text
from diskprobe.smart.runner import CommandRunner, ExecResult

SOURCE = "nvme-cli"
KELVIN_OFFSET = 273  # smartctl's NVMe conversion: 310 K -> 37 °C
SECTOR_BYTES = 512  # sysfs `size` counts 512-byte sectors whatever the LBA format
# nvme-cli's key for each smartctl key in NVME_COUNTERS, where the two differ.
CLI_KEYS = {
    "available_spare": "avail_spare",
    "available_spare_threshold": "spare_thresh",
    "percentage_used": "percent_used",
    "host_reads": "host_read_commands",
    "host_writes": "host_write_commands",
}
DATA_UNITS = NVME_DATA_UNITS
# critical_warning object members, by bit (NVMe base spec, SMART / Health log byte 0).
WARNING_BITS = ("available_spare", "temp_threshold", "reliability_degraded", "ro",
                "vmbu_failed", "pmr_ro")  # fmt: skip
_CONTROLLER = re.compile(r"nvme\d+$")
_DEVICE = re.compile(r"(nvme\d+)(n\d+)?$")
_NAMESPACE = re.compile(r"nvme\d+(c\d+)?n\d+$")
_SENSOR = re.compile(r"temperature_sensor_([0-9]{1,3})$")  # NVMe has sensors 1 to 8
_LOG_KEYS = ("critical_warning", "temperature", "data_units_read", "percent_used", "avail_spare")


class NotSmartLog(ValueError):
    """The text is not an `nvme smart-log -o json` object (garbage, text, empty output)."""


@dataclass(frozen=True)
class Identity:
    """What sysfs says about a controller; empty / None where it says nothing."""

    model: str = ""
    serial: str = ""
    firmware: str = ""
    capacity_bytes: int | None = None
    temperature_warning_c: int | None = None  # hwmon temp1_max: the over-temperature limit


def number(value: Any) -> int | None:
    """An nvme-cli JSON number as an int: int, float, bool or numeric string; else None."""
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, (float, Decimal)):
        return _integral(value)
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        try:
            return _integral(Decimal(text))
        except InvalidOperation:
            return parse_raw(text)  # "0x10", "1612952 min"
    return None


def _integral(value: float | Decimal) -> int | None:
    if isinstance(value, Decimal) and value.is_finite() and value.adjusted() > 38:
        return None  # past 128 bits: no counter, and int() of 1e999999999 would never end
    try:
        return int(value)
    except (ValueError, OverflowError, InvalidOperation):  # NaN, Infinity
        return None


def _json_int(token: str) -> int | None:
    return bounded_int(token)


def celsius(kelvin: Any) -> int | None:
    value = number(kelvin)
    return value - KELVIN_OFFSET if value else None  # 0 K: the sensor is not implemented


def load_smart_log(text: str) -> dict[str, Any]:
    """The smart-log object with lower-cased keys; NotSmartLog for anything else."""
    try:
        # Exact, even past 2**53; an integer of thousands of digits (which int() refuses
        # with a ValueError of its own) reads as absent, not as "no smart log at all".
        data = json.loads(text, parse_float=Decimal, parse_int=_json_int)
    except (ValueError, RecursionError) as error:
        raise NotSmartLog(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise NotSmartLog("JSON that is not an object")
    log = {str(key).lower(): value for key, value in data.items()}
    if not any(key in log for key in _LOG_KEYS):
        raise NotSmartLog("JSON without smart-log keys")
    return log


def critical_warning(value: Any) -> int | None:
    """The bitmask from an int, a string, {"value": N, ...} or per-bit flags only."""
    if not isinstance(value, dict):
        return number(value)
    flags = {str(key).lower(): flag for key, flag in value.items()}
    if "value" in flags:
        return number(flags["value"])
    if not any(name in flags for name in WARNING_BITS):
        return None
    return sum(1 << bit for bit, name in enumerate(WARNING_BITS) if number(flags.get(name)))


def sensor_temperatures(log: dict[str, Any]) -> dict[int, int]:
    """temperature_sensor_N in °C by N, for the sensors the drive has."""
    found = {int(match.group(1)): celsius(value)
             for key, value in log.items() if (match := _SENSOR.match(key))}  # fmt: skip
    return {sensor: value for sensor, value in found.items() if value is not None}


def parse_smart_log(text: str, tag: str) -> DriveHealth:
    """`nvme smart-log -o json` output (any version) into DriveHealth; raises NotSmartLog."""
    log = load_smart_log(text)
    health = DriveHealth(device=tag, protocol="nvme", media="nvme", source=SOURCE)
    warning = critical_warning(log.get("critical_warning"))
    for key, name in NVME_COUNTERS.items():
        value = warning if key == "critical_warning" else number(log.get(CLI_KEYS.get(key, key)))
        if value is not None:
            health.counters[name] = value
    for key, name in DATA_UNITS.items():
        units = number(log.get(key))
        if units is not None:
            health.counters[name] = units * NVME_DATA_UNIT_BYTES
    health.health_ok = None if warning is None else warning == 0
    sensors = sensor_temperatures(log)
    health.temperature_c = celsius(log.get("temperature"))
    if health.temperature_c is None and sensors:
        health.temperature_c = max(sensors.values())
    health.power_on_hours = number(log.get("power_on_hours"))
    health.power_cycles = number(log.get("power_cycles"))
    return health


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
        model=_read(os.path.join(base, "model")),
        serial=_read(os.path.join(base, "serial")),
        firmware=_read(os.path.join(base, "firmware_rev")),
        capacity_bytes=_capacity(base),
        temperature_warning_c=_warning_temperature(base),
    )


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _capacity(base: str) -> int | None:
    """The controller's namespaces (nvme0n1, or nvme0c0n1 under native multipath)."""
    try:
        names = [name for name in os.listdir(base) if _NAMESPACE.match(name)]
    except OSError:
        return None
    sizes = [number(_read(os.path.join(base, name, "size"))) for name in names]
    known = [size for size in sizes if size is not None]
    return sum(known) * SECTOR_BYTES if known else None


def _warning_temperature(base: str) -> int | None:
    """hwmon temp1_max, in m°C from kelvin (358 K: 84850), back to smartctl's 358 - 273."""
    # Kernels >= 5.10 hang hwmon under the controller, 5.5-5.9 under its PCI device.
    for pattern in ("hwmon*/temp1_max", "device/hwmon/hwmon*/temp1_max"):
        for path in sorted(glob.glob(os.path.join(glob.escape(base), pattern))):
            millidegrees = number(_read(path))
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
    read = _outcome(spec, runner.run(smart_log_args(spec)), runner.timeout)
    if read.problem:  # tags only: a failed read carries no health fields
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
