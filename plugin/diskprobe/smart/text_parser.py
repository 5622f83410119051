"""smartctl text output (`--all`, `-x`, `--format=brief`) into DriveHealth, like json_parser.

Pure functions, no I/O; no pattern spans lines. A "Label: value" line is keyed by its whole
label, lower-cased with runs of spaces collapsed ("Serial Number:" and SCSI "Serial number:"
alike; "Warning  Comp. Temp. Threshold" with its double space). Numbers may carry any digit
grouping smartctl or a Windows locale printed: "1,234,567", "1.356", "16 829 004",
"500\u00a0107" and, where a non-UTF-8 byte stands between the groups (kept as it was read,
surrogateescape, or replaced on decoding), "10\udca0779" or "10\ufffd779". Anything
malformed is left unset ("300,$00,000,000 bytes" is no capacity), never guessed.
"""

from __future__ import annotations

import re
from typing import Optional

from diskprobe.smart.json_parser import media_from_attributes
from diskprobe.smart.json_protocols import NVME_COUNTERS, NVME_DATA_UNIT_BYTES
from diskprobe.smart.model import Attribute, DriveHealth
from diskprobe.smart.rawvalues import MAX_DIGITS, attribute_raw, bounded_int, parse_raw
from diskprobe.smart.runner import POWER_MODE_MESSAGE
from diskprobe.smart.text_logs import operating_limit, read_logs

# \udc80-\udcff: a byte that is not UTF-8, as the runner decodes it (surrogateescape): a
# Windows code page's no-break space, 0xA0, between digit groups ("500\xa0107")
_GROUP_SEPARATORS = ",.' \u00a0\u202f\u2019\ufffd\udc80-\udcff"
_NUMBER = re.compile(rf"\d{{1,3}}(?:[{_GROUP_SEPARATORS}]\d{{3}})+(?!\d)|\d+")
_CAPACITY_TAIL = re.compile(r"\s*(?:bytes\s*)?(?:\[[^\]]*\]\s*)?$")
_LABEL = re.compile(r"[ \t]*([A-Za-z][^:]*):(.*)")
_ATTRIBUTE_HEADER = re.compile(r"^[ \t]*ID#[ \t]+ATTRIBUTE_NAME", re.MULTILINE)
_ROW = r"^\s*(?P<id>\d{1,3})\s+(?P<name>\S+(?: \S+)*?)\s+"  # "Unknown Attribute" (6.6, armv7)
_NORMALIZED = r"(?P<value>\d+|---)\s+(?P<worst>\d+|---)\s+(?P<thresh>\d+|---)\s+"
_ATTRIBUTE_ROWS = (
    # ID# ATTRIBUTE_NAME FLAG VALUE WORST THRESH TYPE UPDATED WHEN_FAILED RAW_VALUE
    re.compile(
        rf"{_ROW}0x[0-9a-fA-F]{{4}}\s+{_NORMALIZED}(?P<type>Pre-fail|Old_age)\s+\S+\s+"
        r"(?P<failed>-|FAILING_NOW|In_the_past)\s+(?P<raw>.*?)\s*$"
    ),
    # ID# ATTRIBUTE_NAME FLAGS VALUE WORST THRESH FAIL RAW_VALUE (-x, --format=brief)
    re.compile(
        rf"{_ROW}(?P<type>[P-])[O-][S-][R-][C-][K-]\+?\s+{_NORMALIZED}"
        r"(?P<failed>-|NOW|Past)\s+(?P<raw>.*?)\s*$"
    ),
)
_WHEN_FAILED = {"NOW": "FAILING_NOW", "Past": "In_the_past", "-": ""}
_SCSI_ERRORS = re.compile(r"^[ \t]*(read|write|verify):[ \t]+(.*\S)", re.MULTILINE)
_SCSI_POWER_ON = re.compile(
    r"Accumulated power on time, hours:minutes[ \t]+(\d+):"
    r"|number of hours powered up[ \t]*=[ \t]*(\d+)"  # Seagate/Hitachi factory log
)
_SCSI_TEMPERATURE = re.compile(r"^[ \t]*Current temperature[ \t]*=[ \t]*(\d+)", re.MULTILINE)
# NVMe "SMART/Health Information" labels, as smartctl JSON keys (json_protocols.NVME_COUNTERS).
_NVME_LABELS = {
    "critical warning": "critical_warning",
    "available spare": "available_spare",
    "available spare threshold": "available_spare_threshold",
    "percentage used": "percentage_used",
    "host read commands": "host_reads",
    "host write commands": "host_writes",
    "controller busy time": "controller_busy_time",
    "unsafe shutdowns": "unsafe_shutdowns",
    "media and data integrity errors": "media_errors",
    "error information log entries": "num_err_log_entries",
    "warning comp. temperature time": "warning_temp_time",
    "critical comp. temperature time": "critical_comp_time",
}
Labels = dict[str, str]


