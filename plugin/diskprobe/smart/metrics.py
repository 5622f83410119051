"""DriveHealth (+ verdict and baseline growth) into the points of the SMART and SMART_ATTR
measurements declared in diskprobe.schema.smart."""

from __future__ import annotations

from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.smart import SMART, SMART_ATTR
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.verdict import Verdict


def has_health_data(health: DriveHealth) -> bool:
    """Did the read say anything about health (not just a failed open or an info page)?"""
    return health.health_ok is not None or bool(health.counters) or bool(health.attributes)


def drive_tags(health: DriveHealth) -> dict[str, str]:
    tags = {"device": health.device, "model": health.model, "serial": health.serial}
    tags["protocol"], tags["media"] = health.protocol, health.media
    return {key: value for key, value in tags.items() if value}


def smart_metric(
    health: DriveHealth,
    values: dict[str, int],
    increases: dict[str, int],
    verdict: Verdict | None,
    time_ns: int,
) -> Metric:
    """`values`: counters plus derived ones; `verdict` None when the read said nothing."""
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
    fields.update(values)
    for name in ("reallocated_sectors", "pending_sectors"):
        if name in values:
            fields[f"{name}_increase"] = increases.get(name, 0)
    if verdict is not None:
        fields["verdict"] = verdict.status
        fields["verdict_code"] = verdict.code
        fields["verdict_reasons"] = ",".join(verdict.reasons)
    return Metric(SMART.name, drive_tags(health), fields, time_ns)


def attribute_metrics(health: DriveHealth, time_ns: int) -> list[Metric]:
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
        present = {key: value for key, value in tags.items() if value}
        metrics.append(Metric(SMART_ATTR.name, present, fields, time_ns))
    return metrics
