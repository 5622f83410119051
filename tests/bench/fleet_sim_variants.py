"""Why the slow fleet queries are slow: each Grafana query that carries a template variable's
"All" (every value as one regex, `/^(a|b|...)$/`, Grafana's default without a custom all
value) timed as generated and as it would be with `allValue: ".*"` (`/^.*$/`), and the
per-container I/O panel (a subquery summing devices) timed with one host, and without the
subquery. On a freshly generated and loaded fleet of --hosts hosts:

    .venv/bin/python tests/bench/fleet_sim_variants.py --hosts 100

Prints: query | as generated | variant | ratio.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: shared helpers
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_sim
import fleet_sim_ingest as ingest
import fleet_sim_queries as fsq

import influxdb_server
from influxdb_server import InfluxServer

DB = "fleet"
ALTERNATION = re.compile(r"=~ /\^\([^/)]*\|[^/)]*\)\$/")  # an "All": /^(a|b|...)$/
HOST_ALL = re.compile(r'"host" =~ /\^\([^/)]*\|[^/)]*\)\$/')
CONTAINER_PANEL = "I/O per container, pod or service"


def variants(query: fsq.Query, host: str) -> list[fsq.Query]:
    out = []
    if ALTERNATION.search(query.text):
        out.append(fsq.Query(f"{query.name} with allValue .*",
                             ALTERNATION.sub("=~ /^.*$/", query.text), True))
    if CONTAINER_PANEL in query.name and query.name.startswith("grafana"):
        one = HOST_ALL.sub(f'"host" =~ /^{host}$/', query.text)
        out.append(fsq.Query(f"{query.name} for one host", one, False))
        inner = re.search(r"FROM \(SELECT .*? FROM (\"diskprobe_cgroup_io\") WHERE (.*?) GROUP BY",
                          query.text)
        outer = query.text.rsplit(") GROUP BY ", 1)[-1]
        if inner:
            # Each device writes one point per interval: at a 10 s $__interval the sum of the
            # points in a bucket is the sum over devices the subquery computes.
            flat = (f'SELECT sum("read_bytes_per_sec") AS "read", sum("write_bytes_per_sec") AS '
                    f'"write" FROM {inner.group(1)} WHERE {inner.group(2)} GROUP BY {outer}')
            out.append(fsq.Query(f"{query.name} without the subquery (sum of points)", flat,
                                 True))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    influxdb_server.HTTP_TIMEOUT_SEC = 120.0
    work = Path(tempfile.mkdtemp(prefix="fleet-variants-"))
    plan = {"fast_minutes": 60, "smart_days": 365, "fs_days": 1, "seed": 1}
    manifest = fleet_sim.generate(args.hosts, work, plan, False)
    anchor_ns = int(manifest["anchor_s"]) * 10**9
    with InfluxServer() as server:
        server.create_database(DB)
        ingest.send("influx", server.url, f"/write?db={DB}",
                    sorted((work / "hosts").glob("*.lp.gz")), 0, 0)
        host = next(n for n, p in manifest["profiles"].items() if p == "train")
        print(f"N = {args.hosts}\nquery | as generated s | variant | variant s | ratio")
        for query in fsq.grafana_queries(server, DB, anchor_ns):
            found = variants(query, host)
            if not found:
                continue
            fsq.run_timed(server, DB, query, args.repeats)
            for variant in found:
                fsq.run_timed(server, DB, variant, args.repeats)
                ratio = query.median / variant.median if variant.median else float("inf")
                print(f"{query.name} | {query.median:.3f} ({query.rows} rows) | "
                      f"{variant.name[len(query.name) + 1:]} | {variant.median:.3f} "
                      f"({variant.rows} rows) {variant.error} | {ratio:.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
