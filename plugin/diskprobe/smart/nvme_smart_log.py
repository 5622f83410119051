"""`nvme smart-log <dev> -o json` output (any nvme-cli version) into DriveHealth.

nvme-cli's JSON differs by version, and every variant is read into the same DriveHealth
fields as the smartctl JSON path (counter names from json_protocols.NVME_COUNTERS):
- critical_warning: an int (2.3), an object {"value": N, "available_spare": 0, ...} (the 2.11
  capture; recent releases print it so with --verbose, some spell it "Value"), or bits only;
- temperature and temperature_sensor_N are kelvin (0: not reported); sent as °C, K - 273 as
  smartctl does, so a drive reads the same whichever tool read it;
- 128-bit counters: JSON integers (2.x), floats (1.x: 9898518.0 or 1.2e+10) or strings
  ("9898518", "%Lf" "9898518.000000"); some releases capitalise keys ("Temperature").
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from diskprobe.smart.json_protocols import store_nvme_counters
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.rawvalues import bounded_int, parse_raw

SOURCE = "nvme-cli"  # DriveHealth.source of a read through nvme-cli
KELVIN_OFFSET = 273  # smartctl's NVMe conversion: 310 K -> 37 °C
# nvme-cli's key for each smartctl key in NVME_COUNTERS, where the two differ.
CLI_KEYS = {
    "available_spare": "avail_spare",
    "available_spare_threshold": "spare_thresh",
    "percentage_used": "percent_used",
    "host_reads": "host_read_commands",
    "host_writes": "host_write_commands",
}
# critical_warning object members, by bit (NVMe base spec, SMART / Health log byte 0).
WARNING_BITS = ("available_spare", "temp_threshold", "reliability_degraded", "ro",
                "vmbu_failed", "pmr_ro")  # fmt: skip
_SENSOR = re.compile(r"temperature_sensor_([0-9]{1,3})$")  # NVMe has sensors 1 to 8
_LOG_KEYS = ("critical_warning", "temperature", "data_units_read", "percent_used", "avail_spare")


class NotSmartLog(ValueError):
    """The text is not an `nvme smart-log -o json` object (garbage, text, empty output)."""


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

    def value_of(key: str) -> int | None:  # smartctl's key, read under nvme-cli's spelling
        return warning if key == "critical_warning" else number(log.get(CLI_KEYS.get(key, key)))

    store_nvme_counters(health, value_of)
    health.health_ok = None if warning is None else warning == 0
    sensors = sensor_temperatures(log)
    health.temperature_c = celsius(log.get("temperature"))
    if health.temperature_c is None and sensors:
        health.temperature_c = max(sensors.values())
    health.power_on_hours = number(log.get("power_on_hours"))
    health.power_cycles = number(log.get("power_cycles"))
    return health
