"""What one interval says about a device's slowdown: its ratio, and its vote, within the
millisecond bound of /proc/diskstats.

Request-based (blk-mq) devices (sd, nvme, vd, xvd, mmcblk, loop, ...) add each request's
time in nanoseconds since Linux 5.0 (`now - req->start_time_ns`, "block: use nanosecond
resolution for iostat"); /proc/diskstats prints the running total truncated to whole
milliseconds. So the delta of an interval is within 1 ms of the truth per direction, however
fast the requests: a bound, not a rounding of each request. (Before 5.0, and on bio-based
devices to this day, dm, md, drbd, zram and the head of native NVMe multipath, each request's
time is whole jiffies: such awaits say little below a few ms; diskprobe judges no dm or md
device.)

An interval whose expected time is large (MIN_EXPECTED_MS) votes by its ratio as it is. A
faster device's interval votes only where the bound decides: slow when even its lowest ratio
reaches the threshold, healthy when even its highest stays under the hysteresis line (near),
near when both lie between; else it is undecided and counts as no observation, as an idle one.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

from diskprobe.compute.peers import Sample

MIN_EXPECTED_MS = 50.0  # at or above: the bound is a few % of it; the point ratio votes
OWN_ERROR_MS = 1.0  # the device's own time, per direction: one truncation at each end
# The expectation's, per direction: a peer in the same load bin (two per doubling) completed
# at least 1/sqrt(2) as many requests in the interval, each share of its 1 ms bound that much
# larger (window and own-history expectations come from far more requests: less).
PEER_ERROR_MS = 2**0.5


class Vote(NamedTuple):
    ratio: float  # the point estimate: the device's time over its peers' for the same requests
    decided: bool  # False: the bound straddles a threshold; the interval is no observation
    slow: bool  # at or above the ratio
    near: bool  # at or above NEAR_FACTOR x the ratio (what keeps a fail-slow device on)


def vote(keys: Sequence[Sample], expected: Sequence[Optional[float]], limit: float,
         near_factor: float) -> Optional[Vote]:  # fmt: skip
    """None when there is nothing to compare with (no expectation, or it is 0 ms)."""
    spent = would_take = 0.0
    directions = 0
    for (_, count, total_ms), value in zip(keys, expected):
        if value is not None:
            spent += total_ms
            would_take += count * value
            directions += 1
    if would_take <= 0.0:
        return None
    ratio, near_limit = spent / would_take, limit * near_factor
    if would_take >= MIN_EXPECTED_MS:
        return Vote(ratio, True, ratio >= limit, ratio >= near_limit)
    low = max(0.0, spent - OWN_ERROR_MS * directions) / (would_take + PEER_ERROR_MS * directions)
    floor = would_take - PEER_ERROR_MS * directions
    high = (spent + OWN_ERROR_MS * directions) / floor if floor > 0 else float("inf")
    if low >= limit:
        return Vote(ratio, True, True, True)
    if high < near_limit:
        return Vote(ratio, True, False, False)
    if low >= near_limit and high < limit:
        return Vote(ratio, True, False, True)
    return Vote(ratio, False, False, False)
