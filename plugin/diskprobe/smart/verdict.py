"""The verdict ops alert on: ok / warn / fail with its reasons, from one table of rules.

Why these rules (Backblaze's published drive-stats analyses, "What SMART stats tell us about
hard drives", 2016, and the quarterly data since): five ATA raw values separate failing
drives from healthy ones: 5 Reallocated_Sector_Ct, 187 Reported_Uncorrect,
188 Command_Timeout, 197 Current_Pending_Sector, 198 Offline_Uncorrectable. Most healthy
drives report 0 for all five; a drive with any of them above 0 is far more likely to fail,
and the rate climbs steeply with the count, so the first count warns and double-digit
pending/uncorrectable counts fail. NVMe and SCSI drives state their own condition
(critical warning bits, spare below threshold, media errors, grown defects, uncorrected
errors), and those are believed. Every threshold can be overridden in [smart.thresholds].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from diskprobe.smart.model import DriveHealth
from diskprobe.smart.thresholds import DEFAULT_THRESHOLDS, FAIL, OK, WARN, Threshold

CODES = {OK: 0, WARN: 1, FAIL: 2}
BACKBLAZE_FIVE = (
    "reallocated_sectors",
    "reported_uncorrectable",
    "command_timeouts",
    "pending_sectors",
    "offline_uncorrectable",
)


@dataclass(frozen=True)
class Verdict:
    status: str
    reasons: tuple[str, ...]

    @property
    def code(self) -> int:
        return CODES[self.status]


def merge_thresholds(overrides: Mapping[str, Mapping[str, int]]) -> dict[str, Threshold]:
    """Config [smart.thresholds] on top of the defaults; a negative limit disables it."""
    merged = dict(DEFAULT_THRESHOLDS)
    for name, limits in overrides.items():
        base = merged.get(name, Threshold())
        warn = _limit(limits, "warn", base.warn)
        merged[name] = Threshold(warn, _limit(limits, "fail", base.fail), base.below)
    return merged


def _limit(limits: Mapping[str, int], key: str, default: int | None) -> int | None:
    value = limits.get(key, default)
    return None if value is None or value < 0 else value


def judge(
    health: DriveHealth,
    values: Mapping[str, int],
    increases: Mapping[str, int],
    thresholds: Mapping[str, Threshold] = DEFAULT_THRESHOLDS,
) -> Verdict:
    """`values`: the drive's counters plus derived ones (ssd_life_left_percent);
    `increases`: growth of the Backblaze five since the drive's baseline."""
    findings: list[tuple[str, str]] = []
    if health.health_ok is False:
        findings.append((FAIL, "smart_overall=FAILED"))
    for attribute in health.attributes:
        if attribute.when_failed == "FAILING_NOW":
            findings.append((FAIL, f"failing_now={attribute.name}"))
        elif attribute.when_failed == "In_the_past":
            findings.append((WARN, f"failed_in_past={attribute.name}"))
    warning = values.get("critical_warning")
    if warning:
        findings.append((FAIL, f"critical_warning={warning}"))
    spare, spare_threshold = (
        values.get("available_spare_percent"),
        values.get("available_spare_threshold_percent"),
    )
    if spare is not None and spare_threshold is not None and spare < spare_threshold:
        findings.append((FAIL, f"available_spare_percent={spare}"))
    for name, threshold in thresholds.items():
        value = values.get(name)
        if value is not None and (level := threshold.level(value)) != OK:
            findings.append((level, f"{name}={value}"))
    for name in BACKBLAZE_FIVE:
        grown = increases.get(name, 0)
        if grown > 0:
            findings.append((WARN, f"{name}_increase={grown}"))
    limit = health.temperature_warning_c
    if limit and health.temperature_c is not None and health.temperature_c >= limit:
        findings.append((WARN, f"temperature_c={health.temperature_c}"))
    status = FAIL if any(s == FAIL for s, _ in findings) else WARN if findings else OK
    # Fail reasons first, then warnings, each in rule order.
    ordered = [r for s, r in findings if s == FAIL] + [r for s, r in findings if s == WARN]
    return Verdict(status, tuple(dict.fromkeys(ordered)))  # one reason, however many sources


FIXED_RULES = (
    (FAIL, "smart_overall=FAILED", "smartctl's overall self-assessment is FAILED"),
    (FAIL, "failing_now=NAME", "an ATA attribute is at or below its threshold now"),
    (FAIL, "critical_warning=N", "NVMe critical warning bits set (spare, temperature, "
     "reliability, read-only, volatile backup)"),
    (FAIL, "available_spare_percent=N", "NVMe spare below the drive's own threshold"),
    (WARN, "failed_in_past=NAME", "an ATA attribute was at or below its threshold in the past"),
    (WARN, "NAME_increase=N", "any of 5, 187, 188, 197, 198 grew since the drive's baseline "
     "(first values seen for its serial)"),
    (WARN, "temperature_c=N", "temperature at or above the drive's own warning limit "
     "(NVMe warning threshold, ATA SCT limit, SCSI trip)"),
)  # fmt: skip


def render_table() -> str:
    """The verdict table of docs/smart.md, from the rules above (a test keeps them equal)."""
    lines = ["| verdict | reason | when |", "| --- | --- | --- |"]
    lines += [f"| {level} | `{reason}` | {when} |" for level, reason, when in FIXED_RULES]
    for name, threshold in DEFAULT_THRESHOLDS.items():
        sign = "<=" if threshold.below else ">="
        for level, limit in ((FAIL, threshold.fail), (WARN, threshold.warn)):
            if limit is not None:
                lines.append(f"| {level} | `{name}=N` | {name} {sign} {limit} |")
    return "\n".join(lines) + "\n"
