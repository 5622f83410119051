"""Rates from pairs of samples, against values computed by hand with iostat's formulas."""

from __future__ import annotations

import math

import pytest

from diskprobe.compute.counters import counter_deltas
from diskprobe.compute.iostat import counter_fields, iostat_fields
from diskprobe.sources.diskstats import IN_FLIGHT, IO_MS, READS

GAUGES = frozenset({IN_FLIGHT})

# reads merged sectors ms | writes merged sectors ms | inflight io_ms weighted |
# discards merged sectors ms | flushes ms
BEFORE = (100, 10, 2000, 500, 50, 5, 1000, 250, 0, 1000, 2000, 10, 1, 800, 40, 20, 30)
AFTER = (300, 30, 6000, 1500, 150, 15, 3000, 1250, 3, 2000, 5000, 14, 2, 1600, 60, 30, 50)


def _fields(before: tuple[int, ...], after: tuple[int, ...], elapsed: float) -> dict[str, object]:
    deltas = counter_deltas(before, after, GAUGES)
    assert deltas is not None
    return dict(iostat_fields(deltas, after, elapsed))


def test_twenty_field_kernel_over_two_seconds() -> None:
    fields = _fields(BEFORE, AFTER, 2.0)
    expected = {
        "reads_per_sec": 100.0,  # 200 reads / 2 s
        "writes_per_sec": 50.0,
        "read_merged_per_sec": 10.0,
        "write_merged_per_sec": 5.0,
        "read_bytes_per_sec": 1_024_000.0,  # 4000 sectors * 512 / 2 s  (iostat: 1000 rkB/s)
        "write_bytes_per_sec": 512_000.0,
        "read_await_ms": 5.0,  # 1000 ms / 200 reads
        "write_await_ms": 10.0,  # 1000 ms / 100 writes
        "read_request_bytes": 10_240.0,  # 2,048,000 B / 200 (rareq-sz 10 kB)
        "write_request_bytes": 10_240.0,
        "queue_size": 1.5,  # 3000 weighted ms / 2 s / 1000
        "util_percent": 50.0,  # 1000 io ms / 2000 ms
        "in_flight": 3,
        "interval_sec": 2.0,
        "discards_per_sec": 2.0,
        "discard_merged_per_sec": 0.5,
        "discard_bytes_per_sec": 204_800.0,
        "discard_await_ms": 5.0,  # 20 ms / 4
        "discard_request_bytes": 102_400.0,
        "flushes_per_sec": 5.0,
        "flush_await_ms": 2.0,
        "await_ms": 2020 / 304,  # (1000 + 1000 + 20) ms / (200 + 100 + 4), flushes excluded
    }
    assert fields == pytest.approx(expected, rel=1e-12)
    assert type(fields["in_flight"]) is int
    assert all(type(v) is float for k, v in fields.items() if k != "in_flight")


def test_fourteen_field_kernel_omits_discards_and_flushes() -> None:
    fields = _fields(BEFORE[:11], AFTER[:11], 2.0)
    assert not any(name.startswith(("discard", "flush")) for name in fields)
    assert fields["await_ms"] == pytest.approx(2000 / 300)


def test_eighteen_field_kernel_has_discards_but_no_flushes() -> None:
    fields = _fields(BEFORE[:15], AFTER[:15], 2.0)
    assert "discards_per_sec" in fields and "flushes_per_sec" not in fields


def test_idle_interval_gives_zero_awaits_not_nan() -> None:
    fields = _fields(BEFORE, BEFORE, 10.0)
    assert fields["read_await_ms"] == 0.0 and fields["await_ms"] == 0.0
    assert fields["flush_await_ms"] == 0.0 and fields["discard_request_bytes"] == 0.0
    assert all(math.isfinite(v) for v in fields.values() if isinstance(v, float))


def test_32bit_millisecond_counter_wrap_is_unwrapped() -> None:
    before = list(BEFORE)
    after = list(AFTER)
    before[IO_MS] = 2**32 - 400  # ~49.7 days of busy time, about to wrap
    after[IO_MS] = 600
    fields = _fields(tuple(before), tuple(after), 2.0)
    assert fields["util_percent"] == pytest.approx(50.0)  # 1000 ms busy in 2 s


def test_reset_counters_going_backwards_give_no_rates() -> None:
    after = list(AFTER)
    after[READS] = 5  # device removed and re-added: reads restart from zero
    assert counter_deltas(BEFORE, tuple(after), GAUGES) is None


def test_large_decrease_of_a_time_counter_is_a_reset_not_a_wrap() -> None:
    after = list(AFTER)
    after[IO_MS] = 10  # from 1000: modulo 2**32 that is ~4.29e9 ms, not a plausible wrap
    assert counter_deltas(BEFORE, tuple(after), GAUGES) is None


def test_in_flight_may_go_down_without_meaning_a_reset() -> None:
    before = list(BEFORE)
    before[IN_FLIGHT] = 9
    assert counter_deltas(tuple(before), AFTER, GAUGES) is not None


def test_counter_fields_in_bytes_and_only_what_the_kernel_has() -> None:
    fields = counter_fields(AFTER[:15])
    assert fields["read_bytes"] == 6000 * 512 and fields["discard_bytes"] == 1600 * 512
    assert fields["weighted_io_time_ms"] == 5000 and "flushes" not in fields
