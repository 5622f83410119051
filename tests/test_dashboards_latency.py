"""Block request latency ([latency]) on the I/O board and in the alerts, against a real
InfluxDB 1.x loaded with dashboard_latency.py's training host: 20 minutes of the kernel's
counts turned into points by the plugin's own PointMaker.

The heatmap's buckets add up, per column and per interval, to the requests diskprobe_latency
counted; the p50/p99 panel draws each device and operation's percentiles; the tables of
processes and of pods and containers add up their waits and sit beside "Who waits on disk";
Chronograf's bar cell reads the last minute's buckets. The alert "Device latency p99 high"
fires, per operation, for exactly the devices whose p99 stayed above the operation's limit
for 15 minutes of busy intervals (the read and the flush of nvme1n1), in Grafana and in
Kapacitor: not for a high p99 on 60 requests an interval, one high for 6 minutes only, a
device busy for 6 minutes only, a flush above the read limit but under the flush one, a low
one, or discards; and the data catches a rule without its request floor, its minutes or its
window. (test_dashboards.py runs every panel and alert on the full data set too.)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

import pytest

import dashboard_eval as ev
import dashboard_latency as lat
import grafana_rule_eval
from dashboard_data import GPU, MIN, SEC, Row

from influxdb_server import InfluxServer

sys.path.insert(0, str(ev.DASHBOARDS))
from dashgen.alerts_latency import MIN_MINUTES, P99_LIMIT_MS

IO_BOARD = "diskprobe-io.json"
HEATMAP, PERCENTILES = "Request latency heatmap", "Latency p50 and p99 per device"
PROCESSES, CGROUPS = "Top processes by latency", "Pods and containers by latency"
WHO_WAITS, BAR = "Who waits on disk", "Latency buckets, last minute"
WINDOW_NS, MIN_REQUESTS = 15 * MIN, 100  # the issue's: 15 minutes, intervals of 100 requests
BY = ("host", "device", "op")
Labels = tuple[str, ...]


def uid(op: str) -> str:
    return f"diskprobe-latency-p99-{op}"


def latency_p99_firing(rows: list[Row], now_ns: int = 0) -> dict[str, dict[Labels, str]]:
    """Per operation's alert: the (host, device, op) whose intervals with at least 100
    requests in the last 15 minutes fall in at least MIN_MINUTES minutes (InfluxDB's minutes,
    from the epoch), every minute's median p99 above the operation's limit."""
    out: dict[str, dict[Labels, str]] = {}
    for op, limit in P99_LIMIT_MS.items():
        minutes: dict[Labels, dict[int, list[float]]] = {}
        for row in rows:
            if (row.measurement == "diskprobe_latency" and row.tags["op"] == op
                    and row.offset_ns > -WINDOW_NS
                    and int(row.fields["requests"]) >= MIN_REQUESTS):
                labels = tuple(row.tags[tag] for tag in BY)
                minute = (now_ns + row.offset_ns) // MIN
                minutes.setdefault(labels, {}).setdefault(minute, []).append(
                    float(row.fields["p99_ms"]))
        out[uid(op)] = {labels: "warning" for labels, per in minutes.items()
                        if len(per) >= MIN_MINUTES
                        and min(statistics.median(v) for v in per.values()) > limit}
    return out


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return lat.synthetic_latency()


@pytest.fixture
def loaded(influx_db: tuple[InfluxServer, str], rows: list[Row]) -> tuple[InfluxServer, str, int]:
    now_ns = time.time_ns()
    ev.write_rows(*influx_db, rows, now_ns)
    return (*influx_db, now_ns)


def _latency(rows: list[Row], case: tuple[str, str]) -> list[Row]:
    return sorted((r for r in rows if r.measurement == "diskprobe_latency"
                   and (r.tags["device"], r.tags["op"]) == case), key=lambda r: r.offset_ns)


def test_the_data_holds_each_case_from_the_plugins_own_points(rows: list[Row]) -> None:
    last = {case: _latency(rows, case)[-1].fields for case in lat.CASES}
    assert last[lat.FIRES_READ]["requests"] == 400 and last[lat.FEW]["requests"] == 60
    assert 250 < float(last[lat.FIRES_READ]["p99_ms"]) <= 300  # the slow 3 %, within 25 %
    assert float(last[lat.UNDER_FLUSH]["p99_ms"]) == 300 and float(last[lat.LOW]["p99_ms"]) < 3
    quiet = [r for r in _latency(rows, lat.FIRES_READ) if r.fields["requests"] == 20]
    assert len(quiet) == 40 and max(float(r.fields["p99_ms"]) for r in quiet) < 3
    assert _latency(rows, lat.IDLE_THEN_HIGH)[0].offset_ns == -350 * SEC
    short = _latency(rows, lat.SHORT)
    assert [float(r.fields["p99_ms"]) > 250 for r in short].index(True) == len(short) - 36
    fired = latency_p99_firing(rows)
    assert {op: set(fired[uid(op)]) for op in P99_LIMIT_MS} == {
        op: {(GPU, *case) for case in cases} for op, cases in lat.FIRING.items()}
    assert "discard" not in P99_LIMIT_MS  # discards are background work: not alerted
    for measurement in ("diskprobe_latency_bucket", "diskprobe_process_latency",
                        "diskprobe_cgroup_latency"):
        assert any(r.measurement == measurement for r in rows)


def _panel(title: str) -> tuple[dict[str, Any], int]:
    return ev.grafana_panel(IO_BOARD, title)


def _sums(series: list[ev.Series]) -> dict[int, float]:
    """Per time bucket, the heatmap column's requests over every bucket (le)."""
    column: dict[int, float] = {}
    for one in series:
        for at, value in one["values"]:
            column[at] = column.get(at, 0.0) + (value or 0.0)
    return column


