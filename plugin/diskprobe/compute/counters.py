"""Deltas of cumulative kernel counters, with 32-bit wrap unwrapped and resets detected."""

from __future__ import annotations

from operator import sub
from typing import Sequence

WRAP_32 = 1 << 32
HALF_32 = 1 << 31


def counter_deltas(
    previous: Sequence[int], current: Sequence[int], gauges: frozenset[int] = frozenset()
) -> list[int] | None:
    """Per-index `current - previous`, or None when the counters were reset.

    The kernel prints its millisecond counters as 32-bit values (jiffies_to_msecs), so they
    wrap after ~49.7 days; a decrease that is small once taken modulo 2**32 is such a wrap.
    Any other decrease means the device was removed and re-added: no rate this interval.
    Indexes in `gauges` are instantaneous values, not counters; their delta is not checked.
    """
    deltas = list(map(sub, current, previous))
    if min(deltas, default=0) >= 0:
        return deltas
    for index, delta in enumerate(deltas):
        if delta >= 0 or index in gauges:
            continue
        wrapped = delta + WRAP_32
        if previous[index] < WRAP_32 and current[index] < WRAP_32 and wrapped < HALF_32:
            deltas[index] = wrapped
        else:
            return None
    return deltas
