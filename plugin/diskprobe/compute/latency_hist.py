"""Block request latency histograms: the kernel's fine buckets (sources/bpf/latency.bt) to
percentiles and to the fixed exported buckets. Pure.

Fine bucket b (nanoseconds) holds [2^e * (1 + s/4), 2^e * (1 + (s+1)/4)), e = b // 4,
s = b % 4: four buckets per doubling, each at most a quarter wider than its lower bound, so a
percentile placed inside its bucket by linear interpolation is within 25 % of the true value
(half that on average). Below 4 ns the buckets are whole doublings (nothing real is there).
"""

from __future__ import annotations

from typing import Mapping, Sequence

MAX_BUCKET = 4 * 64  # a u64 of nanoseconds has at most 64 doublings
# rwbs (blk_fill_rwbs): an optional leading F (a preflush), then the operation's letter:
# R read, W write, D discard (DE: secure erase), F flush, N none; then F (FUA), A, S, M...
OPS = {"R": "read", "W": "write", "D": "discard", "F": "flush"}


def op_of(rwbs: str) -> str | None:
    """The operation of a request from its rwbs text: "RA" read, "FWS" write, "F" flush."""
    letters = rwbs[1:] if rwbs[:1] == "F" and rwbs[1:2] in ("R", "W", "D", "N") else rwbs
    return OPS.get(letters[:1])


def bucket_bounds(bucket: int) -> tuple[float, float]:
    """[low, high) of a fine bucket, in nanoseconds."""
    exponent, step = divmod(bucket, 4)
    if exponent < 2:
        return float(2**exponent), float(2 ** (exponent + 1))
    base = float(2**exponent)
    return base * (1 + step / 4), base * (1 + (step + 1) / 4)


def percentile(buckets: Mapping[int, int], fraction: float) -> float | None:
    """The latency (ns) below which `fraction` of the requests fall: the bucket holding that
    rank, linearly interpolated inside it; None without requests."""
    total = sum(buckets.values())
    if total <= 0:
        return None
    rank, seen = fraction * total, 0
    for bucket in sorted(buckets):
        count = buckets[bucket]
        if count > 0 and seen + count >= rank:
            low, high = bucket_bounds(bucket)
            return low + (high - low) * max(0.0, rank - seen) / count
        seen += count
    return bucket_bounds(max(buckets))[1]


def coarse_counts(buckets: Mapping[int, int], bounds_ns: Sequence[float]) -> list[int]:
    """Requests per exported bucket (upper bounds `bounds_ns`, then +Inf last): a fine bucket
    goes where its middle falls (one straddling a bound goes whole to one side)."""
    counts = [0] * (len(bounds_ns) + 1)
    for bucket, count in buckets.items():
        low, high = bucket_bounds(bucket)
        middle = (low + high) / 2
        index = next((i for i, bound in enumerate(bounds_ns) if middle <= bound), len(bounds_ns))
        counts[index] += count
    return counts
