"""Fail-slow on the dashboards and in the alerts, against a real InfluxDB 1.x, with only
dashboard_data.py's fail-slow block loaded (rack01's sdf slow all along, rack02's sdd slow for
half an hour and recovered; slowdown_ratio and fail_slow from diskprobe's own detector). The
panels return the rows the data says; the Grafana rule and the TICKscript fire for the slow
disk only, not its peers nor the disk that recovered inside the alert window. (The full data
set runs through every panel and alert in test_dashboards.py, with fail_slow_firing.)
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

import dashboard_data as data
import dashboard_eval as ev
from dashboard_data import FAIL_SLOW_DISKS, MIN, RACK_A, RACK_B, Row
from diskprobe.config.sections import IoConfig

from influxdb_server import InfluxServer

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = pytest.mark.xdist_group("test_dashboards_failslow")

DASHBOARDS = Path(__file__).resolve().parent.parent / "dashboards"
UID = "diskprobe-fail-slow"
TICK = DASHBOARDS / "alerts" / "kapacitor" / f"{UID}.tick"
ALERT_WINDOW_NS = 15 * MIN  # the alert reads each device's last fail_slow in 15 minutes
DEVICE = ("host", "device", "model", "serial")
IO, FLEET = "diskprobe-io.json", "diskprobe-fleet.json"
SLOWDOWN, STATES = "Slowdown vs peers", "Fail-slow devices"
ACROSS = "Fail-slow devices across the fleet"
HOSTS = (RACK_A, RACK_B)
Labels = tuple[str, ...]


def _chronograf(server: InfluxServer, db: str, query: str, seconds: int) -> list[ev.Series]:
    """The query for each rack host in turn (Chronograf's :host: holds one), devices ".*"."""
    return [s for host in HOSTS for s in ev.run(server, db, ev.chronograf_expand(
        query, seconds, {":host:": f"'{host}'", ":device:": ".*"}))]


def _labels(row: Row) -> Labels:
    """The device labels InfluxDB groups the row by (a missing tag groups as "")."""
    return tuple(row.tags.get(tag, "") for tag in DEVICE)


def last_points(rows: list[Row], since_ns: int = -(2**63)) -> dict[Labels, Row]:
    """Each judged device's last diskprobe_io point (fail_slow is on every one of them)."""
    return {_labels(row): row for row in sorted(rows, key=lambda r: r.offset_ns)
            if row.measurement == "diskprobe_io" and "fail_slow" in row.fields
            and row.offset_ns >= since_ns}


def fail_slow_firing(rows: list[Row]) -> dict[Labels, str]:
    """diskprobe-fail-slow: every device whose last fail_slow in the window is true."""
    return {labels: "warning" for labels, row in last_points(rows, -ALERT_WINDOW_NS).items()
            if row.fields["fail_slow"] is True}


def _device(rows: list[Row], host: str, device: str) -> list[Row]:
    mine = [r for r in rows if (r.tags.get("host"), r.tags.get("device")) == (host, device)]
    return sorted(mine, key=lambda r: r.offset_ns)


def _yaml_rule() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")  # test_dashboards.py fails without it: enough there
    groups = yaml.safe_load((DASHBOARDS / "alerts" / "grafana-alerts.yaml").read_text())
    (rule,) = [r for g in groups["groups"] for r in g["rules"] if r["uid"].startswith(UID)]
    return rule


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return data.synthetic_fail_slow()


@pytest.fixture
def loaded(influx_db: tuple[InfluxServer, str], rows: list[Row]) -> tuple[InfluxServer, str, int]:
    now_ns = time.time_ns()
    ev.write_rows(*influx_db, rows, now_ns)
    return (*influx_db, now_ns)


def test_the_detector_flagged_one_disk_and_let_another_recover(rows: list[Row]) -> None:
    slow = _device(rows, *data.SLOW_ALWAYS)
    assert slow[-1].fields["fail_slow"] is True
    assert slow[-1].fields["slowdown_ratio"] == pytest.approx(data.SLOWDOWN, rel=0.01)
    peer = _device(rows, RACK_A, "sdc")[-1].fields
    assert peer["fail_slow"] is False and peer["slowdown_ratio"] == pytest.approx(1.0)
    recovered = _device(rows, *data.SLOW_THEN_RECOVERED)
    in_window = [r.fields["fail_slow"] for r in recovered if r.offset_ns >= -ALERT_WINDOW_NS]
    # True, then false, inside the alert window: "last" and "any" tell the two apart.
    assert in_window[0] is True and in_window[-1] is False
    assert recovered[-1].fields["slowdown_ratio"] == pytest.approx(1.0)
    idle = [r for r in slow if data.IDLE_NS[0] <= r.offset_ns < data.IDLE_NS[1]]
    assert idle and all("slowdown_ratio" not in r.fields for r in idle)
    assert fail_slow_firing(rows) == {_labels(slow[-1]): "warning"}


def _ratios(rows: list[Row], host: str, device: str) -> list[float]:
    return [float(r.fields["slowdown_ratio"]) for r in _device(rows, host, device)
            if "slowdown_ratio" in r.fields]


def test_slowdown_panel_draws_each_devices_ratio_below_diskprobes_line(
    loaded: tuple[InfluxServer, str, int], rows: list[Row]
) -> None:
    server, db, _ = loaded
    panel, seconds = ev.grafana_panel(IO, SLOWDOWN)
    (target,) = panel["targets"]
    variables = {"host": list(HOSTS), "device": list(FAIL_SLOW_DISKS)}
    query = ev.grafana_expand(target["query"], seconds, variables)
    assert not ev.leftovers(query)
    expected = {(h, d): _ratios(rows, h, d) for h in HOSTS for d in FAIL_SLOW_DISKS}
    # $__interval is 10 s over 3 h: one 30-second point per bucket, so the means are the points.
    assert {(s["tags"]["host"], s["tags"]["device"]): [v[1] for v in s["values"]]
            for s in ev.run(server, db, query)} == expected
    defaults, limit = panel["fieldConfig"]["defaults"], IoConfig().fail_slow_ratio
    assert {"color": "red", "value": limit} in defaults["thresholds"]["steps"]
    assert defaults["custom"]["thresholdsStyle"]["mode"] in ("line", "dashed")
    # Chronograf draws no threshold: its cell carries the line as a series at the ratio.
    ratio, line = ev.chronograf_queries(IO, SLOWDOWN, db)
    assert {(s["tags"]["host"], s["tags"]["device"]): [v[1] for v in s["values"]]
            for s in _chronograf(server, db, ratio, seconds)} == expected
    flat = _chronograf(server, db, line, seconds)
    assert [{v[1] for v in s["values"]} for s in flat] == [{limit}] * len(HOSTS)
    assert [len(s["values"]) for s in flat] == [len(expected[h, "sdc"]) for h in HOSTS]


def test_device_table_shows_each_devices_last_state_slowest_first(
    loaded: tuple[InfluxServer, str, int], rows: list[Row]
) -> None:
    server, db, now_ns = loaded
    panel, seconds = ev.grafana_panel(IO, STATES)
    (target,) = panel["targets"]
    variables = {"host": list(HOSTS), "device": list(FAIL_SLOW_DISKS)}
    table = ev.table(ev.run(server, db, ev.grafana_expand(target["query"], seconds, variables)))
    expected = last_points(rows)
    assert {tuple(r[t] for t in DEVICE) for r in table} == set(expected)
    for row in table:
        last = expected[tuple(row[t] for t in DEVICE)]
        assert row["fail_slow"] is last.fields["fail_slow"]
        assert row["slowdown_ratio"] == last.fields.get("slowdown_ratio")
        assert row["time"] == now_ns + last.offset_ns  # when that last point was sent
    assert panel["options"]["sortBy"] == [{"displayName": "slowdown", "desc": True}]
    shown = sorted(table, key=lambda r: r["slowdown_ratio"], reverse=True)
    assert (shown[0]["host"], shown[0]["device"]) == data.SLOW_ALWAYS
    assert '"true": {"text": "fail-slow", "color": "red"' in json.dumps(panel["fieldConfig"])
    (text,) = ev.chronograf_queries(IO, STATES, db)
    assert sorted(map(str, ev.table(_chronograf(server, db, text, seconds)))) == sorted(
        map(str, table))


def test_fleet_table_lists_only_devices_whose_last_fail_slow_is_true(
    loaded: tuple[InfluxServer, str, int], rows: list[Row]
) -> None:
    server, db, now_ns = loaded
    panel, seconds = ev.grafana_panel(FLEET, ACROSS)
    (target,) = panel["targets"]
    query = ev.grafana_expand(target["query"], seconds, {"host": list(HOSTS)})
    assert not ev.leftovers(query)
    table = ev.table(ev.run(server, db, query))
    slow = _device(rows, *data.SLOW_ALWAYS)[-1]
    # Not the peers, not rack02's sdd (fail-slow 10 minutes ago, in the range): its last is false.
    assert table == [{**dict(zip(DEVICE, _labels(slow))), "time": now_ns + slow.offset_ns,
                      "fail_slow": True, "slowdown_ratio": slow.fields["slowdown_ratio"]}]
    assert any(r.fields["fail_slow"] is True for r in _device(rows, *data.SLOW_THEN_RECOVERED))
    (text,) = ev.chronograf_queries(FLEET, ACROSS, db)
    assert ev.table(_chronograf(server, db, text, seconds)) == table


def test_grafana_rule_fires_for_the_slow_device_and_reports_its_slowdown(
    loaded: tuple[InfluxServer, str, int], rows: list[Row]
) -> None:
    server, db, _ = loaded
    rule = _yaml_rule()
    nodes = {node["refId"]: node for node in rule["data"]}
    assert nodes["A"]["relativeTimeRange"]["from"] * 10**9 == ALERT_WINDOW_NS
    now_ms = time.time_ns() // 10**6 + 1

    def reduced(ref: str) -> dict[Labels, float | None]:
        query = ev.grafana_alert_query(nodes[ref]["model"]["query"],
                                       nodes[ref]["relativeTimeRange"], now_ms)
        assert not ev.leftovers(query) and "(SELECT" not in query
        series = ev.run(server, db, query)
        return {tuple(s["tags"][t] for t in DEVICE): ev.reduce_last(s) for s in series}

    evaluator = nodes[rule["condition"]]["model"]["conditions"][0]["evaluator"]
    states = reduced(nodes["B"]["model"]["expression"])
    assert set(states) == set(last_points(rows, -ALERT_WINDOW_NS))  # every judged device
    fired = {labels: rule["labels"]["severity"] for labels, value in states.items()
             if value is not None and ev.threshold(evaluator["type"], evaluator["params"], value)}
    assert fired == fail_slow_firing(rows)
    # The slowdown in the summary: the reduce the summary names, of the query of the ratio.
    summary = rule["annotations"]["summary"]
    (ref,) = re.findall(r"\$values\.(\w+)\.Value", summary)
    assert nodes[ref]["model"]["type"] == "reduce"
    source = nodes[nodes[ref]["model"]["expression"]]
    assert '"slowdown_ratio"' in source["model"]["query"]
    slowdowns, slow = reduced(source["refId"]), _device(rows, *data.SLOW_ALWAYS)[-1]
    assert {k: slowdowns[k] for k in fired} == {_labels(slow): slow.fields["slowdown_ratio"]}
    assert all("{{ $labels." + label + " }}" in summary for label in DEVICE)


def test_tickscript_fires_for_the_slow_device_and_reports_its_slowdown(
    loaded: tuple[InfluxServer, str, int], rows: list[Row]
) -> None:
    server, db, _ = loaded
    text = TICK.read_text(encoding="utf-8")
    tick = ev.parse_tick(text)
    assert "(SELECT" not in tick.query  # Kapacitor batch queries take no subquery
    assert tick.group_by == DEVICE and tick.period == "15m"
    statement = ev.kapacitor_statement(tick, db, time.time_ns() + 10**6)
    found = {tuple(s["tags"][t] for t in tick.group_by): (
        ev.kapacitor_level(tick, s), s["values"][-1][s["columns"].index("slowdown")])
        for s in ev.run(server, db, statement)}
    assert {k: level for k, (level, _) in found.items() if level} == fail_slow_firing(rows)
    slow = _device(rows, *data.SLOW_ALWAYS)[-1]
    assert {k: ratio for k, (level, ratio) in found.items() if level} == {
        _labels(slow): slow.fields["slowdown_ratio"]}
    # Kapacitor compares a boolean with TRUE only: the interpreter raises as Kapacitor would.
    assert tick.levels == {"warn": '"value" == TRUE'}
    with pytest.raises(TypeError):
        ev.kapacitor_level(tick, {"columns": ["time", "value"], "values": [[0, 1]]})
    message = re.search(r"\.message\('''(.*?)'''\)", text)
    assert message and '{{ index .Fields "slowdown" }}' in message.group(1)
    assert all('{{ index .Tags "' + tag + '" }}' in message.group(1) for tag in DEVICE)
