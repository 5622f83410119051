"""The protocol parts of a smartctl JSON document: the ATA attribute table, the NVMe health
log and the SCSI error counters, into DriveHealth attributes and counters.

Sample keys: "ata_smart_attributes": {"table": [{"id": 5, "value": 100, "raw": {"value": 0,
"string": "0"}, "when_failed": "", "flags": {"prefailure": true}}]},
"nvme_smart_health_information_log": {"critical_warning": 0, "data_units_read": ...},
"scsi_grown_defect_list": 56, "scsi_error_counter_log": {"read": {...}}.
NVME_COUNTERS names the counters the text path and nvme-cli fill too.
"""

from __future__ import annotations

from typing import Any, Callable

from diskprobe.smart.json_values import as_int, as_list, dig
from diskprobe.smart.model import Attribute, DriveHealth
from diskprobe.smart.rawvalues import attribute_raw

NVME_DATA_UNIT_BYTES = 512_000  # "data units" are thousands of 512-byte blocks
NVME_DATA_UNITS = {"data_units_read": "data_read_bytes", "data_units_written": "data_written_bytes"}
# smartctl's key in nvme_smart_health_information_log -> diskprobe's counter name.
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
WHEN_FAILED = {"now": "FAILING_NOW", "past": "In_the_past"}  # as smartctl's text prints them


def read_ata(data: dict[str, Any], health: DriveHealth) -> None:
    for row in as_list(dig(data, "ata_smart_attributes", "table")):
        attribute = ata_attribute(row, health.model)
        if attribute is not None:
            health.add_attribute(attribute)


def ata_attribute(row: Any, model: str) -> Attribute | None:
    """One row of the attribute table; None for a row without an id."""
    attribute_id = as_int(dig(row, "id"))
    if attribute_id is None:
        return None
    raw_string = str(dig(row, "raw", "string") or dig(row, "raw", "value") or "").strip()
    raw = attribute_raw(attribute_id, model, raw_string, as_int(dig(row, "raw", "value")))
    when_failed = str(dig(row, "when_failed") or "")
    return Attribute(
        id=attribute_id,
        name=str(dig(row, "name") or f"Attribute_{attribute_id}"),
        value=as_int(dig(row, "value")) or 0,
        worst=as_int(dig(row, "worst")) or 0,
        threshold=as_int(dig(row, "thresh")) or 0,
        raw=raw,
        raw_string=raw_string,
        prefailure=bool(dig(row, "flags", "prefailure")),
        when_failed=WHEN_FAILED.get(when_failed, when_failed),
    )


def read_nvme(data: dict[str, Any], health: DriveHealth) -> None:
    log = data.get("nvme_smart_health_information_log")
    if not isinstance(log, dict):
        return
    store_nvme_counters(health, lambda key: as_int(log.get(key)))
    if health.temperature_c is None:
        health.temperature_c = as_int(log.get("temperature"))
    if health.power_on_hours is None:
        health.power_on_hours = as_int(log.get("power_on_hours"))
    if health.power_cycles is None:
        health.power_cycles = as_int(log.get("power_cycles"))


def store_nvme_counters(health: DriveHealth, value_of: Callable[[str], int | None]) -> None:
    """NVME_COUNTERS and the data-unit byte counts into health.counters, the same for
    smartctl's JSON and nvme-cli's; `value_of` reads one smartctl key (None: absent)."""
    for key, name in NVME_COUNTERS.items():
        value = value_of(key)
        if value is not None:
            health.counters[name] = value
    for key, name in NVME_DATA_UNITS.items():
        units = value_of(key)
        if units is not None:
            health.counters[name] = units * NVME_DATA_UNIT_BYTES


def read_scsi(data: dict[str, Any], health: DriveHealth) -> None:
    grown = as_int(data.get("scsi_grown_defect_list"))
    if grown is not None:
        health.counters["grown_defects"] = grown
    errors = data.get("scsi_error_counter_log")
    for kind in ("read", "write", "verify"):
        value = as_int(dig(errors, kind, "total_uncorrected_errors"))
        if value is not None:
            health.counters[f"{kind}_uncorrected_errors"] = value
    non_medium = as_int(dig(data, "scsi_error_counter_log", "non_medium_error", "count"))
    if non_medium is None:
        non_medium = as_int(dig(data, "scsi_non_medium_error_count"))
    if non_medium is not None:
        health.counters["non_medium_errors"] = non_medium
