"""Pre-generate a simulated fleet as line-protocol files, before anything is timed (issue 28).

    .venv/bin/python tests/bench/fleet_sim.py --hosts 100 --out /tmp/fleet100 \\
        [--fast-minutes 60] [--smart-days 365] [--fs-days 30] [--prometheus]

Writes OUT/hosts/<host>.lp.gz (one gzip file per host, every line exactly as diskprobe's
InfluxSerializer writes it, with the `host` tag Telegraf adds), with --prometheus also
OUT/prom/<host>.prom.gz (the same points in the Prometheus text format, named and scaled as
diskprobe's own Prometheus serializer names them, with millisecond timestamps, for
VictoriaMetrics' /api/v1/import/prometheus), and OUT/manifest.json: the anchor time (the
newest point; queries end there), the plan, per-file line and value counts, and the ground
truth of the alert check (fleet_sim_hosts.expected_alerts). Hosts, drives and the scenario:
fleet_sim_hosts.py; SMART lines: fleet_sim_drives.py; the other series: fleet_sim_series.py.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: shared helpers
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_sim_drives as drives
from fleet_sim_hosts import expected_alerts, fleet, moved_serial
from fleet_sim_jobs import expected_jobs
from fleet_sim_series import host_points

from diskprobe.metric import Metric
from diskprobe.schema import MEASUREMENTS
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.serializers.prometheus import FAMILIES, LABEL_RENAMES, escape_label_value

SCHEMA = {spec.name: spec for spec in MEASUREMENTS}


def templates() -> tuple[dict[int, drives.Golden], dict[str, drives.Golden]]:
    healthy = {i: g for i, g in enumerate(drives.healthy_templates(drives.HDD_CASES))}
    healthy.update({10 + i: g for i, g in enumerate(drives.healthy_templates(drives.NVME_CASES))})
    healthy[20] = drives.healthy_templates(drives.BOOT_CASES)[0]
    failing = {f.case: drives.load_golden(f.case)
               for f in drives.HDD_FAILURES + drives.NVME_FAILURES}
    return healthy, failing


def check_schema(metric: Metric) -> None:
    """Every measurement, tag and field of the simulation is the schema's, with its type."""
    spec = SCHEMA[metric.measurement]
    tags = {tag.name for tag in spec.tags} | {"host"}
    assert set(metric.tags) <= tags, (metric.measurement, set(metric.tags) - tags)
    for name, value in metric.fields.items():
        field = spec.field(name)
        assert field is not None, (metric.measurement, name)
        kind = {"float": float, "int": int, "bool": bool, "str": str}[field.type]
        assert type(value) is kind, (metric.measurement, name, value)


def counts(metrics: list[Metric]) -> dict[str, int]:
    numbers = sum(1 for m in metrics for v in m.fields.values() if not isinstance(v, str))
    strings = sum(1 for m in metrics for v in m.fields.values() if isinstance(v, str))
    return {"lines": len(metrics), "values": numbers, "strings": strings}


def prometheus_text(metrics: list[Metric]) -> str:
    """The points as Prometheus text lines with timestamps (ms); a string field is an
    `_info` series with the text as a label, as diskprobe's exposition has it."""
    out = []
    for metric in metrics:
        families = {f.field: f for f in FAMILIES[metric.measurement]}
        labels = sorted(f'{LABEL_RENAMES.get((metric.measurement, k), k)}="'
                        f'{escape_label_value(v)}"' for k, v in metric.tags.items() if v)
        stamp = metric.time_ns // 10**6
        for name, value in metric.fields.items():
            family = families[name]
            if family.info:
                label = name + '="' + escape_label_value(str(value)) + '"'
                out.append(f"{family.name}{{{','.join([*labels, label])}}} 1 {stamp}")
                continue
            sample = family.value(value)
            if sample is not None:
                out.append(f"{family.name}{{{','.join(labels)}}} {sample} {stamp}")
    return "\n".join(out) + "\n"


def generate(count: int, out: Path, plan: dict[str, int], prometheus: bool) -> dict[str, Any]:
    """Write the fleet's files; return (and write) the manifest."""
    anchor_s = (int(time.time()) // 10) * 10
    healthy, failing = templates()
    hosts = fleet(count)
    (out / "hosts").mkdir(parents=True, exist_ok=True)
    if prometheus:
        (out / "prom").mkdir(exist_ok=True)
    files, checked = {}, set()
    serializer = InfluxSerializer()
    for host in hosts:
        metrics = host_points(host, healthy, failing, anchor_s, plan)
        for metric in metrics:
            if metric.measurement not in checked:  # the first of each measurement in full
                check_schema(metric)
        checked |= {m.measurement for m in metrics}
        path = out / "hosts" / f"{host.name}.lp.gz"
        text = serializer.serialize(metrics)
        with gzip.open(path, "wt", compresslevel=1, encoding="utf-8") as lines:
            lines.write(text)
        files[host.name] = {**counts(metrics), "bytes": len(text.encode())}
        if prometheus:
            samples = prometheus_text(metrics)
            files[host.name]["prom_samples"] = samples.count("\n")
            with gzip.open(out / "prom" / f"{host.name}.prom.gz", "wt", compresslevel=1,
                           encoding="utf-8") as prom:
                prom.write(samples)
    manifest = {"hosts": count, "anchor_s": anchor_s, "plan": plan, "files": files,
                "profiles": {h.name: h.profile for h in hosts},
                "decommissioned": [h.name for h in hosts if h.gone_s],
                "expected": {**expected_alerts(hosts), "jobs": expected_jobs(hosts)},
                "moved_serial": moved_serial(hosts)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fast-minutes", type=int, default=60)
    parser.add_argument("--smart-days", type=int, default=365)
    parser.add_argument("--fs-days", type=int, default=30)
    parser.add_argument("--job-minutes", type=int, default=360,
                        help="minutes of the training jobs' diskprobe_job points")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--prometheus", action="store_true")
    args = parser.parse_args(argv)
    plan = {"fast_minutes": args.fast_minutes, "smart_days": args.smart_days,
            "fs_days": args.fs_days, "seed": args.seed, "job_minutes": args.job_minutes}
    started = time.monotonic()
    manifest = generate(args.hosts, args.out, plan, args.prometheus)
    total = {k: sum(f[k] for f in manifest["files"].values()) for k in ("lines", "values")}
    print(f"generated {args.hosts} hosts in {time.monotonic() - started:.1f} s: "
          f"{total['lines']} lines, {total['values']} values -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
