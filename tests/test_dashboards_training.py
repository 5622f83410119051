"""Training jobs on the dashboards and in the alert, against a real InfluxDB 1.x with only
dashboard_data.py's training host loaded: its jobs' diskprobe_training windows (verdicts from
diskprobe's own meter code) and its devices' diskprobe_io.

The device variable lists the devices the jobs read and the disk query reads those only;
Chronograf's cells show the load the jobs measured; the verdict table each rank's last window.
The alert fires for the disk-bound rank only, and the data catches an alert without its
bottleneck filter, with a longer window, or on the last or largest wait instead of the mean.
(test_dashboards.py runs every panel and alert on the full data set, with disk_bound_firing.)
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

import dashboard_data as data
import dashboard_eval as ev
from dashboard_data import GPU, MIN, Row

from influxdb_server import InfluxServer

UID, BOARD = "diskprobe-training-disk-bound", "diskprobe-training.json"
WINDOW_NS = 15 * MIN  # the alert's window
LABELS = ("host", "job", "rank", "device")
PANEL, TABLE = "Is the training job disk-bound?", "Training jobs' last verdicts"
JOB_DEVICES = {"nvme1n1", "nvme0n1", "sdb"}  # the devices under the jobs' data (not /dev/shm)
Labels = tuple[str, ...]
FIRES: Labels = (GPU, *data.DISK_BOUND, "nvme1n1")  # the alert's labels for the disk-bound rank
BELOW: Labels = (GPU, *data.BELOW_LIMIT, "nvme1n1")


def disk_bound_firing(rows: list[Row]) -> dict[Labels, str]:
    """diskprobe-training-disk-bound: every rank whose windows judged disk in the window wait
    more than half of their step time on the mean."""
    waits: dict[Labels, list[float]] = {}
    for row in rows:
        if (row.measurement == "diskprobe_training" and row.fields["bottleneck"] == "disk"
                and row.offset_ns > -WINDOW_NS):
            labels = tuple(row.tags.get(tag, "") for tag in LABELS)
            waits.setdefault(labels, []).append(float(row.fields["input_wait_ratio"]))
    return {labels: "warning" for labels, values in waits.items()
            if sum(values) / len(values) > 0.5}


def _chronograf(server: InfluxServer, db: str, query: str, seconds: int) -> list[ev.Series]:
    values = {":host:": f"'{GPU}'", ":job:": ".*", ":device:": ".*"}  # Chronograf's defaults
    return ev.run(server, db, ev.chronograf_expand(query, seconds, values))


def _by(series: list[ev.Series], *tags: str) -> dict[Labels, ev.Series]:
    return {tuple(s["tags"][t] for t in tags): s for s in series}


def _column(series: ev.Series, name: str) -> set[Any]:  # to 9 places: ratio x 100 is inexact
    index = series["columns"].index(name)
    return {round(row[index], 9) for row in series["values"]}


def _last(rows: list[Row], job: str, rank: str) -> Row:
    mine = [r for r in rows if r.measurement == "diskprobe_training"
            and (r.tags["job"], r.tags["rank"]) == (job, rank)]
    return max(mine, key=lambda r: r.offset_ns)


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    # The host's diskprobe_io (DISKS) from an empty template: only util and awaits matter here.
    io = data.synthetic_gpu_host([Row("diskprobe_io", {}, {}, 0, "template")])
    return [*data.synthetic_training(), *io]


@pytest.fixture
def loaded(influx_db: tuple[InfluxServer, str], rows: list[Row]) -> tuple[InfluxServer, str, int]:
    now_ns = time.time_ns()
    ev.write_rows(*influx_db, rows, now_ns)
    return (*influx_db, now_ns)


def test_the_data_holds_each_case_with_diskprobes_own_verdicts(rows: list[Row]) -> None:
    verdicts = {(job, rank): tuple(_last(rows, job, rank).fields[name] for name in (
        "bottleneck", "input_wait_ratio")) for (job, rank), *_ in data.TRAINING_RANKS}
    assert verdicts == {data.DISK_BOUND: ("disk", 0.8), data.BELOW_LIMIT: ("disk", 0.6),
                        data.COMPUTE_BOUND: ("compute", 0.1),
                        data.LOADER_BOUND: ("input_cpu", 0.85), data.ENDED: ("compute", 0.1)}
    ended = {r.offset_ns: r.fields["input_wait_ratio"] for r in rows if r.tags.get("job")
             == data.ENDED[0] and r.fields["bottleneck"] == "disk"}  # before the window
    assert set(ended.values()) == {0.9} and max(ended) <= -WINDOW_NS - 5 * MIN
    assert "device" not in _last(rows, *data.LOADER_BOUND).tags  # in memory
    # Disk-bound all along, its last wait 0.6, its mean 0.45: last() or max() would fire.
    below = [float(r.fields["input_wait_ratio"]) for r in rows if r.offset_ns > -WINDOW_NS
             and (r.tags.get("job"), r.tags.get("rank")) == data.BELOW_LIMIT]
    assert sum(below) / len(below) == pytest.approx(0.45)
    io_devices = {r.tags["device"] for r in rows if r.measurement == "diskprobe_io"}
    assert {d for _, d, _, _ in data.TRAINING_RANKS if d} == JOB_DEVICES <= io_devices
    assert disk_bound_firing(rows) == {FIRES: "warning"}


def _variables(server: InfluxServer, db: str, seconds: int,
               chosen: dict[str, list[str]]) -> dict[str, list[str]]:
    """The dashboard's variables in order, each from its own query; `chosen` overrides."""
    values: dict[str, list[str]] = {}
    for variable in ev.generated("grafana", BOARD)["templating"]["list"]:
        if variable["type"] == "query":
            query = ev.grafana_expand(variable["query"], seconds, values)
            assert variable["query"].startswith('SHOW TAG VALUES FROM "diskprobe_training"')
            values[variable["name"]] = chosen.get(variable["name"]) or ev.tag_values(
                server, db, query)
    return values


