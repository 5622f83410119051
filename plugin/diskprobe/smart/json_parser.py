"""smartctl --json output (smartctl >= 7.0) into DriveHealth. Every key is optional.

Sample keys: "device": {"name": "/dev/sda", "type": "sat", "protocol": "ATA"},
"model_name", "serial_number", "smart_status": {"passed": true}, "temperature":
{"current": 38}. The protocol parts (attribute table, NVMe log, SCSI counters) are read in
json_protocols; numbers and keys of a damaged document through json_values. The media and
life-left guesses here serve the text path as well.
"""

from __future__ import annotations

import json
from typing import Any

from diskprobe.smart.json_logs import operating_limit, read_logs
from diskprobe.smart.json_protocols import read_ata, read_nvme, read_scsi
from diskprobe.smart.json_values import (
    as_int,
    as_list,
    dig,
    json_float,
    json_int,
    unusable,
    unusable_values,
)
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.runner import POWER_MODE_MESSAGE

# Normalized values that mean "life left, %", in order of preference, by vendor use:
# 231 SSD_Life_Left (SandForce, Kingston), 233 Media_Wearout_Indicator (Intel),
# 177 Wear_Leveling_Count (Samsung), 202 Percent_Lifetime_Remain (Micron, Crucial),
# 169 Remaining_Lifetime_Perc (Toshiba, WD, Transcend), 173 Ave_Block-Erase_Count / wear
# (Micron, Innodisk, Virtium).
LIFE_LEFT_IDS = (231, 233, 177, 202, 169, 173)


class NotSmartctlJson(ValueError):
    """The text is not smartctl JSON (older smartctl, garbage, or empty output)."""


def load(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text, parse_int=json_int, parse_float=json_float, parse_constant=unusable)
    except (ValueError, RecursionError) as error:
        raise NotSmartctlJson(f"not JSON: {error}") from None
    # Some captures are trimmed of the "smartctl" header; a "device" object is enough.
    if not isinstance(data, dict) or not (
        isinstance(data.get("smartctl"), dict) or isinstance(data.get("device"), dict)
    ):
        raise NotSmartctlJson("JSON without a 'smartctl' or 'device' object")
    return data


def messages(data: dict[str, Any]) -> list[str]:
    """smartctl's own messages (smartctl.messages[].string), the empty ones left out."""
    found = as_list(dig(data, "smartctl", "messages"))
    texts = [str(dig(message, "string") or "") for message in found]
    return [text for text in texts if text]


def power_mode(data: dict[str, Any]) -> str:
    """ "standby"/"sleep"/... when smartctl -n left the drive asleep, else "active"."""
    mode = data.get("power_mode")
    if isinstance(mode, str) and mode:
        return mode.lower()
    for message in messages(data):
        match = POWER_MODE_MESSAGE.search(message)
        if match:
            return match.group(1).lower()
    return "active"


def parse(data: dict[str, Any], tag: str) -> DriveHealth:
    health = DriveHealth(device=tag, source="json")
    health.exit_status = as_int(dig(data, "smartctl", "exit_status")) or 0
    health.power_mode = power_mode(data)
    protocol = str(dig(data, "device", "protocol") or "").lower()
    health.protocol = {"ata": "ata", "nvme": "nvme", "scsi": "scsi"}.get(protocol, protocol)
    health.model = str(data.get("model_name") or data.get("scsi_model_name") or "").strip()
    health.serial = str(data.get("serial_number") or "").strip()
    health.firmware = str(
        data.get("firmware_version") or data.get("revision") or data.get("scsi_revision") or ""
    ).strip()
    passed = dig(data, "smart_status", "passed")
    health.health_ok = passed if isinstance(passed, bool) else None
    health.temperature_c = as_int(dig(data, "temperature", "current"))
    health.temperature_warning_c = _temperature_warning(data)
    health.power_on_hours = as_int(dig(data, "power_on_time", "hours"))
    health.power_cycles = as_int(data.get("power_cycle_count"))
    if health.power_cycles is None:
        health.power_cycles = as_int(dig(data, "scsi_start_stop_cycle_counter",
                                         "accumulated_start_stop_cycles"))  # fmt: skip
    health.capacity_bytes = as_int(dig(data, "user_capacity", "bytes")) or as_int(
        data.get("nvme_total_capacity")
    )
    if health.protocol == "nvme":
        read_nvme(data, health)
    elif health.protocol == "scsi":
        read_scsi(data, health)
    else:
        read_ata(data, health)
    read_logs(data, health)  # self-test log, ATA error log count
    health.media = _media(data, health)
    health.unusable = unusable_values(data)
    return health


def _temperature_warning(data: dict[str, Any]) -> int | None:
    """NVMe's warning threshold, ATA's operating limit (json_logs), SCSI's trip temperature."""
    nvme = as_int(dig(data, "nvme_composite_temperature_threshold", "warning"))
    return nvme or operating_limit(data) or as_int(dig(data, "temperature", "drive_trip")) or None


# Attributes only spinning disks have, and name fragments only flash has.
HDD_ATTRIBUTE_NAMES = ("Spin_Up_Time", "Seek_Error_Rate", "Spin_Retry_Count", "Load_Cycle_Count",
                       "Head_Flying_Hours", "Start_Stop_Count")  # fmt: skip
SSD_NAME_FRAGMENTS = ("wear", "life", "ssd", "erase", "nand", "flash")


def _media(data: dict[str, Any], health: DriveHealth) -> str:
    if health.protocol == "nvme":
        return "nvme"
    rotation = dig(data, "rotation_rate")
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
        # A normalized value above 100 is no percentage (Apple's 169 reads 253); value and
        # threshold both 0 is "not maintained" (SandForce 177/233: "000 000 000"), no wear.
        if (
            attribute is not None
            and "temp" not in attribute.name.lower()
            and attribute.value <= 100
            and not (attribute.value == 0 and attribute.threshold == 0)
        ):
            return attribute.value
    return None