def count(text: Optional[str]) -> int | None:
    """The leading number of a value ("2,137", "1.356", "47 Celsius", "0x04"), or None."""
    text = (text or "").strip()
    if text[:2].lower() == "0x":
        return parse_raw(text)
    match = _NUMBER.match(text)
    if match is None:
        return None
    digits = re.sub(r"\D", "", match.group())  # past 128 bits it is no counter
    return int(digits) if len(digits) <= MAX_DIGITS else None


def capacity(text: Optional[str]) -> int | None:
    """ "500,107,862,016 bytes [500 GB]" -> bytes; None unless the whole value is that shape."""
    match = _NUMBER.match((text or "").strip())
    if match is None or not _CAPACITY_TAIL.match(match.string, match.end()):
        return None
    return count(match.group()) or None


def labels(text: str) -> Labels:
    """Every "Label: value" line, label lower-cased with its spaces collapsed; first wins."""
    found: Labels = {}
    for line in text.splitlines():
        match = _LABEL.match(line)
        if match:
            found.setdefault(" ".join(match.group(1).lower().split()), match.group(2).strip())
    return found


def parse(text: str, tag: str) -> DriveHealth:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    health = DriveHealth(device=tag, source="text")
    asleep = POWER_MODE_MESSAGE.search(text)
    if asleep:  # "Device is in STANDBY mode, exit(2)": smartctl -n said nothing else
        health.power_mode = asleep.group(1).lower()
        return health
    info = labels(text)
    health.protocol = _protocol(info, text)
    _identity(info, health)
    health.health_ok = _health(info)
    if health.protocol == "nvme":
        _nvme(info, health)
    elif health.protocol == "scsi":
        _scsi(info, text, health)
    else:
        _ata(info, text, health)
    read_logs(text, health)  # self-test log, ATA error log count
    health.media = _media(info, health)
    return health


def _protocol(info: Labels, text: str) -> str:
    if "model number" in info or "SMART/Health Information (NVMe Log" in text:
        return "nvme"
    if "device model" in info or "ata version is" in info or _ATTRIBUTE_HEADER.search(text):
        return "ata"
    if {"vendor", "product", "smart health status", "transport protocol"} & info.keys():
        return "scsi"
    return ""


def _identity(info: Labels, health: DriveHealth) -> None:
    scsi_model = " ".join(info[key] for key in ("vendor", "product") if info.get(key))
    health.model = info.get("device model") or info.get("model number") or scsi_model
    serial = info.get("serial number", "")
    # A masked or empty serial ("--") is no serial: it must not key baselines together.
    health.serial = serial if any(char.isalnum() for char in serial) else ""
    health.firmware = info.get("firmware version") or info.get("revision") or ""
    for key in ("user capacity", "namespace 1 size/capacity", "total nvm capacity"):
        health.capacity_bytes = health.capacity_bytes or capacity(info.get(key))


def _health(info: Labels) -> bool | None:
    ata = info.get("smart overall-health self-assessment test result", "")
    if ata.startswith(("PASSED", "FAILED")):
        return ata.startswith("PASSED")
    scsi = info.get("smart health status", "")
    return scsi.upper() == "OK" if scsi else None


