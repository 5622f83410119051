"""The self-test log, the ATA error log count and the drive's operating temperature limit
out of a smartctl JSON document; the status words and store_self_tests serve the text path too.

Sample keys: "ata_smart_self_test_log": {"extended": {"count": 2, "table": [{"status":
{"value": 121, "string": "Completed: read failure", "passed": false}, "lifetime_hours": 4}]}},
"nvme_self_test_log": {"current_self_test_operation": {"value": 0}, "table": [
{"self_test_result": {"value": 0}, "power_on_hours": 1380}]}, "ata_smart_error_log":
{"summary": {"count": 56}}. Every table lists the most recent test first.
"""

from __future__ import annotations

from typing import Any, Optional

from diskprobe.smart.json_values import as_int, as_list, dig
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.rawvalues import MAX_DIGITS

# One self-test log row as the parsers read it: (status word or None, power-on hours or None).
Row = tuple[Optional[str], Optional[int]]

# ATA self-test status, high nibble of the status byte (smartmontools ataprint.cpp): 0
# "Completed without error", 1 "Aborted by host", 2 "Interrupted (host reset)", 3 "Fatal or
# unknown error" and 4-8 "Completed: read failure" etc., which smartctl counts as failed
# (error_count_total) although its JSON leaves "passed" out for 3; 15 "Self-test routine in
# progress", for which smartctl's JSON says "passed": true, so the nibble goes first.
ATA_NIBBLES = {0: "passed", 1: "aborted", 2: "aborted", 15: "in_progress"}
ATA_NIBBLES.update(dict.fromkeys(range(3, 9), "failed"))
# NVMe self-test result, low nibble (nvmeprint.cpp): 0 "Completed without error", 1-4, 8, 9
# "Aborted: Self-test command" etc., 5 "Fatal or unknown test error", 6 "Completed: unknown
# failed segment", 7 "Completed: failed segments"; 15 marks an unused entry.
NVME_RESULTS = {0: "passed", 5: "failed", 6: "failed", 7: "failed"}
NVME_RESULTS.update(dict.fromkeys((1, 2, 3, 4, 8, 9), "aborted"))
# NVMe current self-test operation: 1 short, 2 extended, 0xe vendor specific test running.
NVME_RUNNING = (1, 2, 0xE)
# The limit a sane drive can state: SCT and device statistics hold it in a signed byte.
MAX_LIMIT_C = 127
DEVSTAT_LIMIT = "Specified Maximum Operating Temperature"


def store_self_tests(health: DriveHealth, rows: list[Row], running: bool = False) -> None:
    """A log's rows, most recent first, into health; no rows is an empty log ("none").
    `running`: an NVMe log says a test runs now, ahead of every row; when it began is unknown."""
    failed = sum(status == "failed" for status, _ in rows)
    if running:
        health.self_test_last_status, health.self_test_last_hours = "in_progress", None
    elif rows:
        health.self_test_last_status, health.self_test_last_hours = rows[0]
    else:
        health.self_test_last_status, health.self_test_last_hours = "none", None
    health.self_test_failed_count = failed


def count(value: Any) -> int | None:
    """A count or hours the drive stated; a negative one, or one past MAX_DIGITS digits (a
    float such as 1e300 in a damaged document: loading bounds integers only), is none."""
    number = as_int(value)
    return number if number is not None and 0 <= number < 10**MAX_DIGITS else None


def read_logs(data: dict[str, Any], health: DriveHealth) -> None:
    if health.protocol == "nvme":
        _nvme_self_tests(data.get("nvme_self_test_log"), health)
    elif health.protocol != "scsi":  # SCSI logs are another shape (scsi_self_test_N)
        _ata_self_tests(data.get("ata_smart_self_test_log"), health)
        errors = data.get("ata_smart_error_log")  # "-l xerror" (extended) or "-l error"
        for log in (dig(errors, "extended"), dig(errors, "summary")):
            health.error_log_count = count(dig(log, "count"))
            if health.error_log_count is not None:
                break


def _ata_self_tests(logs: Any, health: DriveHealth) -> None:
    # "-l xselftest" (extended) holds more entries; "-l selftest" (standard) is the fallback.
    for log in (dig(logs, "extended"), dig(logs, "standard")):
        table = [row for row in as_list(dig(log, "table")) if isinstance(row, dict)]
        if table:
            store_self_tests(health, [(_ata_status(row), count(row.get("lifetime_hours")))
                                      for row in table])  # fmt: skip
            return
        if count(dig(log, "count")) == 0:  # "No self-tests have been logged."
            store_self_tests(health, [])
            return


def _ata_status(row: dict[str, Any]) -> str | None:
    value = as_int(dig(row, "status", "value"))
    status = ATA_NIBBLES.get(value >> 4) if value is not None and 0 <= value <= 255 else None
    passed = dig(row, "status", "passed")
    if status is None and isinstance(passed, bool):  # a reserved nibble: smartctl's verdict
        status = "passed" if passed else "failed"
    return status


def _nvme_self_tests(log: Any, health: DriveHealth) -> None:
    if not isinstance(log, dict):
        return  # no log read ("Read Self-test Log failed", "Self-tests not supported")
    rows: list[Row] = []
    for row in as_list(log.get("table")):  # smartctl leaves unused slots null
        if isinstance(row, dict):
            result = as_int(dig(row, "self_test_result", "value"))
            rows.append((NVME_RESULTS.get(result) if result is not None else None,
                         count(row.get("power_on_hours"))))  # fmt: skip
    operation = as_int(dig(log, "current_self_test_operation", "value"))
    store_self_tests(health, rows, running=operation in NVME_RUNNING)


def operating_limit(data: dict[str, Any]) -> int | None:
    """The ATA drive's own maximum operating temperature, °C: device statistics, else SCT
    status "Specified Max Operating Temperature", else the SCT "Temperature Limit" maximum.
    Not the SCT "recommended" maximum: an ST8000NM0055 recommends 40 and is rated to 60."""
    for page in as_list(dig(data, "ata_device_statistics", "pages")):
        for entry in as_list(dig(page, "table")):
            if dig(entry, "name") == DEVSTAT_LIMIT and dig(entry, "flags", "valid") is not False:
                limit = plausible_limit(as_int(dig(entry, "value")))
                if limit is not None:
                    return limit
    for keys in (
        ("ata_sct_status", "temperature", "op_limit_max"),  # SCT status: the rated maximum
        ("ata_sct_temperature_history", "temperature", "limit_max"),  # "Min/Max ... Limit"
        ("ata_sct_status", "temperature", "limit_max"),  # no smartctl 7.x writes it there
        ("temperature", "limit_max"),  # smartctl copies the SCT values to the top level
    ):
        limit = plausible_limit(as_int(dig(data, *keys)))
        if limit is not None:
            return limit
    return None


def plausible_limit(value: int | None) -> int | None:
    """A stated limit, or None: 0 is none ("Min/Max Temperature Limit:  0/ 0 Celsius")."""
    return value if value is not None and 0 < value <= MAX_LIMIT_C else None
