"""The simulated fleet's training jobs as the agent watches them (diskprobe_job), for
tests/bench/fleet_sim.py, and the timing of the panels and alert that read them
(tests/bench/bench_fleet.py).

Every training node runs two jobs: its 8-rank llm job, which also writes diskprobe_training
through the meter (fleet_sim_series.training_points), so the meter and the agent both see each
rank, compute-bound as the meter says; and a one-rank data-preparation job without the meter,
input_cpu-bound on every third training node and compute-bound elsewhere, but

- disk-bound on nvme2n1 for the last 30 minutes on the first training node (train-00000):
  the agent's alert fires for it, and for nothing else;
- disk-bound from 60 to 20 minutes ago on the second (train-00005): no alert.

One point per job every 10 s (the agent's default) over the last `job_minutes` of the plan
(default: the fast window; bench_fleet.py: 6 hours), so the database holds more of them
than the fleet board's hour reads, as a fleet's would. Each kind of interval's fields are
tests/dashboard_jobs.py's, made by diskprobe's own decide(); bottleneck_since follows the
verdict as the collector keeps it.

    .venv/bin/python tests/bench/fleet_sim_jobs.py   # what one job adds to the series budget
"""

from __future__ import annotations

import functools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: shared helpers

from fleet_host_types import SimHost
from fleet_sim_hosts import PATTERN
from fleet_sim_queries import Query, grafana_queries, run_timed

from dashboard_jobs import AGENT_STEP_S, Since, interval_fields, job_tags, pod_cgroup
from diskprobe.metric import Metric

from influxdb_server import InfluxServer

RANKS = 8  # the llm job: one rank per GPU (fleet_sim_series.RANKS)
DISK_BOUND, ENDED = 0, 1  # training ordinals (train-00000, train-00005)
PREP_DEVICE, PREP_MOUNT = "nvme2n1", "/mnt/nvme2"
SEC = 10**9
JOB_NAMES = ("Jobs by bottleneck", "Disk-bound jobs", "Training jobs' verdicts (agent)",
             "Jobs' devices", "job-disk-bound")  # the queries timed on their own


def training_ordinal(index: int) -> int:
    """A host's number among the training nodes (fleet_sim_hosts.fleet counts the same way)."""
    cycle, slot = divmod(index, len(PATTERN))
    return cycle * PATTERN.count("train") + PATTERN[:slot].count("train")


def _prep_kind(ordinal: int, age_s: int) -> str:
    if ordinal == DISK_BOUND and age_s < 30 * 60:
        return "disk"
    if ordinal == ENDED and 20 * 60 <= age_s <= 60 * 60:
        return "disk"
    return "input_cpu" if ordinal % 3 == 2 else "compute"


@functools.cache
def _fields(kind: str, device: str, mount: str, pid: int) -> tuple[tuple[str, object], ...]:
    return tuple(interval_fields(kind, device, mount, pid).items())


def job_points(host: SimHost, anchor_s: int, minutes: int) -> list[Metric]:
    if host.profile != "train" or host.gone_s:
        return []
    ordinal = training_ordinal(host.index)
    jobs = [(f"llm-{host.index:05d}", str(rank), 2000 + rank, "") for rank in range(RANKS)]
    jobs.append((f"prep-{host.index:05d}", "0", 3000, PREP_DEVICE))
    out = []
    for number, (job, rank, pid, device) in enumerate(jobs):
        tags = job_tags(host.name, job, rank, pid, pod_cgroup(host.index * 16 + number))
        since = Since()
        for when in range(anchor_s - minutes * 60 + AGENT_STEP_S, anchor_s + 1, AGENT_STEP_S):
            kind = _prep_kind(ordinal, anchor_s - when) if device else "compute"
            fields = dict(_fields(kind, device, PREP_MOUNT if device else "/data", pid))
            fields["bottleneck_since"] = since.at(kind, when)
            out.append(Metric("diskprobe_job", tags, fields, when * SEC))  # type: ignore[arg-type]
    return out


def expected_jobs(hosts: list[SimHost]) -> list[list[str]]:
    """(host, job, rank) of every rank the agent's alert must fire for."""
    return [[h.name, f"prep-{h.index:05d}", "0"] for h in hosts
            if h.profile == "train" and not h.gone_s and training_ordinal(h.index) == DISK_BOUND]


def host_board_queries(server: InfluxServer, db: str, anchor_ns: int, host: str) -> list[Query]:
    """The I/O board's job panels opened on `host` (Grafana opens it on store-00000, which
    runs no job)."""
    found = grafana_queries(server, db, anchor_ns, boards="diskprobe-io", prefer={"host": host})
    picked = [q for q in found if any(name in q.name for name in JOB_NAMES)]
    for query in picked:
        query.name += f" (host {host})"
    return picked


def time_job_queries(server: InfluxServer, db: str, queries: list[Query], rounds: int) -> None:
    """More rounds for the job queries (the machine is noisy): their min and median."""
    for query in queries:
        if any(name in query.name for name in JOB_NAMES) and not query.error:
            run_timed(server, db, query, rounds)


def print_job_timings(queries: list[Query], hosts: int, slow_s: float) -> None:
    print(f"\n-- training jobs at N = {hosts}: the job panels and alert queries (seconds "
          "over the timed rounds)")
    print("query | min s | median s | rounds | rows | note")
    for query in queries:
        if not any(name in query.name for name in JOB_NAMES) or not query.timings:
            continue
        note = "OVER 1 s" if statistics.median(query.timings) > slow_s else ""
        print(f"{query.name} | {min(query.timings):.3f} | {statistics.median(query.timings):.3f}"
              f" | {len(query.timings)} | {query.rows} | {query.error or note}")


def budget() -> None:
    """One job's series and bytes, per verdict, through diskprobe's own serializers: InfluxDB
    (measurement and tags), diskprobe's Prometheus format (a series per number, an _info
    series per text) and VictoriaMetrics fed line protocol (a series per field)."""
    from diskprobe.serializers.influx import InfluxSerializer
    from diskprobe.serializers.prometheus import PrometheusSerializer

    tags = job_tags("node-1", "llm", "0", 4242, pod_cgroup(1))
    for kind, device in (("disk", PREP_DEVICE), ("compute", ""), ("input_cpu", "")):
        fields = {**interval_fields(kind, device, PREP_MOUNT, 4242), "bottleneck_since": 1}
        metric = Metric("diskprobe_job", tags, fields, 10**18)  # type: ignore[arg-type]
        page = PrometheusSerializer().serialize([metric])
        prometheus = sum(1 for line in page.splitlines() if line and line[0] != "#")
        line = InfluxSerializer().serialize([metric])
        print(f"{kind}: InfluxDB 1 series; Prometheus {prometheus} series; VictoriaMetrics "
              f"(line protocol) {len(fields)} series; {len(line.encode())} B a line, "
              f"{len(line.encode()) * 8640 / 1e6:.1f} MB a day at 10 s")


if __name__ == "__main__":
    budget()