def test_device_variable_narrows_the_disk_query_to_the_jobs_devices(
    loaded: tuple[InfluxServer, str, int],
) -> None:
    server, db, _ = loaded
    panel, seconds = ev.grafana_panel(BOARD, PANEL)
    everything = _variables(server, db, seconds, {})
    assert everything["host"] == [GPU] and set(everything["device"]) == JOB_DEVICES
    assert set(everything["job"]) == {job for (job, _), *_ in data.TRAINING_RANKS}
    chosen = _variables(server, db, seconds, {"job": [data.DISK_BOUND[0]]})
    assert chosen["device"] == ["nvme1n1"]
    wait, disk = (ev.run(server, db, ev.grafana_expand(t["query"], seconds, chosen))
                  for t in panel["targets"])
    # Both ranks of the job, as percentages of step time; the other jobs are not selected.
    assert {k: _column(s, "input_wait") for k, s in _by(wait, "job", "rank").items()} == {
        data.DISK_BOUND: {80.0}, data.BELOW_LIMIT: {60.0, 30.0}}
    # Only the job's device, though diskprobe_io has the host's other devices too.
    (one,) = disk
    assert one["tags"] == {"host": GPU, "device": "nvme1n1"}
    assert (_column(one, "util"), _column(one, "r_await")) == ({99.0}, {25.0})
    (right,) = panel["fieldConfig"]["overrides"]  # r_await on the right, in ms; the % left
    assert right["properties"][0] == {"id": "unit", "value": "ms"}
    assert panel["fieldConfig"]["defaults"]["unit"] == "percent"
    assert [bool(re.fullmatch(right["matcher"]["options"], name)) for name in (
        f"{GPU} nvme1n1 r_await", f"{GPU} nvme1n1 util", f"{GPU} resnet50 rank 0 input_wait")
    ] == [True, False, False]


def test_chronograf_cells_read_the_load_the_jobs_measured(
    loaded: tuple[InfluxServer, str, int],
) -> None:
    server, db, _ = loaded
    _, seconds = ev.grafana_panel(BOARD, PANEL)
    wait, util = ev.chronograf_queries(BOARD, "Input wait vs the job's device %util", db)
    waits = {k: _column(s, "input_wait") for k, s in
             _by(_chronograf(server, db, wait, seconds), "job", "rank").items()}
    assert waits[data.LOADER_BOUND] == {85.0}
    assert waits[data.ENDED] == {90.0, 10.0}
    assert {k[1]: _column(s, "util") for k, s in
            _by(_chronograf(server, db, util, seconds), "host", "device").items()} == {
        "nvme1n1": {99.0}, "nvme0n1": {100.0}, "sdb": {97.0}}
    (r_await,) = ev.chronograf_queries(BOARD, "The job's device r_await", db)
    assert {k[1]: _column(s, "r_await") for k, s in
            _by(_chronograf(server, db, r_await, seconds), "host", "device").items()} == {
        "nvme1n1": {25.0}, "nvme0n1": {0.4}, "sdb": {180.0}}