def _ata(info: Labels, text: str, health: DriveHealth) -> None:
    header = _ATTRIBUTE_HEADER.search(text)
    for line in text[header.end() :].splitlines() if header else []:
        attribute = _attribute(line, health.model)
        if attribute is None:
            continue
        health.add_attribute(attribute)
    _ata_values(info, text, health)


def _ata_values(info: Labels, text: str, health: DriveHealth) -> None:
    by_id = {attribute.id: attribute for attribute in health.attributes}
    health.power_on_hours = parse_raw(by_id[9].raw_string) if 9 in by_id else None
    health.power_cycles = parse_raw(by_id[12].raw_string) if 12 in by_id else None
    # As smartctl picks it: 194, else 190 where that is a temperature (Airflow_Temperature_Cel).
    sensor = by_id.get(194)
    if sensor is None and 190 in by_id and "temp" in by_id[190].name.lower():
        sensor = by_id[190]
    health.temperature_c = parse_raw(sensor.raw_string) if sensor else None
    if health.temperature_c is None:
        health.temperature_c = count(info.get("current temperature"))  # SCT status (-x)
    health.temperature_warning_c = operating_limit(info, text)  # devstat, SCT: not "recommended"


def _attribute(line: str, model: str) -> Attribute | None:
    match = _ATTRIBUTE_ROWS[0].match(line) or _ATTRIBUTE_ROWS[1].match(line)
    if match is None or not 0 < int(match["id"]) < 256:
        return None
    attribute_id, raw_string = int(match["id"]), match["raw"]
    return Attribute(
        id=attribute_id,
        name=match["name"],
        value=count(match["value"]) or 0,
        worst=count(match["worst"]) or 0,
        threshold=count(match["thresh"]) or 0,
        raw=attribute_raw(attribute_id, model, raw_string),
        raw_string=raw_string,
        prefailure=match["type"] in ("Pre-fail", "P"),
        when_failed=_WHEN_FAILED.get(match["failed"], match["failed"]),
    )


def _nvme(info: Labels, health: DriveHealth) -> None:
    for label, key in _NVME_LABELS.items():
        value = count(info.get(label))
        if value is not None:
            health.counters[NVME_COUNTERS[key]] = value
    for label, name in (("data units read", "data_read_bytes"),
                        ("data units written", "data_written_bytes")):  # fmt: skip
        units = count(info.get(label))
        if units is not None:
            health.counters[name] = units * NVME_DATA_UNIT_BYTES
    health.temperature_c = count(info.get("temperature"))
    health.temperature_warning_c = count(info.get("warning comp. temp. threshold")) or None
    health.power_on_hours = count(info.get("power on hours"))
    health.power_cycles = count(info.get("power cycles"))


def _scsi(info: Labels, text: str, health: DriveHealth) -> None:
    grown = count(info.get("elements in grown defect list"))
    if grown is not None:
        health.counters["grown_defects"] = grown
    for kind, columns in _SCSI_ERRORS.findall(text):  # "Total uncorrected errors": last column
        uncorrected = count(columns.split()[-1])
        if uncorrected is not None:
            health.counters.setdefault(f"{kind}_uncorrected_errors", uncorrected)
    non_medium = count(info.get("non-medium error count"))
    if non_medium is not None:
        health.counters["non_medium_errors"] = non_medium
    health.temperature_c = count(info.get("current drive temperature"))
    temperature = _SCSI_TEMPERATURE.search(text)  # SAS SSDs: "Current temperature = 25"
    if health.temperature_c is None and temperature:
        health.temperature_c = bounded_int(temperature.group(1))
    health.temperature_warning_c = count(info.get("drive trip temperature")) or None
    power_on = _SCSI_POWER_ON.search(text)
    health.power_on_hours = bounded_int(power_on[1] or power_on[2]) if power_on else None
    health.power_cycles = count(info.get("accumulated start-stop cycles"))


def _media(info: Labels, health: DriveHealth) -> str:
    if health.protocol == "nvme":
        return "nvme"
    rotation = info.get("rotation rate", "")
    if rotation.startswith("Solid State") or "percentage used endurance indicator" in info:
        return "ssd"
    if rotation.endswith("rpm"):
        return "hdd"
    return media_from_attributes(health)  # no rotation rate: what the attributes betray
