"""Deltas of cumulative kernel counters, with 32-bit wraps unwrapped and resets detected."""

from __future__ import annotations

from operator import sub
from typing import AbstractSet, Sequence

WRAP_32 = 1 << 32
HALF_32 = 1 << 31


def counter_deltas(
    previous: Sequence[int],
    current: Sequence[int],
    gauges: AbstractSet[int] = frozenset(),
    wraps32: AbstractSet[int] | None = None,
) -> list[int] | None:
    """Per-index `current - previous`, or None when the counters were reset.

    A decrease is a 32-bit wrap only at an index in `wraps32` (None: any index may be a
    32-bit counter), only while both values fit 32 bits, and only when the unwrapped delta is
    small (< 2**31); any other decrease means the device was removed and re-added, or
    replaced: no rate this interval. Indexes in `gauges` are instantaneous values, not
    counters; their delta is not checked. The caller judges what is plausible beyond that.
    """
    deltas = list(map(sub, current, previous))
    if min(deltas, default=0) >= 0:
        return deltas
    for index, delta in enumerate(deltas):
        if delta >= 0 or index in gauges:
            continue
        if wraps32 is not None and index not in wraps32:
            return None  # a 64-bit counter does not wrap in a machine's lifetime
        wrapped = delta + WRAP_32
        if previous[index] < WRAP_32 and current[index] < WRAP_32 and wrapped < HALF_32:
            deltas[index] = wrapped
        else:
            return None
    return deltas
