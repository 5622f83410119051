"""Fail-slow peer groups, load bins, and the expected latency a group shows at a given load.

Which devices should perform alike (`peer_group`), how one interval of a device is binned
by direction, request size and load (`sample_keys`), and a lookup table of what each member's
await was per load (`PeerTable`): the "fit" of latency against load is binned, with the
lower median across devices in each bin, so one slow member among its peers is one vote
that never moves the expectation, and two members are enough to tell which one is slow.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from fnmatch import fnmatchcase
from typing import Dict, Mapping, Optional, Sequence, Tuple

from diskprobe.metric import FieldValue

# Devices whose latency is not their own, left out of automatic grouping: partitions share
# their disk's queue; dm, md, drbd and zd sit on other devices (judge those instead); loop,
# nbd and rbd take the speed of a file or a network; ram, zram, sr and fd are no disks.
# `[io] peer_groups` can still name any of them.
NOT_GROUPED = ("loop", "dm-", "md", "drbd", "zd", "nbd", "rbd", "ram", "zram", "sr", "fd")

# (direction "r"/"w", request-size bucket, load bucket): see failslow.sample_keys.
Key = Tuple[str, int, int]
Shape = Tuple[str, int]  # (direction, request-size bucket): loads compare within one shape
Sample = Tuple[Key, int, int]  # (key, requests, total ms) of one direction in one interval
MIN_IOS = 10  # fewer requests in an interval (in a direction): idle, an await of noise


def peer_group(
    name: str,
    model: str,
    rotational: str,
    is_partition: bool,
    configured: Sequence[Sequence[str]],
) -> Optional[str]:
    """The group `name` belongs to, or None when it is not judged at all.

    A configured group wins (first match). Otherwise whole disks of the same model and media
    kind are peers; a disk with no model known is a group of its own (its own history)."""
    for index, globs in enumerate(configured):
        if any(fnmatchcase(name, glob) for glob in globs):
            return f"peer_groups[{index}]"
    if is_partition or name.startswith(NOT_GROUPED):
        return None
    if not model:
        return f"alone:{name}"
    kind = {"0": "ssd", "1": "hdd"}.get(rotational, "disk")
    return f"{kind}:{model}"


# (direction, its diskprobe_io fields): rate, request size, await
_DIRECTIONS = (
    ("r", "reads_per_sec", "read_request_bytes", "read_await_ms"),
    ("w", "writes_per_sec", "write_request_bytes", "write_await_ms"),
)


def sample_keys(fields: Mapping[str, FieldValue]) -> list[Sample]:
    """(key, requests, total ms) per active direction of one diskprobe_io point."""
    elapsed = fields.get("interval_sec")
    if type(elapsed) is not float or elapsed <= 0:  # runs per device per interval: no isinstance
        return []
    keys = []
    for direction, rate_name, size_name, wait_name in _DIRECTIONS:
        rate, size, wait = fields.get(rate_name), fields.get(size_name), fields.get(wait_name)
        if type(rate) is not float or type(size) is not float or type(wait) is not float:
            continue
        count = round(rate * elapsed)
        if count < MIN_IOS or size <= 0:
            continue
        keys.append(((direction, size_bin(size), load_bin(rate)), count, round(wait * count)))
    return keys


def size_bin(request_bytes: float) -> int:
    """floor(log2(size)), 0..40: one bin per power of two (4 KiB is 12)."""
    return max(0, min(40, math.frexp(request_bytes)[1] - 1))


def load_bin(per_sec: float) -> int:
    """floor(2 x log2(rate)): two bins per doubling (100/s is 13: 90.5 to 128)."""
    mantissa, exponent = math.frexp(per_sec)  # per_sec = mantissa x 2^exponent, 0.5 <= m < 1
    return 2 * (exponent - 1) + (mantissa >= HALF_OCTAVE)


HALF_OCTAVE = math.sqrt(0.5)  # a mantissa at or above 2^-0.5 is in the upper half-octave


class _Bin:
    """The members' awaits at one (shape, load bucket): sorted values and who gave which."""

    __slots__ = ("by_name", "ordered", "values")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.by_name: dict[str, float] = {}
        self.ordered = True

    def lower_median_without(self, name: str) -> Optional[float]:
        """The lower median of the other members' values; None when nobody else is here.
        The lower one: with two members, the faster is the expectation for both."""
        if not self.ordered:
            self.values.sort()
            self.ordered = True
        values, own = self.values, self.by_name.get(name)
        if own is None:
            return values[(len(values) - 1) // 2]
        count = len(values) - 1
        if count == 0:
            return None
        position, middle = bisect_left(values, own), (count - 1) // 2
        return values[middle] if middle < position else values[middle + 1]


class PeerTable:
    """Per shape, the load buckets with their bins; built for one group, one interval."""

    __slots__ = ("_bins", "_buckets")

    def __init__(self) -> None:
        self._bins: Dict[Shape, Dict[int, _Bin]] = {}
        self._buckets: Dict[Shape, list[int]] = {}

    def add(self, name: str, key: Key, value: float) -> None:
        shape, bucket = (key[0], key[1]), key[2]
        bins = self._bins.setdefault(shape, {})
        found = bins.get(bucket)
        if found is None:
            found = bins[bucket] = _Bin()
            insort(self._buckets.setdefault(shape, []), bucket)
        found.values.append(value)  # sorted once, at the bin's first lookup
        found.ordered = False
        found.by_name[name] = value

    def expected(self, name: str, key: Key) -> Optional[float]:
        """The others' await at the nearest load at or above `key`'s, or None.

        Latency does not fall when load rises, so peers at a higher load give an upper bound
        of what this device should show: the ratio is then a lower bound, and never flags a
        device that is merely idler. Above every other member's load nothing is known: a
        device merely busier than its peers gets no ratio rather than a wrong one."""
        shape = (key[0], key[1])
        buckets = self._buckets.get(shape)
        if not buckets:
            return None
        bins = self._bins[shape]
        for bucket in buckets[bisect_left(buckets, key[2]) :]:
            value = bins[bucket].lower_median_without(name)
            if value is not None:
                return value
        return None
