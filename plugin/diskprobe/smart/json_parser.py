"""smartctl --json output (smartctl >= 7.0) into DriveHealth. Every key is optional.

Sample keys: "device": {"name": "/dev/sda", "type": "sat", "protocol": "ATA"},
"ata_smart_attributes": {"table": [{"id": 5, "value": 100, "raw": {"value": 0,
"string": "0"}, "when_failed": "", "flags": {"prefailure": true}}]},
"nvme_smart_health_information_log": {"critical_warning": 0, "data_units_read": ...},
"scsi_grown_defect_list": 56, "scsi_error_counter_log": {"read": {...}}.
"""

from __future__ import annotations

import json
import math
from typing import Any

from diskprobe.smart.model import Attribute, DriveHealth
from diskprobe.smart.rawvalues import attribute_raw, bounded_int, parse_raw
from diskprobe.smart.runner import POWER_MODE_MESSAGE

# Normalized values that mean "life left, %", in order of preference, by vendor use:
# 231 SSD_Life_Left (SandForce, Kingston), 233 Media_Wearout_Indicator (Intel),
# 177 Wear_Leveling_Count (Samsung), 202 Percent_Lifetime_Remain (Micron, Crucial),
# 169 Remaining_Lifetime_Perc (Toshiba, WD, Transcend), 173 Ave_Block-Erase_Count / wear
# (Micron, Innodisk, Virtium).
LIFE_LEFT_IDS = (231, 233, 177, 202, 169, 173)
NVME_DATA_UNIT_BYTES = 512_000  # "data units" are thousands of 512-byte blocks
NVME_DATA_UNITS = {"data_units_read": "data_read_bytes", "data_units_written": "data_written_bytes"}
NVME_COUNTERS = {
    "critical_warning": "critical_warning",
    "available_spare": "available_spare_percent",
    "available_spare_threshold": "available_spare_threshold_percent",
    "percentage_used": "percentage_used",
    "host_reads": "host_read_commands",
    "host_writes": "host_write_commands",
    "controller_busy_time": "controller_busy_minutes",
    "unsafe_shutdowns": "unsafe_shutdowns",
    "media_errors": "media_errors",
    "num_err_log_entries": "error_log_entries",
    "warning_temp_time": "warning_temp_minutes",
    "critical_comp_time": "critical_temp_minutes",
}


class NotSmartctlJson(ValueError):
    """The text is not smartctl JSON (older smartctl, garbage, or empty output)."""


class Unusable(str):
    """A JSON number that is no value (NaN, Infinity, 1e400, a 5000-digit integer): json
    accepts them, a counter cannot be one. It reads as absent; the drive keeps the rest."""


def _unusable(token: str) -> Unusable:
    return Unusable(token[:40])


def _json_int(token: str) -> int | Unusable:
    number = bounded_int(token)
    return _unusable(token) if number is None else number


def _json_float(token: str) -> float | Unusable:
    number = float(token)
    return number if math.isfinite(number) else _unusable(token)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str) and not isinstance(value, Unusable):
        return parse_raw(value)
    return None