def test_heatmap_buckets_add_up_to_the_intervals_requests(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, now_ns = loaded
    panel, seconds = _panel(HEATMAP)
    assert panel["type"] == "heatmap" and panel["interval"] == "1m"
    options = panel["options"]
    assert options["calculate"] is False and options["rowsFrame"] == {"layout": "le"}
    assert options["yAxis"]["unit"] == "s" and options["cellValues"]["unit"] == "none"
    (target,) = panel["targets"]
    assert target["alias"] == "$tag_le" and target["resultFormat"] == "time_series"
    variables = {"host": [GPU], "device": [ev.ALL]}
    requests = lat.requests_of(rows)
    for step_s in (60, 10):  # the panel's minute, and one interval per column
        query = ev.grafana_expand(target["query"], seconds, variables, step_s)
        assert f"GROUP BY time({step_s}s), \"le\" fill(0)" in query
        series = ev.run(server, db, query)
        les = {s["tags"]["le"] for s in series}
        assert les == {str(r.tags["le"]) for r in rows if r.measurement.endswith("_bucket")}
        expected: dict[int, float] = {}
        for offset, count in requests.items():
            at = now_ns + offset
            expected[at - at % (step_s * SEC)] = expected.get(at - at % (step_s * SEC), 0) + count
        shown = _sums(series)
        assert {at: shown.get(at, 0.0) for at in expected} == expected
        assert set(shown.values()) - set(expected.values()) <= {0.0}  # fill(0) outside
    # One device: nvme1n1 alone, each 10 s column its interval's reads and flushes.
    one = ev.grafana_expand(target["query"], seconds, {"host": [GPU], "device": ["nvme1n1"]}, 10)
    device = sum(int(r.fields["requests"]) for r in rows if r.measurement == "diskprobe_latency"
                 and r.tags["device"] == "nvme1n1")
    assert sum(_sums(ev.run(server, db, one)).values()) == device


def test_percentiles_per_device_and_operation(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    panel, seconds = _panel(PERCENTILES)
    (target,) = panel["targets"]
    assert panel["fieldConfig"]["defaults"]["unit"] == "ms"
    query = ev.grafana_expand(target["query"], seconds, {"host": [GPU], "device": [ev.ALL]}, 10)
    series = {(s["tags"]["device"], s["tags"]["op"]): s for s in ev.run(server, db, query)}
    assert set(series) == set(lat.CASES)
    for case, one in series.items():  # one interval per 10 s bucket: its own p50 and p99
        p99 = one["columns"].index("p99")
        assert sorted(v[p99] for v in one["values"]) == sorted(
            float(r.fields["p99_ms"]) for r in _latency(rows, case))
    (text,) = ev.chronograf_queries(IO_BOARD, PERCENTILES, db)
    chronograf = ev.run(server, db, ev.chronograf_expand(text, seconds, {
        ":host:": f"'{GPU}'", ":device:": ".*"}))
    assert len(chronograf) == len(lat.CASES)


def _table(server: InfluxServer, db: str, title: str, device: str = ".*") -> list[dict[str, Any]]:
    panel, seconds = _panel(title)
    (target,) = panel["targets"]
    values = {"host": [GPU], "device": [ev.ALL if device == ".*" else device]}
    table = [{k: v for k, v in row.items() if k != "time"}
             for row in ev.table(ev.run(server, db, ev.grafana_expand(target["query"], seconds,
                                                                     values)))]
    return ev.grafana_order(panel, table)


def _summed(rows: list[Row], measurement: str, keys: tuple[str, ...]) -> dict[Labels, list[float]]:
    found: dict[Labels, list[float]] = {}
    for row in rows:
        if row.measurement == measurement:
            key = tuple(row.tags.get(tag, "") for tag in keys)
            wait, requests = found.get(key, [0.0, 0.0])
            found[key] = [wait + float(row.fields["wait_sec"]),
                          requests + int(row.fields["requests"])]
    return found


def test_process_and_container_tables_sum_the_waits_beside_who_waits(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    keys = ("process", "user", "device", "op")
    shown = _table(server, db, PROCESSES)
    expected = _summed(rows, "diskprobe_process_latency", keys)
    assert {tuple(r[k] for k in keys): [r["wait_sec"], r["requests"]] for r in shown} == {
        k: [pytest.approx(w), n] for k, (w, n) in expected.items()}
    waits = [r["wait_sec"] for r in shown]
    assert waits == sorted(waits, reverse=True)  # the longest waiting first
    for row in shown:
        assert row["mean_ms"] == pytest.approx(row["wait_sec"] / row["requests"] * 1000)
    keys = ("cgroup", "device", "op")
    pods = _table(server, db, CGROUPS, "nvme1n1")
    expected = _summed([r for r in rows if r.tags.get("device") == "nvme1n1"],
                       "diskprobe_cgroup_latency", keys)
    assert {tuple(r[k] for k in keys): [r["wait_sec"], r["requests"]] for r in pods} == {
        k: [pytest.approx(w), n] for k, (w, n) in expected.items()}
    top = pods[0]
    assert top["pod_uid"] == "3f2a9c1e-7b4d-4e8a-9c0f-1a2b3c4d5e6f" and top["op"] == "flush"
    assert top["p99_ms"] == max(float(r.fields["p99_ms"]) for r in rows if
                                r.measurement == "diskprobe_cgroup_latency" and r.tags.get(
                                    "pod_uid") and r.tags["device"] == "nvme1n1"
                                and r.tags["op"] == "flush")
    # Beside "Who waits on disk": the same row, the next column; pods beside the iotop view.
    grid = {title: _panel(title)[0]["gridPos"] for title in (WHO_WAITS, PROCESSES, CGROUPS)}
    assert grid[PROCESSES]["y"] == grid[WHO_WAITS]["y"]
    assert grid[PROCESSES]["x"] == grid[WHO_WAITS]["x"] + grid[WHO_WAITS]["w"]
    assert grid[CGROUPS]["y"] + grid[CGROUPS]["h"] == grid[WHO_WAITS]["y"]


def test_chronograf_has_lines_and_a_bar_cell_of_the_last_minutes_buckets(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    cells = {c["name"]: c for c in ev.generated("chronograf", IO_BOARD)["dashboard"]["cells"]}
    assert HEATMAP not in cells and cells[BAR]["type"] == "bar"
    assert cells[PERCENTILES]["type"] == "line"
    (text,) = ev.chronograf_queries(IO_BOARD, BAR, db)
    assert "time > now() - 1m" in text and "GROUP BY time(10s), \"le\"" in text
    series = ev.run(server, db, ev.chronograf_expand(text, 3600, {":host:": f"'{GPU}'",
                                                                  ":device:": ".*"}))
    recent = sum(n for offset, n in lat.requests_of(rows).items() if offset > -60 * SEC)
    assert sum(_sums(series).values()) == recent and len(series) >= 3


def _rule(op: str) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    groups = yaml.safe_load((ev.DASHBOARDS / "alerts" / "grafana-alerts.yaml").read_text())
    (rule,) = [r for g in groups["groups"] for r in g["rules"] if r["uid"].startswith(uid(op))]
    return rule


def _fired(server: InfluxServer, db: str, rule: dict[str, Any], query: str = "",
           window_s: int = 0) -> dict[Labels, str]:
    rule = json.loads(json.dumps(rule))
    node = rule["data"][0]
    node["model"]["query"] = query or node["model"]["query"]
    node["relativeTimeRange"]["from"] = window_s or node["relativeTimeRange"]["from"]
    return grafana_rule_eval.fired(server, db, rule, time.time_ns() // 10**6 + 1)


def test_grafana_rules_fire_for_the_sustained_busy_high_p99_only(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, now_ns = loaded
    expected = latency_p99_firing(rows, now_ns)
    for op, limit in P99_LIMIT_MS.items():
        rule = _rule(op)
        evaluator = rule["data"][2]["model"]["conditions"][0]["evaluator"]
        assert evaluator == {"type": "gt", "params": [limit]}
        assert rule["data"][0]["relativeTimeRange"]["from"] == 900 and rule["for"] == "0s"
        fired = _fired(server, db, rule)
        assert fired == expected[uid(op)]
        assert set(fired) == {(GPU, *case) for case in lat.FIRING[op]}
    # The data tells a wrong rule apart: without the request floor, without the minutes, over
    # 5 minutes, and the read limit on flushes.
    read, write, flush = _rule("read"), _rule("write"), _rule("flush")
    floor, enough = ' AND "requests" >= 100', ' WHERE "minutes" >= 10'
    query = read["data"][0]["model"]["query"]
    assert floor in query and enough in query
    assert (GPU, *lat.FEW) in _fired(server, db, read, query.replace(floor, ""))
    without = write["data"][0]["model"]["query"].replace(enough, "")
    assert (GPU, *lat.IDLE_THEN_HIGH) in _fired(server, db, write, without)
    five = write["data"][0]["model"]["query"].replace(enough, ' WHERE "minutes" >= 3')
    assert (GPU, *lat.SHORT) in _fired(server, db, write, five, window_s=300)
    flush["data"][2]["model"]["conditions"][0]["evaluator"]["params"] = [P99_LIMIT_MS["read"]]
    assert (GPU, *lat.UNDER_FLUSH) in _fired(server, db, flush)
    assert read["labels"] == {"severity": "warning", "source": "diskprobe"}
    assert all("{{ $labels." + label + " }}" in read["annotations"]["summary"]
               for label in ("host", "device"))


def test_tickscripts_fire_for_the_sustained_busy_high_p99_only(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, now_ns = loaded
    expected = latency_p99_firing(rows, now_ns)
    for op, limit in P99_LIMIT_MS.items():
        text = (ev.DASHBOARDS / "alerts" / "kapacitor" / f"{uid(op)}.tick").read_text()
        tick = ev.parse_tick(text)
        assert tick.group_by == BY and tick.period == "1800s" and tick.every == "1m"
        assert tick.levels == {"warn": f'"value" > {limit:g}'}
        statement = ev.kapacitor_statement(tick, db, time.time_ns() + 10**6)
        found = {tuple(s["tags"][t] for t in BY): ev.kapacitor_level(tick, s)
                 for s in ev.run(server, db, statement)}
        fired = {labels: level for labels, level in found.items() if level}
        assert fired == expected[uid(op)]
        assert set(fired) == {(GPU, *case) for case in lat.FIRING[op]}
