"""The verdict ops alert on: ok / warn / fail with its reasons, from one table of rules.

Quiet by design (a 10,000-drive fleet reads every warning): `fail` is for hard facts only
(smartctl's overall FAILED, an attribute failing now, NVMe critical warnings other than
temperature, a worn-out drive, or an estimated failure rate above `afr_fail_percent`); `warn`
is for what raises a drive's risk measurably: a failure-rate estimate several times its
population's (smart/afr.py, from Backblaze's fleet through Scrutiny's table), growth of a
defect counter, any count the drive gives of lost or unreadable data, little life left, heat
at or above the drive's own operating limit, a failed self-test. Not warnings: command
timeouts as such (no higher failure rate up to 100 in Backblaze's data), a temperature
attribute that failed in the past (an environmental excursion: field
temperature_failed_in_past), attributes whose normalized value and threshold are both 0 (no
health meaning). Every limit can be overridden in [smart] and [smart.thresholds].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from diskprobe.schema.smart import GROWTH_COUNTERS as SMART_GROWTH_COUNTERS
from diskprobe.smart.afr import Estimate
from diskprobe.smart.model import Attribute, DriveHealth
from diskprobe.smart.thresholds import DEFAULT_THRESHOLDS, FAIL, OK, WARN, Threshold

CODES = {OK: 0, WARN: 1, FAIL: 2}
# Counters whose growth warns (the drive lost or nearly lost data again): as the schema has them.
GROWTH_COUNTERS = SMART_GROWTH_COUNTERS
TEMPERATURE_BIT = 0x02  # NVMe critical warning bit 1: temperature (warns; the others fail)


@dataclass(frozen=True)
class Verdict:
    status: str
    reasons: tuple[str, ...]

    @property
    def code(self) -> int:
        return CODES[self.status]


@dataclass(frozen=True)
class VerdictRules:
    """The limits in force: [smart.thresholds] over the defaults, and the estimate's."""

    thresholds: Mapping[str, Threshold] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    afr_warn_multiple: float = 2.0  # x the media's baseline; 0 disables
    afr_fail_percent: float = 100.0  # % per drive-year; 0 disables


@dataclass(frozen=True)
class Evidence:
    """What the verdict weighs besides the read itself."""

    values: Mapping[str, int]  # counters plus derived ones (ssd_life_left_percent)
    increases: Mapping[str, int] = field(default_factory=dict)  # since the drive's baseline
    last_day: Mapping[str, int] = field(default_factory=dict)  # growth within the last 24 h
    estimate: Optional[Estimate] = None
    baseline_afr: Optional[float] = None  # the estimate of a defect-free drive of that media


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


def meaningful(attribute: Attribute) -> bool:
    """Normalized value and threshold both 0: "not maintained" (SandForce 177/233), no health."""
    return not (attribute.value == 0 and attribute.threshold == 0)


def is_temperature(attribute: Attribute) -> bool:
    return attribute.id in (190, 194) or "temp" in attribute.name.lower()


def temperature_failed_in_past(health: DriveHealth) -> bool:
    return any(a.when_failed == "In_the_past" and is_temperature(a) for a in health.attributes)


def judge(health: DriveHealth, evidence: Evidence, rules: VerdictRules | None = None) -> Verdict:
    rules = rules or VerdictRules()
    findings: list[tuple[str, str]] = []
    if health.health_ok is False:
        findings.append((FAIL, "smart_overall=FAILED"))
    findings += _attribute_findings(health)
    findings += _nvme_findings(evidence.values)
    for name, threshold in rules.thresholds.items():
        value = evidence.values.get(name)
        if value is not None and (level := threshold.level(value)) != OK:
            findings.append((level, f"{name}={value}"))
    findings += _estimate_findings(evidence, rules)
    findings += _growth_findings(evidence)
    limit = health.temperature_warning_c
    if limit and health.temperature_c is not None and health.temperature_c >= limit:
        findings.append((WARN, f"temperature_c={health.temperature_c}"))
    if health.self_test_last_status == "failed":
        findings.append((WARN, "self_test=failed"))
    status = FAIL if any(s == FAIL for s, _ in findings) else WARN if findings else OK
    # Fail reasons first, then warnings, each in rule order.
    ordered = [r for s, r in findings if s == FAIL] + [r for s, r in findings if s == WARN]
    return Verdict(status, tuple(dict.fromkeys(ordered)))  # one reason, however many sources


def _attribute_findings(health: DriveHealth) -> list[tuple[str, str]]:
    findings = []
    for attribute in filter(meaningful, health.attributes):
        if attribute.when_failed == "FAILING_NOW":
            findings.append((FAIL, f"failing_now={attribute.name}"))
        elif attribute.when_failed == "In_the_past" and not is_temperature(attribute):
            findings.append((WARN, f"failed_in_past={attribute.name}"))
    return findings


def _nvme_findings(values: Mapping[str, int]) -> list[tuple[str, str]]:
    findings = []
    warning = values.get("critical_warning")
    if warning:
        level = WARN if warning == TEMPERATURE_BIT else FAIL
        findings.append((level, f"critical_warning={warning}"))
    spare, spare_threshold = (
        values.get("available_spare_percent"),
        values.get("available_spare_threshold_percent"),
    )
    if spare is not None and spare_threshold is not None and spare < spare_threshold:
        findings.append((FAIL, f"available_spare_percent={spare}"))
    return findings


def _estimate_findings(evidence: Evidence, rules: VerdictRules) -> list[tuple[str, str]]:
    estimate = evidence.estimate
    if estimate is None:
        return []
    reason = f"afr_percent={estimate.afr_percent:g}({estimate.attribute}={estimate.value})"
    if rules.afr_fail_percent > 0 and estimate.afr_percent >= rules.afr_fail_percent:
        return [(FAIL, reason)]
    baseline = evidence.baseline_afr
    warn_at = baseline * rules.afr_warn_multiple if baseline else 0.0
    if rules.afr_warn_multiple > 0 and warn_at > 0 and estimate.afr_percent >= warn_at:
        return [(WARN, reason)]
    return []


def _growth_findings(evidence: Evidence) -> list[tuple[str, str]]:
    findings = []
    for name in GROWTH_COUNTERS:
        grown = evidence.increases.get(name, 0)
        if grown > 0:
            findings.append((WARN, f"{name}_increase={grown}"))
        elif evidence.last_day.get(name, 0) > 0:
            findings.append((WARN, f"{name}_growth_24h={evidence.last_day[name]}"))
    return findings