def unusable_values(data: Any, limit: int = 5) -> list[str]:
    """Where the document has Unusable numbers ("temperature.current=NaN"), the first few.
    Iterative: a hostile document may nest as deep as json.loads allows."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack and len(found) < limit:
        path, value = stack.pop()
        if isinstance(value, Unusable):
            found.append(f"{path or '.'}={value}")
        elif isinstance(value, dict):
            stack.extend((f"{path}.{key}".lstrip("."), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return found


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _list(value: Any) -> list[Any]:
    """A JSON array where one is expected; anything else (a damaged document) is empty."""
    return value if isinstance(value, list) else []


def load(text: str) -> dict[str, Any]:
    try:
        data = json.loads(
            text, parse_int=_json_int, parse_float=_json_float, parse_constant=_unusable
        )
    except (ValueError, RecursionError) as error:
        raise NotSmartctlJson(f"not JSON: {error}") from None
    # Some captures are trimmed of the "smartctl" header; a "device" object is enough.
    if not isinstance(data, dict) or not (
        isinstance(data.get("smartctl"), dict) or isinstance(data.get("device"), dict)
    ):
        raise NotSmartctlJson("JSON without a 'smartctl' or 'device' object")
    return data


def power_mode(data: dict[str, Any]) -> str:
    """ "standby"/"sleep"/... when smartctl -n left the drive asleep, else "active"."""
    mode = data.get("power_mode")
    if isinstance(mode, str) and mode:
        return mode.lower()
    for message in _list(_dig(data, "smartctl", "messages")):
        match = POWER_MODE_MESSAGE.search(str(_dig(message, "string") or ""))
        if match:
            return match.group(1).lower()
    return "active"


def parse(data: dict[str, Any], tag: str) -> DriveHealth:
    health = DriveHealth(device=tag, source="json")
    health.exit_status = _int(_dig(data, "smartctl", "exit_status")) or 0
    health.power_mode = power_mode(data)
    protocol = str(_dig(data, "device", "protocol") or "").lower()
    health.protocol = {"ata": "ata", "nvme": "nvme", "scsi": "scsi"}.get(protocol, protocol)
    health.model = str(data.get("model_name") or data.get("scsi_model_name") or "").strip()
    health.serial = str(data.get("serial_number") or "").strip()
    health.firmware = str(
        data.get("firmware_version") or data.get("revision") or data.get("scsi_revision") or ""
    ).strip()
    passed = _dig(data, "smart_status", "passed")
    health.health_ok = passed if isinstance(passed, bool) else None
    health.temperature_c = _int(_dig(data, "temperature", "current"))
    health.temperature_warning_c = _temperature_warning(data)
    health.power_on_hours = _int(_dig(data, "power_on_time", "hours"))
    health.power_cycles = _int(data.get("power_cycle_count"))
    if health.power_cycles is None:
        health.power_cycles = _int(_dig(data, "scsi_start_stop_cycle_counter",
                                        "accumulated_start_stop_cycles"))  # fmt: skip
    health.capacity_bytes = _int(_dig(data, "user_capacity", "bytes")) or _int(
        data.get("nvme_total_capacity")
    )
    if health.protocol == "nvme":
        _nvme(data, health)
    elif health.protocol == "scsi":
        _scsi(data, health)
    else:
        _ata(data, health)
    health.media = _media(data, health)
    health.unusable = unusable_values(data)
    return health


def _temperature_warning(data: dict[str, Any]) -> int | None:
    for keys in (
        ("nvme_composite_temperature_threshold", "warning"),
        ("ata_sct_status", "temperature", "op_limit_max"),
        ("temperature", "op_limit_max"),
        ("temperature", "drive_trip"),
    ):
        value = _int(_dig(data, *keys))
        if value:
            return value
    return None


def _ata(data: dict[str, Any], health: DriveHealth) -> None:
    for row in _list(_dig(data, "ata_smart_attributes", "table")):
        attribute = _attribute(row, health.model)
        if attribute is None:
            continue
        health.add_attribute(attribute)


def _attribute(row: Any, model: str) -> Attribute | None:
    attribute_id = _int(_dig(row, "id"))
    if attribute_id is None:
        return None
    raw_string = str(_dig(row, "raw", "string") or _dig(row, "raw", "value") or "").strip()
    raw = attribute_raw(attribute_id, model, raw_string, _int(_dig(row, "raw", "value")))
    when_failed = str(_dig(row, "when_failed") or "")
    return Attribute(
        id=attribute_id,
        name=str(_dig(row, "name") or f"Attribute_{attribute_id}"),
        value=_int(_dig(row, "value")) or 0,
        worst=_int(_dig(row, "worst")) or 0,
        threshold=_int(_dig(row, "thresh")) or 0,
        raw=raw,
        raw_string=raw_string,
        prefailure=bool(_dig(row, "flags", "prefailure")),
        when_failed={"now": "FAILING_NOW", "past": "In_the_past"}.get(when_failed, when_failed),
    )


def _nvme(data: dict[str, Any], health: DriveHealth) -> None:
    log = data.get("nvme_smart_health_information_log")
    if not isinstance(log, dict):
        return
    for key, name in NVME_COUNTERS.items():
        value = _int(log.get(key))
        if value is not None:
            health.counters[name] = value
    for key, name in NVME_DATA_UNITS.items():
        units = _int(log.get(key))
        if units is not None:
            health.counters[name] = units * NVME_DATA_UNIT_BYTES
    if health.temperature_c is None:
        health.temperature_c = _int(log.get("temperature"))
    if health.power_on_hours is None:
        health.power_on_hours = _int(log.get("power_on_hours"))
    if health.power_cycles is None:
        health.power_cycles = _int(log.get("power_cycles"))


def _scsi(data: dict[str, Any], health: DriveHealth) -> None:
    grown = _int(data.get("scsi_grown_defect_list"))
    if grown is not None:
        health.counters["grown_defects"] = grown
    errors = data.get("scsi_error_counter_log")
    for kind in ("read", "write", "verify"):
        value = _int(_dig(errors, kind, "total_uncorrected_errors"))
        if value is not None:
            health.counters[f"{kind}_uncorrected_errors"] = value
    non_medium = _int(_dig(data, "scsi_error_counter_log", "non_medium_error", "count"))
    if non_medium is None:
        non_medium = _int(_dig(data, "scsi_non_medium_error_count"))
    if non_medium is not None:
        health.counters["non_medium_errors"] = non_medium


# Attributes only spinning disks have, and name fragments only flash has.
HDD_ATTRIBUTE_NAMES = ("Spin_Up_Time", "Seek_Error_Rate", "Spin_Retry_Count", "Load_Cycle_Count",
                       "Head_Flying_Hours", "Start_Stop_Count")  # fmt: skip
SSD_NAME_FRAGMENTS = ("wear", "life", "ssd", "erase", "nand", "flash")


def _media(data: dict[str, Any], health: DriveHealth) -> str:
    if health.protocol == "nvme":
        return "nvme"
    rotation = _dig(data, "rotation_rate")
    if isinstance(rotation, int) and not isinstance(rotation, bool):
        return "ssd" if rotation == 0 else "hdd"
    return media_from_attributes(health)


def media_from_attributes(health: DriveHealth) -> str:
    """For drives that do not report a rotation rate: what their attributes betray."""
    names = [attribute.name for attribute in health.attributes]
    if any(name in HDD_ATTRIBUTE_NAMES for name in names):
        return "hdd"
    lowered = " ".join(names).lower() + " " + health.model.lower()
    if any(fragment in lowered for fragment in SSD_NAME_FRAGMENTS):
        return "ssd"
    return "hdd" if names else ""  # no attributes, no rotation rate: no evidence either way


def life_left_percent(health: DriveHealth) -> int | None:
    """SSD wear as "life left, %" from the first vendor attribute present (see LIFE_LEFT_IDS)."""
    if health.media != "ssd":
        return None
    by_id = {attribute.id: attribute for attribute in health.attributes}
    for attribute_id in LIFE_LEFT_IDS:
        attribute = by_id.get(attribute_id)
        # A normalized value above 100 is no percentage (Apple's 169 reads 253).
        if (
            attribute is not None
            and "temp" not in attribute.name.lower()
            and attribute.value <= 100
        ):
            return attribute.value
    return None
