"""The schema's own consistency: counter kinds, series tags, names."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.io import IoCollector
from diskprobe.compute.iostat import COUNTER_FIELDS
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.schema import COUNTER, IO, MEASUREMENT_PREFIX, MEASUREMENTS, TagSpec
from diskprobe.schema.types import FieldSpec, MeasurementSpec
from diskprobe.serializers.prometheus import FAMILIES

from helpers import FakeClock, write_diskstats

# Kernel 5.5+ layout (17 counters: discards and flushes too), so every counter field appears.
SDA_1 = "   8       0 sda 100 10 2000 500 50 5 1000 250 0 1000 2000 10 1 800 40 20 30"
SDA_2 = "   8       0 sda 300 30 6000 1500 150 15 3000 1250 3 2000 5000 14 2 1600 60 30 50"


def _second_sample(root: Path, counters: bool) -> Metric:
    clock = FakeClock()
    context = CollectorContext(
        HostRoots(proc=str(root / "proc"), sys=str(root / "sys"), run=str(root / "run")),
        Logger(io.StringIO()),
        clock=Clock(monotonic=clock, wall_ns=lambda: 10**18),
    )
    collector = IoCollector(IoConfig(counters=counters), context)
    write_diskstats(root / "proc", [SDA_1])
    collector.collect()
    write_diskstats(root / "proc", [SDA_2])
    clock.now += 2.0
    (metric,) = collector.collect().metrics
    return metric


# The latency histogram's since-start counters: always sent, never by `counters = true`.
LATENCY_COUNTERS = {("diskprobe_latency_bucket", "sum_sec"), ("diskprobe_latency_bucket", "total")}


def _counters() -> set[tuple[str, str]]:
    return {(m.name, f.name) for m in MEASUREMENTS for f in m.fields if f.kind == COUNTER}


def test_counter_fields_are_exactly_what_counters_true_adds(tmp_path: Path) -> None:
    with_counters = _second_sample(tmp_path / "on", counters=True)
    without = _second_sample(tmp_path / "off", counters=False)
    added = set(with_counters.fields) - set(without.fields)
    assert added == {name for name, _, _ in COUNTER_FIELDS}
    assert _counters() == {(IO.name, name) for name in added} | LATENCY_COUNTERS


def test_prometheus_exposes_the_counter_fields_and_only_them_as_counters() -> None:
    exposed = {(fam.measurement, fam.field) for fams in FAMILIES.values() for fam in fams}
    counters = {
        (fam.measurement, fam.field)
        for fams in FAMILIES.values()
        for fam in fams
        if fam.type == "counter"
    }
    assert counters == _counters() and counters < exposed
    assert all(
        fam.name.endswith("_total")
        for fams in FAMILIES.values()
        for fam in fams
        if fam.type == "counter"
    )


def test_a_counter_is_declared_not_inferred_from_its_description() -> None:
    field = FieldSpec("x", "int", "", "Cumulative (counters = true).")
    assert field.kind != COUNTER
    with pytest.raises(ValueError, match="kind"):
        dataclasses.replace(field, kind="histogram")


def test_series_tags_are_tags_of_their_measurement() -> None:
    for spec in MEASUREMENTS:
        assert set(spec.series_tags) <= {tag.name for tag in spec.tags}, spec.name
        assert len(set(spec.series_tags)) == len(spec.series_tags), spec.name
    with pytest.raises(ValueError, match="series tags"):
        MeasurementSpec(f"{MEASUREMENT_PREFIX}x", "", (TagSpec("a", ""),), (), ("b",))


def test_names_are_unique_and_prefixed() -> None:
    names = [spec.name for spec in MEASUREMENTS]
    assert len(set(names)) == len(names)
    assert all(name.startswith(MEASUREMENT_PREFIX) for name in names)
    for spec in MEASUREMENTS:
        fields = [f.name for f in spec.fields]
        tags = [t.name for t in spec.tags]
        assert len(set(fields)) == len(fields) and len(set(tags)) == len(tags), spec.name
        assert not set(fields) & set(tags), spec.name  # InfluxQL could not tell them apart
    with pytest.raises(ValueError, match="start with"):
        MeasurementSpec("io", "", (), ())


def test_descriptions_are_sentences() -> None:
    for spec in MEASUREMENTS:
        texts = [spec.description, *(t.description for t in spec.tags)]
        texts += [f.description for f in spec.fields]
        for text in texts:
            assert text.endswith(".") and "  " not in text, (spec.name, text)
