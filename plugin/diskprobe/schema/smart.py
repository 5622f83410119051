"""diskprobe_smart and diskprobe_smart_attr: drive health and its verdict."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

# Defect counters whose growth is tracked (the *_per_day fields) and warns (smart/verdict.py).
GROWTH_COUNTERS = (
    "reallocated_sectors",
    "pending_sectors",
    "offline_uncorrectable",
    "reported_uncorrectable",
    "media_errors",
    "grown_defects",
)

SMART = MeasurementSpec(
    name="diskprobe_smart",
    description=(
        "One point per drive per SMART read (every `[smart] interval`). A drive left asleep by "
        "`nocheck` carries only `power_mode` and `exit_status`; a read that failed carries "
        "`exit_status` and no health fields. ATA, NVMe and SCSI fields are sent only for drives "
        "of that protocol that report them."
    ),
    tags=(
        TagSpec(
            "device",
            "Drive, unique per controller address: sda, nvme0, bus0-megaraid5, sda-megaraid0.",
        ),
        TagSpec("model", "Model name as the drive reports it."),
        TagSpec("serial", "Serial number; baselines are kept per serial."),
        TagSpec("protocol", "ata, nvme or scsi."),
        TagSpec("media", "hdd, ssd or nvme."),
    ),
    fields=(
        _f(
            "exit_status",
            "int",
            "bitmask",
            "smartctl's exit status, a bitmask (smartctl(8)): bits 0-2 say a command failed (0 the command line, 1 the device open, or the drive left in a low-power mode by `nocheck`, 2 a SMART or other ATA command to the disk, or a checksum error), bits 3-7 what the disk reports (3 DISK FAILING, 4 prefail attributes at or below threshold, 5 attributes at or below threshold in the past, 6 error log entries, 7 self-test errors). A read whose output holds no drive data (identity, counter, attribute or health verdict) failed whatever the bits: this field alone, one W!, one `exec_failures`. "
            "For nvme-cli reads 0, and -1 wherever a read did not run or timed out.",
        ),
        _f("health_ok", "bool", "", "smartctl's overall self-assessment: true for PASSED."),
        _f(
            "power_mode",
            "str",
            "",
            "active, or the low-power mode (standby, sleep, idle) the drive was left in.",
        ),
        _f("temperature_c", "int", "°C", "Current drive temperature."),
        _f("power_on_hours", "int", "h", "Power-on time."),
        _f("power_cycles", "int", "count", "Power cycles (SCSI: start-stop cycles)."),
        _f("capacity_bytes", "int", "B", "User capacity."),
        _f("firmware", "str", "", "Firmware revision."),
        _f("verdict", "str", "", "ok, warn or fail (see the verdict table)."),
        _f(
            "verdict_code",
            "int",
            "",
            "0 ok, 1 warn, 2 fail: for alert thresholds and worst-first sorting.",
        ),
        _f(
            "verdict_reasons",
            "str",
            "",
            "Comma-separated reasons, fail first: reallocated_sectors=8,pending_sectors=1.",
        ),
        _f("reallocated_sectors", "int", "sectors", "ATA 5 Reallocated_Sector_Ct, raw."),
        _f("spin_retries", "int", "count", "ATA 10 Spin_Retry_Count, raw."),
        _f("end_to_end_errors", "int", "count", "ATA 184 End-to-End_Error, raw."),
        _f("reported_uncorrectable", "int", "count", "ATA 187 Reported_Uncorrect, raw."),
        _f(
            "command_timeouts",
            "int",
            "count",
            "ATA 188 Command_Timeout, raw (Seagate: the low 16 bits, the documented count).",
        ),
        _f("reallocation_events", "int", "count", "ATA 196 Reallocated_Event_Count, raw."),
        _f("pending_sectors", "int", "sectors", "ATA 197 Current_Pending_Sector, raw."),
        _f("offline_uncorrectable", "int", "sectors", "ATA 198 Offline_Uncorrectable, raw."),
        _f("crc_errors", "int", "count", "ATA 199 UDMA_CRC_Error_Count, raw (cabling, not media)."),
        _f(
            "ssd_life_left_percent",
            "int",
            "%",
            "SSD life left: normalized value of 231, 233, 177, 202, 169 or 173 (the first present; docs/smart.md, Drives and values).",
        ),
        _f(
            "reallocated_sectors_increase",
            "int",
            "sectors",
            "Growth of reallocated_sectors since the drive's baseline (first value seen for this serial).",
        ),
        _f(
            "pending_sectors_increase",
            "int",
            "sectors",
            "Growth of pending_sectors since the drive's baseline.",
        ),
        _f(
            "afr_percent",
            "float",
            "%/year",
            "Estimated annualized failure rate of drives in this drive's state: the worst of its predictor attributes' rates in the failure-rate table (docs/smart.md). A population rate, not a prediction for this drive. Hard drives (ATA) only: no public data exists for the other media, so none is sent.",
        ),
        _f(
            "temperature_failed_in_past",
            "bool",
            "",
            "A temperature attribute (190, 194) was at or below its threshold in the past: an environmental excursion, recorded, not a warning.",
        ),
        *(
            _f(
                f"{name}_per_day",
                "float",
                "1/d",
                f"Net change of {name} per day over `[smart] growth_window` (kept in the state file; a window shorter than a day counts as a day).",
            )
            for name in GROWTH_COUNTERS
        ),
        _f(
            "self_test_last_status",
            "str",
            "",
            "Most recent self-test in the drive's log (ATA, NVMe): passed, failed, aborted, in_progress or none (empty log). failed warns.",
        ),
        _f(
            "self_test_age_hours",
            "int",
            "h",
            "Power-on hours since the most recent self-test ran.",
        ),
        _f("self_test_failed_count", "int", "count", "Failed self-tests in the drive's log."),
        _f(
            "error_log_count",
            "int",
            "count",
            "ATA SMART error log: errors the drive has recorded over its life (NVMe: error_log_entries).",
        ),
        _f(
            "critical_warning",
            "int",
            "bitmask",
            "NVMe critical warning (bit 0 spare, 1 temperature, 2 reliability, 3 read-only, 4 volatile backup).",
        ),
        _f("available_spare_percent", "int", "%", "NVMe available spare."),
        _f(
            "available_spare_threshold_percent",
            "int",
            "%",
            "NVMe spare threshold the drive warns at.",
        ),
        _f("percentage_used", "int", "%", "NVMe estimate of life used (may exceed 100)."),
        _f("data_read_bytes", "int", "B", "NVMe data units read x 512,000."),
        _f("data_written_bytes", "int", "B", "NVMe data units written x 512,000."),
        _f("host_read_commands", "int", "count", "NVMe host read commands."),
        _f("host_write_commands", "int", "count", "NVMe host write commands."),
        _f("controller_busy_minutes", "int", "min", "NVMe controller busy time."),
        _f("unsafe_shutdowns", "int", "count", "NVMe unsafe shutdowns."),
        _f("media_errors", "int", "count", "NVMe media and data integrity errors."),
        _f("error_log_entries", "int", "count", "NVMe error information log entries."),
        _f(
            "warning_temp_minutes",
            "int",
            "min",
            "NVMe time above the warning composite temperature.",
        ),
        _f(
            "critical_temp_minutes",
            "int",
            "min",
            "NVMe time above the critical composite temperature.",
        ),
        _f("grown_defects", "int", "count", "SCSI elements in the grown defect list."),
        _f("read_uncorrected_errors", "int", "count", "SCSI total uncorrected read errors."),
        _f("write_uncorrected_errors", "int", "count", "SCSI total uncorrected write errors."),
        _f("verify_uncorrected_errors", "int", "count", "SCSI total uncorrected verify errors."),
        _f("non_medium_errors", "int", "count", "SCSI non-medium error count."),
    ),
    series_tags=("device",),
)

SMART_ATTR = MeasurementSpec(
    name="diskprobe_smart_attr",
    description="One point per ATA SMART attribute per read (`[smart] attributes = true`).",
    tags=(
        TagSpec("device", "As in diskprobe_smart."),
        TagSpec("serial", "As in diskprobe_smart."),
        TagSpec("id", "Attribute number (5, 197, ...)."),
        TagSpec("name", "Attribute name as smartctl prints it (Reallocated_Sector_Ct)."),
    ),
    fields=(
        _f("value", "int", "", "Normalized value (vendor scale, usually 100 or 200 when new)."),
        _f("worst", "int", "", "Lowest normalized value seen."),
        _f("threshold", "int", "", "Failure threshold for the normalized value."),
        _f("raw", "int", "", "Raw value as a number, where parsable (see raw_string)."),
        _f("raw_string", "str", "", "Raw value as smartctl prints it (38 (Min/Max 20/45))."),
        _f("prefailure", "bool", "", "true for pre-failure attributes, false for old-age ones."),
        _f("when_failed", "str", "", "Empty, FAILING_NOW or In_the_past."),
        _f(
            "afr_percent",
            "float",
            "%/year",
            "Annualized failure rate observed for drives with this attribute's raw value, from the failure-rate table (docs/smart.md); only for hard drives and attributes the table covers.",
        ),
    ),
    series_tags=("device", "id"),
)
