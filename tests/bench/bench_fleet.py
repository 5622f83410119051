"""A fleet on one database (issue 28 section 2): ingest and query times at N hosts.

For each N (--sizes, default 100,1000): pre-generate the fleet (tests/bench/fleet_sim.py; not
timed), then on a real InfluxDB 1.x (tests/influxdb_server.py) and a real VictoriaMetrics
(tests/victoria_server.py) time only the sending (fleet_sim_ingest.py) and measure the disk
used; run every dashboard, template-variable and alert query warm over the dashboards' default
ranges ending at the simulation's last point (fleet_sim_queries.py); check that the alerts fire
for exactly the simulated failing and fail-slow drives (fleet_sim_alerts.py); and with
--downsample FILE run its retention-policy and SELECT ... INTO statements over the back-filled
data and time long-range queries (fleet_sim_longrange.py). Prints a table per N and, for two
or more sizes, the growth and an estimate for 10,000 hosts.

    .venv/bin/python tests/bench/bench_fleet.py --downsample \\
        dashboards/downsampling/influxdb-1x.iql          # the full run (100 and 1,000 hosts)
    .venv/bin/python tests/bench/bench_fleet.py --quick  # 5 hosts, minutes of data
    .venv/bin/python tests/bench/bench_fleet.py --sizes 20 --fast-minutes 60 \\
        --smart-days 365 --fs-days 30 --victoria-at 20  # one size: one value per option

Per-size options take one value per size, colon-separated (--fs-days 30:1). VictoriaMetrics
runs at the sizes of --victoria-at (default 100: at 1,000 hosts its back-fill of a year of
daily points alone would take over half an hour here), the Prometheus-format pass at
--prometheus-at (--victoria-formats prometheus: that pass only), the downsampling at
--downsample-at.

Exit status 1 when an alert mismatches or a query fails (no timing is judged).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: shared helpers
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_sim
import fleet_sim_alerts as alerts
import fleet_sim_ingest as ingest
import fleet_sim_jobs as jobs
import fleet_sim_longrange as longrange
import fleet_sim_queries as fsq
import fleet_sim_report as report

from victoria_server import VictoriaMetrics

import influxdb_server
from influxdb_server import InfluxServer

DB = "fleet"
SLOW_S = 1.0  # the bound for a fleet view at 1,000 hosts
JOB_ROUNDS = 6  # more rounds for the training jobs' queries: their min and median


@dataclass
class Run:
    hosts: int
    ingests: list[ingest.Ingest] = field(default_factory=list)
    disk: dict[str, int] = field(default_factory=dict)
    queries: list[fsq.Query] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fired: str = ""
    long_range: list[fsq.Query] = field(default_factory=list)


def influx_pass(run: Run, work: Path, manifest: dict[str, object],
                args: argparse.Namespace) -> None:
    files = sorted((work / "hosts").glob("*.lp.gz"))
    totals = report.totals(manifest)
    ingested = work / "influxdb" / "ingested"
    with InfluxServer(root=work / "influxdb" if args.keep else None) as server:
        if args.reuse and ingested.exists():
            print(f"reusing the database ingested earlier in {ingested.parent}", flush=True)
        else:
            server.create_database(DB)
            run.ingests.append(ingest.send("InfluxDB 1.x /write", server.url,
                                           f"/write?db={DB}", files, totals["lines"],
                                           totals["values"]))
            if args.keep:
                ingested.write_text("", encoding="utf-8")
        stated, du = ingest.influx_disk(server.url, DB)
        run.disk["InfluxDB (TSM + WAL, diskBytes)"] = stated
        run.disk["InfluxDB (du of shard + WAL dirs)"] = du
        anchor_ns = int(manifest["anchor_s"]) * 10**9  # type: ignore[call-overload]
        if not args.only_downsample:
            run.queries = timed_queries(server, anchor_ns, manifest, args.repeats)
            fired, run.problems = alerts.check(server, DB, anchor_ns,
                                               manifest["expected"])  # type: ignore[arg-type]
            run.fired = ("grafana: " + alerts.summary(fired.grafana) + "\nkapacitor: "
                         + alerts.summary(fired.kapacitor))
        if args.downsample and run.hosts in args.downsample_at:
            run.long_range = longrange.downsample_and_time(
                server, DB, longrange.statements(args.downsample), anchor_ns, args.repeats,
                {"serial": str(manifest["moved_serial"])})


def timed_queries(server: InfluxServer, anchor_ns: int, manifest: dict[str, object],
                  repeats: int) -> list[fsq.Query]:
    profiles = manifest["profiles"]
    assert isinstance(profiles, dict)
    host = next(name for name, profile in profiles.items() if profile == "train")
    todo = fsq.grafana_queries(server, DB, anchor_ns,
                                   prefer={"serial": str(manifest["moved_serial"])})
    todo += fsq.chronograf_queries(DB, anchor_ns, host)
    todo += fsq.alert_queries(DB, anchor_ns)
    expected = manifest["expected"]
    assert isinstance(expected, dict)
    for busy, *_ in expected.get("jobs", [])[:1]:  # the I/O board's job panels on a job's host
        todo += jobs.host_board_queries(server, DB, anchor_ns, busy)
    for query in todo:
        fsq.run_timed(server, DB, query, repeats)
    jobs.time_job_queries(server, DB, todo, JOB_ROUNDS)
    return todo


def victoria_pass(run: Run, work: Path, manifest: dict[str, object], formats: set[str]) -> None:
    totals = report.totals(manifest)
    for label, folder, path_query in (
        ("VictoriaMetrics /write (line protocol)", "hosts", "/write"),
        ("VictoriaMetrics /api/v1/import/prometheus", "prom", "/api/v1/import/prometheus"),
    ):
        if ("line" if folder == "hosts" else "prometheus") not in formats:
            continue
        root = Path(tempfile.mkdtemp(prefix="fleet-vm-", dir=work))
        server = VictoriaMetrics(root)
        server.start()
        try:
            files = sorted((work / folder).glob("*.gz"))
            values = totals["values"] if folder == "hosts" else totals["prom_samples"]
            run.ingests.append(ingest.send(label, server.url, path_query, files,
                                           totals["lines"], values))
            ingest.victoria_flush(server.url)
            time.sleep(2)  # let the flushed parts land
            run.disk[f"{label} (du of -storageDataPath after force_flush)"] = ingest.du_bytes(
                [root / "data"])
        finally:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)


def one_size(hosts: int, index: int, args: argparse.Namespace, base: Path) -> Run:
    work = base / f"n{hosts}"
    plan = {"fast_minutes": args.fast_minutes[index], "smart_days": args.smart_days[index],
            "fs_days": args.fs_days[index], "seed": 1, "job_minutes": args.job_minutes[index]}
    started = time.monotonic()
    prometheus = hosts == args.prometheus_at or args.quick
    reused = args.reuse and (work / "manifest.json").exists()
    if reused:
        manifest = json.loads((work / "manifest.json").read_text(encoding="utf-8"))
    else:
        manifest = fleet_sim.generate(hosts, work, plan, prometheus)
    how = "reused" if reused else f"generated in {time.monotonic() - started:.0f} s"
    print(f"\n== N = {hosts}: {how} (not timed): "
          f"{report.describe(manifest)}", flush=True)
    run = Run(hosts)
    influx_pass(run, work, manifest, args)
    if hosts in args.victoria_at:
        formats = set(args.victoria_formats) - (set() if prometheus else {"prometheus"})
        victoria_pass(run, work, manifest, formats)
    report.print_run(run, SLOW_S)
    jobs.print_job_timings(run.queries, hosts, SLOW_S)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return run


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 hosts, 3 minutes, 3 days")
    parser.add_argument("--sizes", default="100,1000")

    def per_size(text: str) -> list[int]:
        return [int(part) for part in text.split(":")]

    parser.add_argument("--fast-minutes", type=per_size, default=[60, 60],
                        help="minutes of io/fs/pressure/process_io/cgroup_io/agent per size")
    parser.add_argument("--smart-days", type=per_size, default=[365, 365])
    parser.add_argument("--fs-days", type=per_size, default=[30, 1],
                        help="days of hourly filesystem points before the fast window")
    parser.add_argument("--job-minutes", type=per_size, default=[360, 360],
                        help="minutes of the training jobs' diskprobe_job points per size")
    parser.add_argument("--prometheus-at", type=int, default=100,
                        help="the size whose points also go through the Prometheus import")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--query-timeout", type=float, default=45.0,
                        help="seconds before a query is cut off and reported as timed out")
    parser.add_argument("--downsample", type=Path, default=None,
                        help="InfluxQL file (dashboards/downsampling/influxdb-1x.iql) to apply")
    parser.add_argument("--victoria-at", type=per_size, default=[5, 20, 100],
                        help="sizes (a:b) that also go to VictoriaMetrics (--victoria-at 0: none)")
    parser.add_argument("--victoria-formats", type=lambda text: text.split(","),
                        default=["line", "prometheus"],
                        help="what VictoriaMetrics is sent: line, prometheus or both (a,b); "
                             "prometheus only at --prometheus-at")
    parser.add_argument("--downsample-at", type=per_size, default=[5, 100],
                        help="sizes (a:b) on which --downsample is applied")
    parser.add_argument("--only-downsample", action="store_true",
                        help="skip the dashboard and alert queries (with --downsample)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep --workdir: reuse the files and the database a kept "
                             "run left there (re-time the queries after a dashboard change)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.fast_minutes, args.smart_days, args.fs_days = "5", [3], [3], [2]
        args.job_minutes = [3]
        args.repeats = 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A slow query is a figure, not an error; past the timeout it is reported as cut off.
    influxdb_server.HTTP_TIMEOUT_SEC = args.query_timeout
    # A kept database of 1,000 hosts loads its index for 30 s or more before /ping answers.
    influxdb_server.START_TIMEOUT_SEC = max(influxdb_server.START_TIMEOUT_SEC, 300.0)
    sizes = [int(s) for s in args.sizes.split(",")]
    base = args.workdir or Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    base.mkdir(parents=True, exist_ok=True)
    runs = [one_size(hosts, i, args, base) for i, hosts in enumerate(sizes)]
    if len(runs) >= 2:
        report.print_growth(runs[0], runs[-1], SLOW_S)
    if args.json:
        args.json.write_text(json.dumps(report.as_json(runs), indent=1), encoding="utf-8")
    if args.workdir is None and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    failed = [p for r in runs for p in r.problems] + [
        f"{q.name}: {q.error}" for r in runs for q in r.queries if q.error]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
