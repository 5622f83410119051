"""The failure-rate table (smart/afr_table.toml) and its reading (smart/afr.py): its figures
against Scrutiny's published source, its shape, the bucket edges, the "never safer for more
defects" envelope, and the estimate of real drives from the golden captures."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.smart.afr import load_afr_table
from smart_golden import golden_health

GOLDEN = Path(__file__).parent / "golden"
TABLE = load_afr_table()
TEXT = resources.files("diskprobe.smart").joinpath("afr_table.toml").read_text("utf-8")
PREDICTORS = (5, 187, 188, 197, 198)  # Backblaze's five, as the table's [media.hdd] names them

# Scrutiny's published figures, copied by hand from the source afr_table.toml names:
# AnalogJ/scrutiny webapp/backend/pkg/thresholds/ata_attribute_metadata.go, commit
# 0e859ecbb9801568fd5bc73371c68f2c1eb3a7e5 (MIT, Copyright (c) Jason Kulatunga). A row there
# reads `{Low: 16, High: 70, AnnualFailureRate: 0.23589260654405794, ErrorInterval:
# []float64{0.1643078435800227, 0.32806951196017664}}`: a fraction, and (Low, High] unless
# Low == High (Scrutiny's observedThresholdContains). The last column is a raw value inside.
# (attribute, Low, High, AnnualFailureRate, ErrorInterval, value)
SCRUTINY = [
    (5, 0, 0, 0.025169175350572493, (0.022768612038746357, 0.027753988579272894), 0),
    (5, 16, 70, 0.23589260654405794, (0.1643078435800227, 0.32806951196017664), 17),
    (5, 4500, 17000, 2.0659987547404763, (1.6809790460512237, 2.512808045182302), 17000),
    (10, 0, 0, 0.05459827163896099, (0.05113785787727033, 0.05823122757702782), 0),
    (183, 2, 4, 0.6193088626208925, (0.41784508895529787, 0.8841019099092139), 3),
    (187, 1, 1, 0.33877621175661743, (0.22325565823630591, 0.4929016016666955), 1),
    (187, 3, 6, 0.5014425058387142, (0.3062941096766342, 0.7744372808405151), 4),
    (188, 0, 100, 0.024893587674442153, (0.020857343769186413, 0.0294830350167543), 100),
    (188, 100, 13000000000, 0.10044174089362015, (0.0812633664077498, 0.1227848196758574), 101),
    (189, 150, 350, 0.11337164155924832, (0.030889956621649995, 0.2902764300762812), 350),
    (196, 27, 45, 0.24701105346266636, (0.050939617608142244, 0.721871118983972), 28),
    (197, 1, 2, 0.34196613799103254, (0.22723401523750225, 0.4942362818474496), 1),
    (197, 650, 1600, 3.133047210300429, (1.1497731080460096, 6.819324775707182), 1600),
    (198, 1, 2, 0.8135764944275583, (0.40613445471964466, 1.4557130815309443), 2),
    (198, 12, 14, 2.6449275362318843, (0.3203129951758959, 9.554387676519005), 13),
    (199, 0, 1, 0.04068379316116366, (0.037534031558106425, 0.04402730201866553), 0),
]  # fmt: skip


_golden = golden_health


@pytest.mark.parametrize(("attribute", "low", "high", "fraction", "interval", "value"), SCRUTINY)
def test_bucket_figures_are_scrutinys_published_values(
    attribute: int,
    low: int,
    high: int,
    fraction: float,
    interval: tuple[float, float],
    value: int,
) -> None:
    bucket = next(b for b in TABLE.attributes[attribute].buckets if b.holds(value))
    assert bucket.afr_percent == round(fraction * 100, 2)
    assert bucket.interval == (round(interval[0] * 100, 2), round(interval[1] * 100, 2))
    # Same bucket, converted to inclusive integers: (Low, High] starts at Low + 1, unless
    # Low is its own bucket or not covered before; 188's top bucket is kept open-ended.
    assert bucket.low in (low, low + 1)
    assert bucket.high == (None if (attribute, low) == (188, 100) else high)


def test_every_attribute_has_ascending_contiguous_buckets_from_zero() -> None:
    for attribute in TABLE.attributes.values():
        buckets = attribute.buckets
        assert buckets[0].low == 0, attribute.id  # every count a drive can report has a rate
        for before, after in zip(buckets, buckets[1:]):
            assert before.high is not None, (attribute.id, before)  # only the last is open
            # Non-overlapping and without gaps: a value in a gap would have no rate at all.
            assert before.low <= before.high < after.low == before.high + 1, attribute.id


def test_every_rate_lies_inside_its_published_interval() -> None:
    for attribute in TABLE.attributes.values():
        for bucket in attribute.buckets:
            low, high = bucket.interval
            assert 0 < low <= bucket.afr_percent <= high, (attribute.id, bucket)


def test_hard_drives_have_the_five_predictors_and_other_media_none() -> None:
    assert TABLE.predictors == {"hdd": PREDICTORS}
    assert all(i in TABLE.attributes for i in PREDICTORS)
    assert sorted(TABLE.notes) == ["nvme", "scsi", "ssd"]
    assert TABLE.source["licence"] == "MIT" and "scrutiny" in TABLE.source["url"]


# -- rate() and rate_at_most() -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "value", "rate"),
    [
        (5, 4, 2.74), (5, 5, 7.5), (5, 16, 7.5), (5, 17, 23.59),
        (5, 70_000, 177.55), (5, 70_001, 177.55), (5, 10**12, 177.55),  # above the last: last
        (188, 100, 2.49), (188, 101, 10.04), (188, 94_502_060_109, 10.04),  # open-ended
        (187, 1, 33.88), (187, 2, 24.06),
    ],
)  # fmt: skip
def test_rate_at_bucket_edges(attribute: int, value: int, rate: float) -> None:
    assert TABLE.attributes[attribute].rate(value) == rate


def test_no_rate_below_the_first_bucket() -> None:
    assert TABLE.attributes[5].rate(-1) is None and TABLE.attributes[5].rate_at_most(-1) is None


# Scrutiny's 10 spin_retries bucket 1..80 is left out as "fake data": only the 0 bucket is
# left, and a value above a single-value bucket has no rate ("where there is no data, there is
# no rate"), not the rate of drives without spin retries (was a bug: 3 read 5.46).
def test_spin_retries_above_zero_get_no_rate_as_no_data_exists() -> None:
    assert TABLE.attributes[10].rate(0) == 5.46
    assert TABLE.attributes[10].rate(3) is None


def test_rate_at_most_irons_out_the_dips() -> None:
    reported = TABLE.attributes[187]
    assert reported.rate(8) == 38.01 and reported.rate_at_most(8) == 50.14  # 4..6 was worse
    offline = TABLE.attributes[198]
    assert offline.rate(32) == 79.69 and offline.rate_at_most(32) == 264.49  # 13..14's rate


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(sorted(TABLE.attributes)),
    st.integers(min_value=0, max_value=100_000),
    st.integers(min_value=0, max_value=100_000),
)
def test_rate_at_most_never_decreases_as_the_value_grows(attribute: int, a: int, b: int) -> None:
    rates = TABLE.attributes[attribute]
    low, high = sorted((a, b))
    at_low, at_high, plain = rates.rate_at_most(low), rates.rate_at_most(high), rates.rate(high)
    if plain is None:  # no data there (10 above 0): no rate at all, never a lower one
        assert at_high is None and rates.buckets[-1].low == rates.buckets[-1].high < high
        return
    assert at_low is not None and at_high is not None
    assert at_low <= at_high and plain <= at_high


def test_rate_at_most_is_monotonic_across_every_bucket_edge() -> None:
    for rates in TABLE.attributes.values():
        edges = sorted({v for b in rates.buckets for v in (b.low, b.low + 1, b.high or b.low)})
        values = [rates.rate_at_most(v) for v in [*edges, edges[-1] + 1]]
        envelope = [rate for rate in values if rate is not None]  # None: past single-value data
        assert envelope == sorted(envelope), rates.id


# -- estimate() on real drives -----------------------------------------------------------------


def test_baseline_is_the_worst_zero_bucket_of_the_predictors() -> None:
    zero = [TABLE.attributes[i].buckets[0] for i in PREDICTORS]
    assert all(b.low == b.high == 0 or i == 188 for i, b in zip(PREDICTORS, zero))
    assert TABLE.baseline("hdd") == max(b.afr_percent for b in zero) == 2.87
    assert TABLE.baseline("ssd") is None and TABLE.baseline("nvme") is None


@pytest.mark.parametrize(
    "case",
    [
        "smart-json/ata-hdd-seagate-st16000nm001g-exos-x16",  # 188 reads 12: still baseline
        "smart-json/ata-hdd-megaraid-seagate-st6000nm0115",
        "smart-text/ata-hdd-oos12000g",
    ],
)
def test_healthy_hard_drive_gets_the_baseline(case: str) -> None:
    health = _golden(case)
    raws = {a.id: a.raw or 0 for a in health.attributes if a.id in PREDICTORS}
    assert health.media == "hdd" and raws[5] == raws[197] == raws[198] == 0
    assert raws.get(188, 0) <= 100  # up to 100 command timeouts: no higher rate than none
    estimate = TABLE.estimate(health)
    assert estimate is not None and estimate.afr_percent == TABLE.baseline("hdd") == 2.87


def test_hard_drive_with_pending_sectors_gets_that_buckets_rate() -> None:
    health = _golden("smart-text/failing-ata-hdd-hitachi-hds721010cla632-passed")
    pending = health.counters["pending_sectors"]
    assert pending == 29 and health.counters["reallocated_sectors"] == 46
    estimate = TABLE.estimate(health)
    assert estimate is not None
    assert (estimate.attribute, estimate.value) == ("pending_sectors", pending)
    assert estimate.afr_percent == TABLE.attributes[197].rate(pending) == 95.65  # 17..40
    assert estimate.afr_percent > (TABLE.attributes[5].rate(46) or 0)  # 46 realloc: 23.59


@pytest.mark.parametrize(
    "case",
    [
        "smart-text/failing-ata-ssd-apacer-as340-960gb-passed",  # SATA SSD, 17 pending, 49 offline
        "smart-json/failing-nvme-samsung-970-evo-500gb-media-errors",
        "smart-json/failing-scsi-seagate-st373453lc-grown260",  # a SAS hard drive: no data either
        "smart-text/failing-ata-ssd-kingston-sv300s37a240g",
    ],
)
def test_media_without_data_get_no_estimate_and_no_attribute_rate(case: str) -> None:
    health = _golden(case)
    assert health.counters  # the drive did report counters: the None is for want of data
    assert not TABLE.covers(health) and TABLE.estimate(health) is None
    assert all(TABLE.attribute_rate(health, a) is None for a in health.attributes)


def test_hard_drive_reporting_none_of_the_predictors_gets_no_estimate() -> None:
    health = _golden("smart-json/ata-hdd-hgst-hus724020ale640")
    assert TABLE.estimate(health) is not None
    # The same drive as if its firmware did not report 5, 187, 188, 197 or 198.
    kept = [a for a in health.attributes if a.id not in PREDICTORS]
    stripped = dataclasses.replace(health, attributes=kept)
    assert TABLE.covers(stripped) and kept and TABLE.estimate(stripped) is None


# -- load_afr_table(text) refuses a broken table -----------------------------------------------


def _changed(old: str, new: str) -> str:
    assert TEXT.count(old) == 1, old  # the packaged table still reads as this test expects
    return TEXT.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('format = "diskprobe-afr-table"', 'format = "scrutiny"', "not a diskprobe-afr-table"),
        ("{ from = 5, to = 16,", "{ from = 5, to = 4,", "attribute 5: bucket 5..4 is empty"),
        ("id = 188\n", "id = 1188\n", r"media hdd: predictors without rates \[188\]"),
        ("[5, 187, 188, 197, 198]", "[5, 187, 188, 197, 198, 7]", r"without rates \[7\]"),
        (
            "buckets = [\n  { from = 0, to = 0, afr = 5.46, ci = [5.11, 5.82] },\n]",
            "buckets = []",
            "attribute 10: no buckets",
        ),
    ],
    ids=["foreign-format", "empty-bucket", "predictor-row-gone", "unknown-predictor", "no-buckets"],
)
def test_broken_table_is_a_value_error_naming_the_problem(old: str, new: str, message: str) -> None:
    assert load_afr_table(TEXT).attributes == TABLE.attributes  # the text alone loads
    with pytest.raises(ValueError, match=message):
        load_afr_table(_changed(old, new))
