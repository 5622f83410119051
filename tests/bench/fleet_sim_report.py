"""What tests/bench/bench_fleet.py prints: per size the ingest rates, disk use, every query's
warm median and the alert check; across two sizes the growth and the 10,000-host estimate.

The estimate, two ways, both printed: a straight line through the two measured points
(time = a + b*N: a fixed cost plus a cost per host, the assumption being that the work grows
with the series read, which grow with the hosts) and a power law through them (time =
c*N^k, k = log(t2/t1)/log(N2/N1): what a cost growing faster than the series, such as a regex
of every host name matched against every series, looks like). A query whose per-host cost
grows with N is underestimated by the line; the power law is the cautious figure.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

from fleet_sim_ingest import Ingest
from fleet_sim_queries import Query

TARGET_HOSTS = 10_000


class RunLike(Protocol):
    hosts: int
    ingests: list[Ingest]
    disk: dict[str, int]
    queries: list[Query]
    problems: list[str]
    fired: str
    long_range: list[Query]


def totals(manifest: dict[str, Any]) -> dict[str, int]:
    files = manifest["files"].values()
    return {key: sum(f.get(key, 0) for f in files)
            for key in ("lines", "values", "strings", "bytes", "prom_samples")}


def describe(manifest: dict[str, Any]) -> str:
    total = totals(manifest)
    profiles: dict[str, int] = {}
    for profile in manifest["profiles"].values():
        profiles[profile] = profiles.get(profile, 0) + 1
    plan = manifest["plan"]
    return (f"{total['lines']:,} lines, {total['values']:,} numeric/boolean values + "
            f"{total['strings']:,} strings, {total['bytes'] / 2**20:,.0f} MiB of line protocol; "
            f"hosts {profiles}; fast window {plan['fast_minutes']} min at 10 s, SMART "
            f"{plan['smart_days']} days daily + the last day every 30 min, filesystems "
            f"{plan['fs_days']} days hourly; decommissioned {manifest['decommissioned']}; "
            f"expected alerts: {len(manifest['expected']['drives'])} failing drives, "
            f"{len(manifest['expected']['fail_slow'])} fail-slow devices, "
            f"{len(manifest['expected'].get('stuck', []))} mounts not answering, "
            f"{len(manifest['expected'].get('jobs', []))} disk-bound training jobs")


def _seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def print_run(run: RunLike, slow_s: float) -> None:
    print(f"\n-- ingest at N = {run.hosts} (sending only; {len(run.ingests)} passes)")
    print("target | lines | values | seconds | lines/s | values/s | failed posts")
    for item in run.ingests:
        print(f"{item.target} | {item.lines:,} | {item.values:,} | {item.seconds:.1f} | "
              f"{item.lines_per_sec:,.0f} | {item.values_per_sec:,.0f} | {item.errors}")
    for label, size in run.disk.items():
        print(f"disk: {label}: {size / 2**20:,.1f} MiB")
    print(f"\n-- queries at N = {run.hosts} (warm; median of the timed runs, seconds)")
    print("query | median s | rows | note")
    for query in run.queries:
        note = query.error or ("no data" if not query.rows else "")
        if query.timed_out:
            note = f"TIMED OUT (cut off after {query.median:.0f} s)"
        elif query.median > slow_s:
            note = (note + " OVER 1 s").strip()
        print(f"{query.name} | {_seconds(query.median)} | {query.rows} | {note}")
    for query in run.long_range:
        print(f"{query.name} | {_seconds(query.median)} | {query.rows} | {query.error}")
    print(f"\n-- alerts at N = {run.hosts}: fired per rule\n{run.fired}")
    if not run.fired and not run.problems:
        print("alert check: not run")
    elif run.problems:
        print(f"ALERT MISMATCHES ({len(run.problems)}):")
        for problem in run.problems:
            print(f"  {problem}")
    else:
        print("alert check: exact (every failing and fail-slow drive, nothing else)")


def estimate(n1: int, t1: float, n2: int, t2: float) -> tuple[float, float]:
    """(linear, power-law) estimate of the time at TARGET_HOSTS from (n1, t1), (n2, t2)."""
    slope = (t2 - t1) / (n2 - n1)
    linear = max(t2, t1 + slope * (TARGET_HOSTS - n1))
    exponent = math.log(t2 / t1) / math.log(n2 / n1) if t1 > 0 and t2 > 0 else 1.0
    power = t2 * (TARGET_HOSTS / n2) ** max(exponent, 0.0)
    return linear, power


def print_growth(small: RunLike, large: RunLike, slow_s: float) -> None:
    n1, n2 = small.hosts, large.hosts
    print(f"\n-- growth: time at {n1} and {n2} hosts, and the estimate at {TARGET_HOSTS:,} "
          "(line: a + b*N through the two points; power: c*N^k)")
    print(f"query | time at {n1} | time at {n2} | growth | est. {TARGET_HOSTS} line | "
          f"est. {TARGET_HOSTS} power | note")
    before = {q.name: q for q in small.queries}
    for query in large.queries:
        first = before.get(query.name)
        if first is None or math.isnan(query.median) or math.isnan(first.median):
            continue
        growth = query.median / first.median if first.median > 0 else float("inf")
        linear, power = estimate(n1, first.median, n2, query.median)
        note = f"OVER 1 s at {n2}" if query.median > slow_s else ""
        if query.timed_out or first.timed_out:
            note = "timed out: the times are lower bounds"
        print(f"{query.name} | {first.median:.3f} | {query.median:.3f} | {growth:.1f}x | "
              f"{linear:.2f} | {power:.2f} | {note}")
    for a, b in zip(small.ingests, large.ingests):
        print(f"ingest {a.target}: {a.values_per_sec:,.0f} -> {b.values_per_sec:,.0f} values/s")


def as_json(runs: Sequence[RunLike]) -> list[dict[str, Any]]:
    return [{"hosts": r.hosts,
             "ingest": [{"target": i.target, "lines": i.lines, "values": i.values,
                         "seconds": i.seconds, "errors": i.errors} for i in r.ingests],
             "disk": r.disk,
             "queries": [{"name": q.name, "median": q.median, "timings": q.timings,
                          "rows": q.rows, "error": q.error, "timed_out": q.timed_out,
                          "text": q.text} for q in r.queries],
             "long_range": [{"name": q.name, "median": q.median, "rows": q.rows,
                             "error": q.error} for q in r.long_range],
             "problems": r.problems, "fired": r.fired} for r in runs]
