"""The drives of the simulated fleet (tests/bench/fleet_sim.py): real diskprobe SMART lines from
the reviewed golden cases (tests/golden/smart-json/*/expected.out, the real collector's output
for real smartctl reports) and each drive's history of reads.

Healthy drives come from golden cases whose line fires no alert (checked against the alert
thresholds here, so a new golden case cannot sneak in a firing "healthy" drive). Failing
drives come from the failing golden cases; where a counter grows, the growing field, the
`*_per_day` rates (diskprobe's own growth code, compute/growth.py) and the verdict reasons
follow it read by read, as in tests/dashboard_data.py's fleet block.

Why golden cases and not the 320-report fleet sample: the golden lines are reviewed and
already carry every field diskprobe derives (verdict, afr_percent), without running the
collector over 320 reports before every bench run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from diskprobe.compute import growth
from diskprobe.config.sections import SmartConfig

from lineproto import Point, Value, parse_lines

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "smart-json"
GROWTH_WINDOW_S = SmartConfig().growth_window
SMART_INTERVAL_S = SmartConfig().interval
DAY_S = 86400

# Golden cases by role. Every healthy one is checked by `fires_nothing` at load.
HDD_CASES = ("ata-hdd-hgst-huh721008ale604-he10", "ata-hdd-seagate-st16000nm001g-exos-x16",
             "ata-hdd-toshiba-mg09aca18te", "ata-hdd-wdc-wd181kryz", "scsi-seagate-st1200mm0088")
NVME_CASES = ("nvme-samsung-mzqlb1t9hajr", "nvme-micron-7450-mtfdkcc3t2tfs",
              "nvme-intel-ssdpe2kx080t8")
BOOT_CASES = ("ata-ssd-samsung-mz7lh1t9hmlt",)


@dataclass(frozen=True)
class Failure:
    """How a failing drive fails: its golden case and the counter that grows (if any)."""

    kind: str
    case: str
    counter: str = ""  # the growing diskprobe_smart field
    per_day: int = 0  # its growth per day over the last `days` days
    days: int = 0


HDD_FAILURES = (
    Failure("fail-static", "failing-usb-jmicron-hitachi-hds721050dle630"),
    Failure("realloc-growing", "failing-ata-hdd-seagate-st3500418as-realloc304",
            "reallocated_sectors", 8, 10),
    Failure("pending-growing", "failing-ata-hdd-seagate-st3000nm0033", "pending_sectors", 2, 5),
)
NVME_FAILURES = (
    Failure("nvme-critical-warning", "failing-nvme-samsung-mzwll3t2hajq-critical-warning"),
    Failure("nvme-media-growing", "failing-nvme-samsung-970-evo-500gb-media-errors",
            "media_errors", 1, 6),
)


@dataclass(frozen=True)
class Golden:
    """One golden case's diskprobe_smart point and its diskprobe_smart_attr points."""

    case: str
    smart: Point
    attrs: tuple[Point, ...]


def load_golden(case: str) -> Golden:
    points = parse_lines((GOLDEN / case / "expected.out").read_text(encoding="utf-8"))
    (smart,) = [p for p in points if p.measurement == "diskprobe_smart"]
    attrs = tuple(p for p in points if p.measurement == "diskprobe_smart_attr")
    return Golden(case, smart, attrs)


def fires_nothing(fields: dict[str, Value]) -> bool:
    """No drive alert of dashboards/alerts fires on this line (their thresholds)."""
    def number(name: str, default: float = 0.0) -> float:
        value = fields.get(name, default)
        return float(value) if isinstance(value, (int, float)) else default

    rates = [number(name) for name in fields if name.endswith("_per_day")]
    spare = number("available_spare_percent", 100.0) - number("available_spare_threshold_percent")
    return (fields.get("verdict") == "ok" and number("critical_warning") == 0
            and number("percentage_used") < 79.5 and spare > 10.5
            and number("afr_percent") <= 5.74 and not any(rate > 0 for rate in rates))


def healthy_templates(cases: tuple[str, ...]) -> tuple[Golden, ...]:
    loaded = tuple(load_golden(case) for case in cases)
    for golden in loaded:
        assert fires_nothing(golden.smart.fields), f"{golden.case} is no healthy template"
    return loaded


def read_times(anchor_s: int, days: int) -> list[int]:
    """When a drive was read (seconds, oldest first): daily for `days` days, then every
    [smart] interval over the last day; the last read 10 minutes before the anchor."""
    last = anchor_s - 600
    step = int(SMART_INTERVAL_S)
    recent = list(range(last - DAY_S + step, last + 1, step))
    daily = [last - k * DAY_S for k in range(days, 0, -1)]
    return daily + recent


def history(golden: Golden, times: list[int], failure: Failure | None,
            salt: int) -> list[tuple[int, dict[str, Value]]]:
    """The drive's reads: (time in s, diskprobe_smart fields). Temperature wanders and
    power-on hours count up on every drive; a failing drive's counter grows, with its
    *_per_day rate from diskprobe's growth code."""
    base = golden.smart.fields
    last = times[-1]
    hours = base.get("power_on_hours")
    records: list[list[float]] = []
    reads = []
    for when in times:
        fields = dict(base)
        if isinstance(hours, int):
            fields["power_on_hours"] = max(0, hours - (last - when) // 3600)
        temperature = base.get("temperature_c")
        if isinstance(temperature, int):
            fields["temperature_c"] = temperature + (when // 3600 + salt) % 5 - 2
        if failure is not None and failure.counter:
            grow(fields, failure, last - when, records, when)
        reads.append((when, fields))
    return reads


def grow(fields: dict[str, Value], failure: Failure, age_s: int,
         records: list[list[float]], when: int) -> None:
    """The failing counter `age_s` before the last read: it grew `per_day` a day over the
    last `days` days (linear between reads), and stood still before."""
    final = fields.get(failure.counter)
    final_value = final if isinstance(final, int) else 0
    grown_days = max(0.0, failure.days - age_s / DAY_S)
    start = max(0, final_value - failure.per_day * failure.days)
    value = start + int(failure.per_day * grown_days)
    old = f"{failure.counter}={final_value}"
    fields[failure.counter] = value
    fields["verdict_reasons"] = str(fields["verdict_reasons"]).replace(
        old, f"{failure.counter}={value}")
    records[:] = growth.record(records, float(when), value, GROWTH_WINDOW_S)
    rate = growth.per_day(records, float(when), GROWTH_WINDOW_S)
    fields[f"{failure.counter}_per_day"] = rate if rate is not None else 0.0
