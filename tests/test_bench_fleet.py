"""The fleet benchmark (tests/bench/bench_fleet.py) in quick mode: 5 simulated hosts with a
few minutes of fast data and three days of SMART history, loaded into the suite's InfluxDB
(the `influx_db` fixture) and a real VictoriaMetrics (the `victoria` fixture).

Checked, no duration: the alerts fire for exactly the simulated failing and fail-slow drives,
the hung mount and the disk-bound training job (not the moved drive on its old host, not the
decommissioned host, not the fail-slow state that cleared), every dashboard, variable and
alert query runs without error and returns rows wherever the simulation wrote what it reads,
and both ingest paths accept every line.
"""

from __future__ import annotations

import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

import fleet_sim
import fleet_sim_alerts as alerts
import fleet_sim_ingest as ingest
import fleet_sim_queries as queries

from victoria_server import VictoriaMetrics

from influxdb_server import InfluxServer

PLAN = {"fast_minutes": 3, "smart_days": 3, "fs_days": 2, "seed": 1}
# Measurements the simulation does not write (no GPUs; [latency] is off by default, and its
# per-host series are counted in docs/fleet.md from tests/bench/fleet_sim_latency.py): their
# panels and alerts have nothing to return.
NOT_SIMULATED = ("nvidia_smi", '"diskprobe_latency', '"diskprobe_process_latency"',
                 '"diskprobe_cgroup_latency"')
# Queries that find nothing by design: no saturated disk, no grown defects (no SCSI drive
# fails in the simulation), no fail-slow device on the Chronograf cell's host, and no
# training window the meter judged disk-bound (the agent's disk-bound job has no meter).
EMPTY_BY_DESIGN = ("io-saturated", "grown-defects-per-day",
                   "chronograf/diskprobe-fleet: Fail-slow devices", "training-disk-bound")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("fleet")
    return out, fleet_sim.generate(5, out, PLAN, prometheus=True)


def _loaded(influx_db: tuple[InfluxServer, str], fleet: tuple[Path, dict[str, object]]) -> int:
    server, db = influx_db
    out, manifest = fleet
    files = sorted((out / "hosts").glob("*.lp.gz"))
    sent = ingest.send("influx", server.url, f"/write?db={db}", files, 0, 0)
    assert sent.errors == 0
    return int(str(manifest["anchor_s"])) * 10**9


def test_scenario_covers_every_case(fleet: tuple[Path, dict[str, object]]) -> None:
    _, manifest = fleet
    expected = manifest["expected"]
    assert isinstance(expected, dict)
    kinds = {serial[len("SIM00000"):] for _, serial in expected["drives"]}
    assert expected["fail_slow"] and len(kinds) == len(expected["drives"]) >= 3
    assert manifest["decommissioned"] == ["store-00004"]
    assert manifest["moved_serial"] in {serial for _, serial in expected["drives"]}
    assert expected["stuck"] == [["train-00000", "/mnt/datasets"]]  # hung 10 minutes
    assert expected["jobs"] == [["train-00000", "prep-00000", "0"]]  # the agent's, no meter


def test_alerts_fire_for_exactly_the_simulated_drives(
    influx_db: tuple[InfluxServer, str], fleet: tuple[Path, dict[str, object]]
) -> None:
    anchor_ns = _loaded(influx_db, fleet)
    server, db = influx_db
    fired, problems = alerts.check(server, db, anchor_ns, fleet[1]["expected"])  # type: ignore[arg-type]
    assert problems == []
    # The moved drive fires on its new host only; the decommissioned host never.
    moved = str(fleet[1]["moved_serial"])
    hosts = {labels[0] for uid in fired.grafana.values() for labels in uid
             if labels[-1] == moved}
    assert hosts == {"train-00000"}
    assert not any(labels[0] == "store-00004" for uid in fired.kapacitor.values()
                   for labels in uid)


def test_every_query_runs_and_returns_data_where_there_is_data(
    influx_db: tuple[InfluxServer, str], fleet: tuple[Path, dict[str, object]]
) -> None:
    anchor_ns = _loaded(influx_db, fleet)
    server, db = influx_db
    # The per-host boards on a training node (Grafana opens on the first, a storage node).
    todo = queries.grafana_queries(server, db, anchor_ns, prefer={
        "serial": str(fleet[1]["moved_serial"]), "host": "train-00000"})
    todo += queries.chronograf_queries(db, anchor_ns, "train-00000")
    todo += queries.alert_queries(db, anchor_ns)
    assert len(todo) > 100
    for query in todo:
        queries.run_timed(server, db, query, repeats=1)
    assert [(q.name, q.error) for q in todo if q.error] == []
    expect_rows = [q for q in todo if not any(m in q.text for m in NOT_SIMULATED)
                   and not any(part in q.name for part in EMPTY_BY_DESIGN)]
    assert [q.name for q in expect_rows if q.rows == 0] == []


def test_victoria_metrics_takes_both_formats(
    victoria: VictoriaMetrics, fleet: tuple[Path, dict[str, object]]
) -> None:
    out, _ = fleet
    lines = ingest.send("vm", victoria.url, "/write", sorted((out / "hosts").glob("*.gz")), 0, 0)
    prom = ingest.send("vm", victoria.url, "/api/v1/import/prometheus",
                       sorted((out / "prom").glob("*.gz")), 0, 0)
    assert lines.errors == prom.errors == 0
    ingest.victoria_flush(victoria.url)
    # One series from each path: line protocol names it measurement_field, the Prometheus
    # import diskprobe's exposition name.
    for name in ("diskprobe_io_util_percent", "diskprobe_io_util_ratio"):
        query = urllib.parse.urlencode({"match[]": name})
        with urllib.request.urlopen(f"{victoria.url}/api/v1/series?{query}", timeout=30) as r:
            assert b'"host":"train-00000"' in r.read(), name
