"""The quiet verdict's rules (smart/verdict.py), one at a time, on real drives: each test parses
a golden capture, changes the one value its rule needs (said in a comment), and judges it with
the evidence the collector builds (counters, life left, the failure-rate estimate)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from diskprobe.smart import json_parser
from diskprobe.smart.afr import load_afr_table
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.thresholds import FAIL, OK, WARN
from diskprobe.smart.verdict import (
    GROWTH_COUNTERS,
    Evidence,
    Verdict,
    VerdictRules,
    judge,
    meaningful,
    temperature_failed_in_past,
)
from diskprobe.smart.verdict_table import render_table
from smart_golden import golden_health

GOLDEN = Path(__file__).parent / "golden"
TABLE = load_afr_table()
HEALTHY_NVME = "smart-text/nvme-samsung-970-evo-plus-500gb"
HEALTHY_HDD = "smart-json/ata-hdd-megaraid-seagate-st6000nm0115"  # reports all five predictors
APPLE = "smart-text/ata-ssd-apple-sm256e-darwin-brief"  # 190 Airflow_Temperature_Cel In_the_past
SANDFORCE = "smart-text/failing-ata-ssd-kingston-sv300s37a240g"  # 177, 233, ... at 000 000 000
REPORTED_8 = "smart-text/failing-ata-hdd-seagate-st2000dm006-brief"  # 187 = 8: afr 50.14
PENDING_1232 = "smart-text/failing-ata-hdd-hgst-hus726t6tale6l4-passed"  # afr 332.03, PASSED
NO_COUNTS = VerdictRules(thresholds={})  # the estimate's rules alone, without the count limits


def _rules(
    afr_warn_multiple: float = NO_COUNTS.afr_warn_multiple,
    afr_fail_percent: float = NO_COUNTS.afr_fail_percent,
) -> VerdictRules:
    return VerdictRules({}, afr_warn_multiple, afr_fail_percent)


_golden = golden_health


def _evidence(health: DriveHealth, **extra: Any) -> Evidence:
    """What collectors/smart.py weighs for one read (growth aside, unless given)."""
    values = dict(health.counters)
    life = json_parser.life_left_percent(health)
    if life is not None:
        values["ssd_life_left_percent"] = life
    estimate = TABLE.estimate(health)
    baseline = TABLE.baseline(health.media) if estimate is not None else None
    return Evidence(values, estimate=estimate, baseline_afr=baseline, **extra)


def _judge(health: DriveHealth, rules: VerdictRules | None = None, **extra: Any) -> Verdict:
    return judge(health, _evidence(health, **extra), rules)


@pytest.mark.parametrize(("bits", "status"), [(2, WARN), (4, FAIL), (8, FAIL), (1, FAIL),
                                              (16, FAIL), (3, FAIL)])  # fmt: skip
def test_nvme_critical_warning_temperature_alone_warns_other_bits_fail(
    bits: int, status: str
) -> None:
    health = _golden(HEALTHY_NVME)
    health.counters["critical_warning"] = bits  # the drive raising bit(s) `bits` (3: 1 and 2)
    assert _judge(health) == Verdict(status, (f"critical_warning={bits}",))


@pytest.mark.parametrize(
    ("case", "bits"),
    [
        ("smart-text/failing-nvme-toshiba-kxg50znv512g-spare", 1),
        ("smart-text/failing-nvme-dell-pm1725-critical-0x04", 4),
        ("smart-text/failing-nvme-intel-ssdpedmw400g4-readonly", 8),
        ("smart-json/failing-nvme-samsung-mzwll3t2hajq-critical-warning", 16),
    ],
)
def test_real_nvme_critical_warnings_fail(case: str, bits: int) -> None:
    health = _golden(case)
    assert health.counters["critical_warning"] == bits
    verdict = _judge(health)
    assert verdict.status == FAIL and f"critical_warning={bits}" in verdict.reasons


def test_value_and_threshold_zero_never_fail_or_warn() -> None:
    health = _golden(SANDFORCE)
    silent = [a for a in health.attributes if a.value == 0 and a.threshold == 0]
    assert {a.id for a in silent} >= {177, 233}  # "177 Wear_Range_Delta ... 000 000 000 - 86"
    assert not any(map(meaningful, silent))
    before = _judge(health)
    for index, attribute in enumerate(silent):  # smartctl never flags them; flag them anyway
        attribute.when_failed = "FAILING_NOW" if index % 2 else "In_the_past"
    after = _judge(health)
    assert after == before and not any(a.name in " ".join(after.reasons) for a in silent)


def test_sandforce_life_left_comes_from_231_not_the_zero_attributes() -> None:
    health = _golden(SANDFORCE)
    life = {a.id: a.value for a in health.attributes}[231]  # "231 SSD_Life_Left ... 001 001 010"
    assert json_parser.life_left_percent(health) == life == 1
    # Without 231, 233 and 177 remain, both "000 000 000": not maintained, so no life left at
    # all (not 0 %: that would fail the drive as worn out).
    health.attributes = [a for a in health.attributes if a.id != 231]
    assert json_parser.life_left_percent(health) is None


def test_temperature_failed_in_past_is_a_field_not_a_warning() -> None:
    health = _golden(APPLE)
    past = [a for a in health.attributes if a.when_failed == "In_the_past"]
    assert [(a.id, a.name) for a in past] == [(190, "Airflow_Temperature_Cel")]
    assert temperature_failed_in_past(health) and _judge(health) == Verdict(OK, ())
    assert not temperature_failed_in_past(_golden(HEALTHY_HDD))


def test_non_temperature_attribute_failed_in_past_warns() -> None:
    health = _golden(APPLE)
    index = next(i for i, a in enumerate(health.attributes) if a.id == 5)
    # As if 5 Reallocated_Sector_Ct had been at its threshold once.
    health.attributes[index].when_failed = "In_the_past"
    assert _judge(health) == Verdict(WARN, ("failed_in_past=Reallocated_Sector_Ct",))
    real = _judge(_golden("smart-text/failing-ata-hdd-wdc-wd4000fyyz"))  # "1 ... Past 22"
    assert "failed_in_past=Raw_Read_Error_Rate" in real.reasons


@pytest.mark.parametrize(
    ("case", "limit"),
    [
        (HEALTHY_NVME, 85),  # "Warning  Comp. Temperature Threshold: 85 Celsius"
        ("smart-text/ata-hdd-hgst-hus726040ale614-smartctl75", 60),  # device statistics
        ("smart-json/scsi-seagate-st1200mm0088", 60),  # SCSI drive trip temperature
    ],
)
def test_temperature_at_the_operating_limit_warns_one_below_does_not(case: str, limit: int) -> None:
    health = _golden(case)
    assert health.temperature_warning_c == limit and health.temperature_c is not None
    health.temperature_c = limit - 1  # as read one degree cooler, then at the limit
    assert _judge(health) == Verdict(OK, ())
    health.temperature_c = limit
    assert _judge(health) == Verdict(WARN, (f"temperature_c={limit}",))


def test_failed_self_test_warns_aborted_does_not() -> None:
    health = _golden("smart-text/ata-hdd-hgst-hus724040ale640-megaraid")
    assert health.self_test_last_status == "passed"
    health.self_test_last_status = "aborted"  # the log's latest entry, as if aborted, then failed
    assert _judge(health) == Verdict(OK, ())
    health.self_test_last_status = "failed"
    assert _judge(health) == Verdict(WARN, ("self_test=failed",))


@pytest.mark.parametrize("name", GROWTH_COUNTERS)
def test_growth_warns_with_the_documented_reason_names(name: str) -> None:
    health = _golden(HEALTHY_HDD)
    assert _judge(health, increases={name: 0}, last_day={name: 0}) == Verdict(OK, ())
    assert _judge(health, last_day={name: 3}) == Verdict(WARN, (f"{name}_growth_24h=3",))
    # Grown since the baseline and within the day: one reason, the increase.
    both = _judge(health, increases={name: 2}, last_day={name: 2})
    assert both == Verdict(WARN, (f"{name}_increase=2",))


def test_estimate_warns_at_the_multiple_of_the_baseline() -> None:
    health = _golden(REPORTED_8)
    estimate = TABLE.estimate(health)
    assert estimate is not None and estimate.afr_percent == 50.14
    reason = "afr_percent=50.14(reported_uncorrectable=8)"
    assert _judge(health) == Verdict(WARN, ("reported_uncorrectable=8", reason))  # defaults
    # 2.87 x 17.47 = 50.1389 warns; 2.87 x 17.48 = 50.1676 does not; 0 never does.
    assert _judge(health, _rules(afr_warn_multiple=17.47)) == Verdict(WARN, (reason,))
    assert _judge(health, _rules(afr_warn_multiple=17.48)) == Verdict(OK, ())
    assert _judge(health, _rules(afr_warn_multiple=0.0)) == Verdict(OK, ())


def test_baseline_times_one_warns_every_hard_drive() -> None:
    health = _golden(HEALTHY_HDD)  # its estimate is the baseline 2.87: ">=" includes it
    reason = "afr_percent=2.87(offline_uncorrectable=0)"
    assert _judge(health, _rules(afr_warn_multiple=1.0)) == Verdict(WARN, (reason,))


def test_estimate_fails_at_afr_fail_percent_and_zero_disables_it() -> None:
    health = _golden(REPORTED_8)
    reason = "afr_percent=50.14(reported_uncorrectable=8)"
    assert _judge(health, _rules(afr_fail_percent=50.14)) == Verdict(FAIL, (reason,))
    assert _judge(health, _rules(afr_fail_percent=50.15)) == Verdict(WARN, (reason,))
    worst = _golden(PENDING_1232)
    assert worst.health_ok is True  # smartctl said PASSED: the estimate alone fails it
    reason = "afr_percent=332.03(pending_sectors=1232)"
    assert _judge(worst, NO_COUNTS) == Verdict(FAIL, (reason,))
    assert _judge(worst, _rules(afr_fail_percent=0.0)) == Verdict(WARN, (reason,))
    assert _judge(worst, _rules(afr_fail_percent=0.0, afr_warn_multiple=0.0)) == Verdict(OK, ())


@pytest.mark.parametrize(
    ("case", "timeouts", "status"),
    [
        (HEALTHY_HDD, 50, OK),
        ("smart-text/ata-ssd-sandisk-ultra-ii-240gb-brief", 50, OK),
        (HEALTHY_HDD, 101, WARN),  # above 100 the estimate says 10.04 %/year on hard drives
        ("smart-text/ata-ssd-sandisk-ultra-ii-240gb-brief", 101, OK),  # no data for SSDs
    ],
)
def test_command_timeouts_alone(case: str, timeouts: int, status: str) -> None:
    health = _golden(case)
    index = next(i for i, a in enumerate(health.attributes) if a.id == 188)
    assert health.attributes[index].raw == 0
    # As if 188 Command_Timeout read `timeouts`: the attribute (estimate) and the counter.
    health.attributes[index].raw = health.counters["command_timeouts"] = timeouts
    assert _judge(health).status == status


def _table_patterns() -> list[tuple[str, re.Pattern[str]]]:
    rows = re.findall(r"^\| (\w+) \| `([^`]+)` \|", render_table(), re.MULTILINE)
    placeholders = {"NAME": r"\S+?", "N": r"\d+", "X": r"[\d.]+"}
    patterns = []
    for level, reason in rows:
        parts = re.split(r"(?<![A-Za-z])(NAME|N|X)(?![A-Za-z])", reason)
        regex = "".join(placeholders.get(part, re.escape(part)) for part in parts)
        patterns.append((level, re.compile(regex + "$")))
    return patterns


def test_render_table_names_every_reason_judge_gives() -> None:
    verdicts = [_judge(_golden(f"{c.parent.name}/{c.name}")) for c in GOLDEN.glob("smart-*/*")
                if c.is_dir()]  # fmt: skip
    health = _golden(HEALTHY_NVME)
    health.counters.update(critical_warning=2, available_spare_percent=5, percentage_used=95)
    health.temperature_c, health.self_test_last_status = 85, "failed"
    growth = {name: 1 for name in GROWTH_COUNTERS}
    verdicts += [_judge(health, increases=growth), _judge(health, last_day=growth)]
    verdicts.append(_judge(_golden(HEALTHY_HDD), _rules(afr_warn_multiple=1.0)))
    patterns = _table_patterns()
    seen = {reason for verdict in verdicts for reason in verdict.reasons}
    assert len(seen) > 40  # the real captures alone give dozens of distinct reasons
    for reason in seen:
        assert any(p.match(reason) for _, p in patterns), reason
    for verdict in verdicts:  # a lone reason's level is the table's level for it
        if len(verdict.reasons) == 1:
            levels = {lvl for lvl, p in patterns if p.match(verdict.reasons[0])}
            assert verdict.status in levels, verdict