def test_verdict_table_shows_each_ranks_last_window(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, now_ns = loaded
    panel, seconds = ev.grafana_panel(BOARD, TABLE)
    (target,) = panel["targets"]
    query = ev.grafana_expand(target["query"], seconds, _variables(server, db, seconds, {}))
    table = ev.table(ev.run(server, db, query))
    (text,) = ev.chronograf_queries(BOARD, TABLE, db)  # Chronograf: the same rows
    assert sorted(map(str, ev.table(_chronograf(server, db, text, seconds)))) == sorted(
        map(str, table))
    expected = {}
    for (job, rank), *_ in data.TRAINING_RANKS:
        last = _last(rows, job, rank)
        expected[GPU, job, rank, last.tags.get("device", "")] = {
            "time": now_ns + last.offset_ns, "bottleneck": last.fields["bottleneck"],
            "input_wait": pytest.approx(100 * float(last.fields["input_wait_ratio"])),
            **{name: last.fields.get(name) for name in (
                "device_util_percent", "device_read_await_ms", "step_time_sec", "mount_point")}}
    assert {tuple(r.pop(t) for t in LABELS): r for r in table} == expected
    # The job whose disk episode ended shows its last verdict, not its worst.
    assert expected[(GPU, data.ENDED[0], data.ENDED[1], "sdb")]["bottleneck"] == "compute"
    assert panel["options"]["sortBy"] == [{"displayName": "input wait", "desc": True}]
    mapped = json.dumps(panel["fieldConfig"])
    assert all(f'"{verdict}": {{"text": "{verdict}", "color": ' in mapped
               for verdict in ("disk", "input_cpu", "compute", "checkpoint", "remote_fs"))


def _fired(server: InfluxServer, db: str, query: str, window_s: int,
           evaluator: dict[str, Any]) -> dict[Labels, float]:
    text = ev.grafana_alert_query(query, {"from": window_s, "to": 0}, time.time_ns() // 10**6 + 1)
    assert not ev.leftovers(text)
    found = {tuple(s["tags"][t] for t in LABELS): ev.reduce_last(s)
             for s in ev.run(server, db, text)}
    return {k: v for k, v in found.items()
            if v is not None and ev.threshold(evaluator["type"], evaluator["params"], v)}


def test_grafana_rule_fires_for_the_disk_bound_rank_only(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    yaml = pytest.importorskip("yaml")  # test_dashboards.py fails without it: enough there
    groups = yaml.safe_load((ev.DASHBOARDS / "alerts" / "grafana-alerts.yaml").read_text())
    (rule,) = [r for g in groups["groups"] for r in g["rules"] if r["uid"].startswith(UID)]
    nodes = {node["refId"]: node for node in rule["data"]}
    query, window_s = nodes["A"]["model"]["query"], nodes["A"]["relativeTimeRange"]["from"]
    assert window_s * 10**9 == WINDOW_NS and rule["labels"]["severity"] == "warning"
    evaluator = nodes["C"]["model"]["conditions"][0]["evaluator"]
    assert evaluator == {"type": "gt", "params": [0.5]}
    fired = _fired(server, db, query, window_s, evaluator)
    assert {k: "warning" for k in fired} == disk_bound_firing(rows)
    assert fired == {FIRES: pytest.approx(0.8)}
    # The data tells a wrong rule apart: without the verdict filter the loaders' rank fires,
    # with an hour's window the job whose disk-bound spell ended 20 minutes ago.
    verdict = ' AND "bottleneck" =~ /^disk$/'
    assert verdict in query
    unfiltered = _fired(server, db, query.replace(verdict, ""), window_s, evaluator)
    assert (GPU, *data.LOADER_BOUND, "") in unfiltered
    assert (GPU, *data.ENDED, "sdb") in _fired(server, db, query, 3600, evaluator)
    # The summary's r_await: the reduce it names, of the device_read_await_ms query.
    refs = re.findall(r"\$values\.(\w+)\.Value", rule["annotations"]["summary"])
    (ref,) = set(refs) - {"B"}  # B: the wait itself
    source = nodes[nodes[ref]["model"]["expression"]]["model"]["query"]
    assert '"device_read_await_ms"' in source
    r_await = _fired(server, db, source, window_s, {"type": "gt", "params": [0]})
    assert r_await[FIRES] == 25.0
    assert all("{{ $labels." + label + " }}" in rule["annotations"]["summary"] for label in LABELS)


def test_tickscript_fires_for_the_disk_bound_rank_only(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    text = (ev.DASHBOARDS / "alerts" / "kapacitor" / f"{UID}.tick").read_text(encoding="utf-8")
    tick = ev.parse_tick(text)
    assert tick.group_by == LABELS and tick.period == "15m" and tick.every == "1m"
    assert tick.levels == {"warn": '"value" > 0.5'}
    statement = ev.kapacitor_statement(tick, db, time.time_ns() + 10**6)
    found = {tuple(s["tags"][t] for t in LABELS): (
        ev.kapacitor_level(tick, s), s["values"][-1][s["columns"].index("r_await")])
        for s in ev.run(server, db, statement)}
    assert {k: level for k, (level, _) in found.items() if level} == disk_bound_firing(rows)
    assert found[FIRES] == ("warning", 25.0)
    assert found[BELOW][0] == ""  # disk-bound, 0.45 on the mean
    message = re.search(r"\.message\('''(.*?)'''\)", text)
    assert message and '{{ index .Fields "r_await" }}' in message.group(1)
    assert all('{{ index .Tags "' + tag + '" }}' in message.group(1) for tag in LABELS)
