"""Property (issue #11, item 12): over random counter histories of a device, no rate ever leaves
its physical bounds, whatever wraps and resets the kernel's counters go through.

A history is physically generated activity (I/Os, busy time no longer than the interval, time in
queue no more than interval x a queue depth), observed as the kernel prints it: the millisecond
counters in 32 bits (ios/merges/sectors too on a 32-bit kernel), from a random starting point
so they wrap, with occasional resets to zero or to another device's values, at random intervals.
An interval without a reset must give exactly the true rates; a reset may give none, but never
util above 100 % (x the documented tolerance), a negative rate, a NaN or an infinity.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.compute.iostat import (
    IO_MS_SLACK_MS,
    IO_MS_TOLERANCE,
    MAX_QUEUE_DEPTH,
    MS_COUNTERS,
    disk_deltas,
    iostat_fields,
)
from diskprobe.sources.diskstats import (
    DISCARD_MS,
    DISCARDS,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    IO_MS,
    READ_MS,
    READ_SECTORS,
    READS,
    WEIGHTED_MS,
    WRITE_MS,
    WRITE_SECTORS,
    WRITES,
)

WRAP_32, WRAP_64 = 1 << 32, 1 << 64

step = st.fixed_dictionaries({
    "elapsed": st.floats(0.5, 600.0),  # x 1024 in flight: a ms counter moves < 2**31
    "busy": st.floats(0.0, 1.0),  # the share of the interval with I/O in flight
    "depth": st.floats(0.0, 1024.0),  # mean requests in flight while busy
    "iops": st.integers(0, 2_000_000),
    "split": st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
    "event": st.sampled_from(["", "", "", "", "", "", "zero", "other"]),
    "in_flight": st.integers(0, 4096),
})  # fmt: skip
# A u64 counter would need centuries to wrap: none starts within reach of 2**64.
start = st.lists(st.integers(0, WRAP_64 >> 1), min_size=17, max_size=17)


def advance(true: list[int], s: dict[str, object], long_bits: int) -> None:
    """One interval of physically possible activity, added to the true (unbounded) counters.
    On a 32-bit kernel no counter may move 2**31 in one interval (it could not be told from
    a reset, nor seen at all past 2**32): the I/O count is capped there."""
    elapsed_ms = float(s["elapsed"]) * 1000.0  # type: ignore[arg-type]
    busy_ms = int(elapsed_ms * float(s["busy"]))  # type: ignore[arg-type]
    queued_ms = int(busy_ms * float(s["depth"]))  # type: ignore[arg-type]
    ios = int(int(s["iops"]) * float(s["busy"]))  # type: ignore[call-overload, arg-type]
    if long_bits == 32:
        ios = min(ios, 1 << 26)
    shares = list(s["split"])  # type: ignore[call-overload]
    total = sum(shares) or 1.0
    for index, ms_index, share in ((READS, READ_MS, shares[0]), (WRITES, WRITE_MS, shares[1]),
                                   (DISCARDS, DISCARD_MS, shares[2]),
                                   (FLUSHES, FLUSH_MS, shares[3])):  # fmt: skip
        true[index] += int(ios * share / total)
        true[ms_index] += int(queued_ms * share / total)
    true[READ_SECTORS] += 8 * true[READS] % 1000
    true[WRITE_SECTORS] += 16 * ios
    true[IO_MS] += busy_ms
    true[WEIGHTED_MS] += queued_ms


def observed(true: list[int], in_flight: int, long_bits: int) -> tuple[int, ...]:
    """As /proc/diskstats prints them: unsigned int ms counters, unsigned long the rest."""
    long_wrap = WRAP_32 if long_bits == 32 else WRAP_64
    values = [value % (WRAP_32 if index in MS_COUNTERS else long_wrap)
              for index, value in enumerate(true)]  # fmt: skip
    values[IN_FLIGHT] = in_flight
    return tuple(values)


def check_bounds(fields: dict[str, object], elapsed: float) -> None:
    for name, value in fields.items():
        assert isinstance(value, (int, float)) and math.isfinite(value), (name, value)
        assert value >= 0, (name, value)
    slack = IO_MS_SLACK_MS / (elapsed * 1000.0) * 100.0
    assert fields["util_percent"] <= 100.0 * IO_MS_TOLERANCE + slack, fields  # type: ignore[operator]
    assert fields["queue_size"] <= MAX_QUEUE_DEPTH, fields  # type: ignore[operator]


@settings(max_examples=300, deadline=None)
@given(
    start=start,
    other=start,
    steps=st.lists(step, min_size=1, max_size=30),
    long_bits=st.sampled_from([64, 32]),
)
def test_no_rate_leaves_physical_bounds_through_wraps_and_resets(
    start: list[int], other: list[int], steps: list[dict[str, object]], long_bits: int
) -> None:
    true = list(start)
    true[IN_FLIGHT] = 0
    before = observed(true, 0, long_bits)
    for s in steps:
        elapsed = float(s["elapsed"])  # type: ignore[arg-type]
        reset = s["event"] != ""
        if s["event"] == "zero":
            true = [0] * 17
        elif s["event"] == "other":
            true = list(other)
        truth = list(true)
        advance(true, s, long_bits)
        after = observed(true, int(s["in_flight"]), long_bits)  # type: ignore[call-overload]
        deltas = disk_deltas(before, after, elapsed, long_bits)
        if not reset:  # wraps only: the interval's true activity, exactly
            assert deltas is not None
            expected = [now - then for now, then in zip(true, truth)]
            expected[IN_FLIGHT] = deltas[IN_FLIGHT]
            assert deltas == expected
        if deltas is not None:
            check_bounds(iostat_fields(deltas, after, elapsed), elapsed)
        before = after


def test_the_issue_example_all_counters_at_3e9_then_zero_is_a_reset() -> None:
    before = (3_000_000_000,) * 17
    for elapsed in (1.0, 10.0, 60.0, 3600.0):
        assert disk_deltas(before, (0,) * 17, elapsed) is None


def test_io_ms_growing_far_past_the_interval_is_a_reset() -> None:
    before = (0,) * 17
    after = [0] * 17
    after[IO_MS] = 5000  # 5 s busy in a 1 s interval
    assert disk_deltas(before, tuple(after), 1.0) is None
    after[IO_MS] = 1000
    assert disk_deltas(before, tuple(after), 1.0) is not None


def test_a_64_bit_counter_decrease_is_never_a_wrap_on_a_64_bit_kernel() -> None:
    before = [0] * 17
    before[READS] = WRAP_32 - 10
    after = [0] * 17
    after[READS] = 5  # would be 15 reads modulo 2**32: only on a 32-bit kernel
    assert disk_deltas(tuple(before), tuple(after), 1.0, 64) is None
    deltas = disk_deltas(tuple(before), tuple(after), 1.0, 32)
    assert deltas is not None and deltas[READS] == 15
