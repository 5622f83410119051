"""DriveHealth (+ verdict and baseline growth) into the points of the SMART and SMART_ATTR
measurements declared in diskprobe.schema.smart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.smart import SMART, SMART_ATTR
from diskprobe.smart.afr import AfrTable, Estimate
from diskprobe.smart.memory import Trend
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.verdict import Verdict, is_temperature, temperature_failed_in_past


@dataclass
class Judged:
    """What the collector worked out about one read, beside the read itself."""

    values: dict[str, int]  # counters plus derived ones (ssd_life_left_percent)
    trend: Trend = field(default_factory=Trend)
    verdict: Optional[Verdict] = None  # None: the read said nothing about health
    estimate: Optional[Estimate] = None


def has_health_data(health: DriveHealth) -> bool:
    """Did the read say anything about health (not just a failed open or an info page)?"""
    return health.health_ok is not None or bool(health.counters) or bool(health.attributes)


def drive_tags(health: DriveHealth) -> dict[str, str]:
    tags = {"device": health.device, "model": health.model, "serial": health.serial}
    tags["protocol"], tags["media"] = health.protocol, health.media
    return {key: value for key, value in tags.items() if value}


def smart_metric(health: DriveHealth, judged: Judged | None, time_ns: int) -> Metric:
    """The drive's point; `judged` None when the read failed or the drive slept."""
    fields: dict[str, FieldValue] = {"exit_status": health.exit_status}
    fields["power_mode"] = health.power_mode
    if health.standby:
        return Metric(SMART.name, drive_tags(health), fields, time_ns)
    if health.health_ok is not None:
        fields["health_ok"] = health.health_ok
    for name in ("temperature_c", "power_on_hours", "power_cycles", "capacity_bytes"):
        value = getattr(health, name)
        if value is not None:
            fields[name] = int(value)
    if health.firmware:
        fields["firmware"] = health.firmware
    if judged is not None:
        _judged_fields(health, judged, fields)
    return Metric(SMART.name, drive_tags(health), fields, time_ns)


def _judged_fields(health: DriveHealth, judged: Judged, fields: dict[str, FieldValue]) -> None:
    fields.update(judged.values)
    for name in ("reallocated_sectors", "pending_sectors"):
        if name in judged.values:
            fields[f"{name}_increase"] = judged.trend.increases.get(name, 0)
    for name, rate in judged.trend.per_day.items():
        fields[f"{name}_per_day"] = float(rate)
    if judged.estimate is not None:
        fields["afr_percent"] = judged.estimate.afr_percent
    if any(map(is_temperature, health.attributes)):
        fields["temperature_failed_in_past"] = temperature_failed_in_past(health)
    _log_fields(health, fields)
    if judged.verdict is not None:
        fields["verdict"] = judged.verdict.status
        fields["verdict_code"] = judged.verdict.code
        fields["verdict_reasons"] = ",".join(judged.verdict.reasons)


def _log_fields(health: DriveHealth, fields: dict[str, FieldValue]) -> None:
    """Self-test and error logs, where the read had them."""
    if health.self_test_last_status is not None:
        fields["self_test_last_status"] = health.self_test_last_status
    last, now = health.self_test_last_hours, health.power_on_hours
    if last is not None and now is not None:
        if health.protocol == "ata":  # the log's LifeTime(hours) is 16 bits: 65,592 h logs 56
            fields["self_test_age_hours"] = (now - last) % 65536
        elif now >= last:
            fields["self_test_age_hours"] = now - last
    if health.self_test_failed_count is not None:
        fields["self_test_failed_count"] = health.self_test_failed_count
    if health.error_log_count is not None:
        fields["error_log_count"] = health.error_log_count


def attribute_metrics(
    health: DriveHealth, time_ns: int, table: AfrTable | None = None
) -> list[Metric]:
    metrics = []
    for attribute in health.attributes:
        tags = {"device": health.device, "serial": health.serial}
        tags.update(id=str(attribute.id), name=attribute.name)
        fields: dict[str, FieldValue] = {
            "value": attribute.value,
            "worst": attribute.worst,
            "threshold": attribute.threshold,
        }
        if attribute.raw is not None:
            fields["raw"] = attribute.raw
        fields["raw_string"] = attribute.raw_string
        fields["prefailure"] = attribute.prefailure
        fields["when_failed"] = attribute.when_failed
        rate = table.attribute_rate(health, attribute) if table is not None else None
        if rate is not None:
            fields["afr_percent"] = rate
        present = {key: value for key, value in tags.items() if value}
        metrics.append(Metric(SMART_ATTR.name, present, fields, time_ns))
    return metrics
