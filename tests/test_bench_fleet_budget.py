"""tests/bench/bench_fleet_budget.py --quick still works, and what it reports holds up.

The benchmark runs the installed diskprobe on a synthetic training node for a few intervals.
Its figures are checked against the lines diskprobe emitted (--dump), counted here on their own:
the lines and bytes, the distinct InfluxDB series (measurement + tag set), the distinct
Prometheus series, which a real VictoriaMetrics is given the same lines to count too (one
series per field, booleans and strings included), and what two of the Telegraf
recipes of telegraf/diskprobe-fleet-tags.conf leave. Churn: replacing every pod must create
new series (pod_uid, container_id, cgroup, volume paths); with nothing changing, none.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from victoria_server import VictoriaMetrics

from lineproto import Point, parse_lines

BENCH = Path(__file__).parent / "bench" / "bench_fleet_budget.py"


def run_bench(tmp_path: Path, *options: str) -> tuple[dict[str, Any], list[Point], bytes]:
    result_file, dump = tmp_path / "result.json", tmp_path / "dump.lp"
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--profiles", "training",
                           "--json", str(result_file), "--dump", str(dump), *options],
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result,) = json.loads(result_file.read_text())
    raw = dump.read_bytes()
    return result, parse_lines(raw.decode()), raw


def influx_series(points: list[Point]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    return {(p.measurement, tuple(sorted(p.tags.items()))) for p in points}


def prom_series(points: list[Point]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """One per field, strings included: VictoriaMetrics stores a string field's value as the
    number it parses as, else 0."""
    return {(f"{p.measurement}_{name}", tuple(sorted(p.tags.items())))
            for p in points for name in p.fields}  # fmt: skip


def test_figures_match_the_output_and_pods_replaced_make_churn(
    tmp_path: Path, victoria: VictoriaMetrics
) -> None:
    result, points, raw = run_bench(tmp_path, "--replace-at", "5")
    base = result["recipes"]["as emitted"]
    assert base["total_lines"] == len(points) > 0
    assert base["total_bytes"] == len(raw)
    assert base["influx_distinct"] == len(influx_series(points))
    assert base["prom_distinct"] == len(prom_series(points))
    assert any(isinstance(v, bool) for p in points for v in p.fields.values())
    assert any(isinstance(v, str) for p in points for v in p.fields.values())
    # VictoriaMetrics itself, given the same lines: the same series, by name and labels.
    request = urllib.request.Request(f"{victoria.url}/write", data=raw, method="POST")
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status == 204
    expected = prom_series(points)
    deadline = time.monotonic() + 20  # a new series can take a moment to be searchable
    while True:
        stored = {(name, labels) for name, labels, _stamp in victoria.samples()}
        if stored == expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert stored == expected
    # Churn: every pod replaced after the warm-up.
    assert result["events"]["pods_replaced"] >= 20  # and any that ended on their own
    new_values = base["new_values"]
    assert new_values["pod_uid"] > 0 and new_values["container_id"] > 0
    assert base["new_influx_by_measurement"]["diskprobe_cgroup_io"] > 0
    assert base["new_influx_by_measurement"]["diskprobe_fs"] > 0
    assert base["new_influx_per_day"] > 0
    pod_paths = {p.tags["path"] for p in points if p.measurement == "diskprobe_fs"
                 and p.tags["path"].startswith("/var/lib/kubelet/")}  # fmt: skip
    assert pod_paths
    assert base["prom_string_distinct"] > 0
    assert result["recipes"]["VictoriaMetrics, no string fields"]["prom_string_distinct"] == 0
    no_volumes = result["recipes"]["no pod volumes"]
    assert no_volumes["influx_distinct"] == base["influx_distinct"] - len(pod_paths)
    # Pod level by tags: the containers of a pod on one device collide (same key and time).
    merged: Counter[tuple[Any, ...]] = Counter()
    for p in points:
        if p.measurement == "diskprobe_cgroup_io":
            kept = tuple(sorted((k, v) for k, v in p.tags.items()
                                if k not in ("cgroup", "container_id")))  # fmt: skip
            merged[(kept, p.time_ns)] += 1
    lossy = result["recipes"]["pod level by tags (LOSSY)"]
    collisions = sum(count - 1 for count in merged.values())
    assert collisions > 0
    assert lossy["collisions_per_interval"] == round(collisions / result["intervals"], 2)
    assert base["collisions_per_interval"] == 0


def test_nothing_changed_no_new_series(tmp_path: Path) -> None:
    result, points, _raw = run_bench(tmp_path, "--static")
    base = result["recipes"]["as emitted"]
    assert result["events"]["pods_replaced"] == 0
    assert result["events"]["processes_exited"] == 0
    # Series of cgroups with no I/O of their own came and went with the float residue of
    # diskprobe's subtree-minus-children rates until cgroup_io subtracted whole counters; the
    # benchmark still counts such points apart (none now), so they are not counted here.
    assert base["new_influx_real"] == 0, base["new_influx_real_sample"]
    assert set(base["new_values"].values()) == {0}
    assert base["influx_distinct"] == len(influx_series(points))
