"""The dashboards and alerts in dashboards/, proven against a real InfluxDB 1.x.

Loaded data (tests/dashboard_data.py): real `diskprobe --once` output, the golden SMART cases'
expected.out lines and clearly marked synthetic points. Every panel query of every Grafana and
Chronograf dashboard runs with its variables expanded and returns the series it draws; every
Grafana rule and every TICKscript fires for exactly the cases it should; every query names
only measurements, fields and tags of diskprobe's schema (plus Telegraf's nvidia_smi).

Size: one InfluxDB load serves every dashboard and alert check; the fleet section at the end
(table order, one drive's history, the drive-risk alerts) is the next to move into a module of
its own (test_dashboards_fleet.py) with its data from dashboard_data.py.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import dashboard_data as data
import grafana_rule_eval
from dashboard_data import GPU, PROBE, SILENT, STORE, Row
from dashboard_eval import (
    ALL,
    Known,
    _depths,
    chronograf_expand,
    chronograf_queries,
    grafana_expand,
    grafana_order,
    kapacitor_level,
    kapacitor_statement,
    leftovers,
    panel_min_interval,
    panel_seconds,
    parse_tick,
    relative_seconds,
    run,
    tag_values,
    unknown_references,
    write_rows,
)
from dashboard_jobs import synthetic_jobs
from dashboard_latency import synthetic_latency
from diskprobe.schema import MEASUREMENTS
from diskprobe.smart.afr import load_afr_table
from diskprobe.smart.verdict import GROWTH_COUNTERS, VerdictRules
from test_dashboards_failslow import fail_slow_firing
from test_dashboards_jobs import job_disk_bound_firing
from test_dashboards_latency import latency_p99_firing
from test_dashboards_training import disk_bound_firing

from influxdb_server import InfluxServer

ROOT = Path(__file__).resolve().parent.parent
DASHBOARDS = ROOT / "dashboards"
sys.path.insert(0, str(DASHBOARDS))

import generate  # noqa: E402
from dashgen import refs  # noqa: E402
from dashgen.alerts_risk import growth_alert_uid  # noqa: E402
from dashgen.rendered import render_all  # noqa: E402

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = pytest.mark.xdist_group("test_dashboards")

GRAFANA = sorted((DASHBOARDS / "grafana").glob("*.json"))
CHRONOGRAF = sorted((DASHBOARDS / "chronograf").glob("*.json"))
TICKS = sorted((DASHBOARDS / "alerts" / "kapacitor").glob("*.tick"))
ALERTS_YAML = DASHBOARDS / "alerts" / "grafana-alerts.yaml"
GRAFANA_UNITS = {"Bps", "iops", "ms", "percent", "s", "bytes", "celsius", "none", "h", "m", "µs",
                 "d", "dateTimeAsIso"}
PANEL_TYPES = {"timeseries", "table", "state-timeline", "heatmap"}
CHRONOGRAF_CELL_TYPES = {"line", "table", "line-stepplot", "bar"}
TEST_DB_PLACEHOLDER = '"telegraf"."autogen".'


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        pytest.fail("PyYAML is needed to read the alert provisioning file (pip install PyYAML)")
    return yaml.safe_load(ALERTS_YAML.read_text(encoding="utf-8"))


# -- generated files are the generator's output ----------------------------------------------

def test_committed_files_are_the_generators_output() -> None:
    out_of_date = generate.stale(render_all())
    assert not out_of_date, (
        f"dashboards/ is out of date: {out_of_date}; run: python dashboards/generate.py"
    )


def test_check_mode_reports_a_hand_edited_file(tmp_path: Path) -> None:
    files = render_all()
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    readme = (DASHBOARDS / "README.md").read_text(encoding="utf-8")
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    assert generate.stale(files, tmp_path) == []
    (tmp_path / "README.md").write_text(readme.replace("| critical |", "| warning |", 1))
    assert generate.stale(files, tmp_path) == ["README.md"]
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    edited = tmp_path / "grafana" / "diskprobe-io.json"
    edited.write_text(edited.read_text().replace("iops", "ops"), encoding="utf-8")
    (tmp_path / "alerts" / "kapacitor" / "old.tick").write_text("// gone\n", encoding="utf-8")
    assert generate.stale(files, tmp_path) == [
        "alerts/kapacitor/old.tick",
        "grafana/diskprobe-io.json",
    ]


def test_a_renamed_schema_field_fails_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = dict(refs.IO._fields)
    fields["util_pct"] = fields.pop("util_percent")
    monkeypatch.setattr(refs.IO, "_fields", fields)
    with pytest.raises(refs.SchemaError, match="util_percent"):
        render_all()


def test_an_unknown_measurement_or_tag_fails_generation() -> None:
    with pytest.raises(refs.SchemaError):
        refs.Measurement("diskprobe_disk")
    with pytest.raises(refs.SchemaError):
        refs.SMART.tag("drive")


# -- every query names only what the schema has ----------------------------------------------

def _known(renamed: tuple[str, str, str] | None = None) -> Known:
    fields = {m.name: {f.name for f in m.fields} for m in MEASUREMENTS}
    tags = {m.name: {t.name for t in m.tags} | {"host"} for m in MEASUREMENTS}
    if renamed:
        measurement, old, new = renamed
        fields[measurement] = (fields[measurement] - {old}) | {new}
    # Telegraf's nvidia_smi: the one measurement the dashboards read that diskprobe does not write.
    fields["nvidia_smi"] = {"utilization_gpu"}
    tags["nvidia_smi"] = {"host", "index", "name", "uuid", "pstate", "compute_mode"}
    return Known(fields, tags)


def all_queries() -> list[tuple[str, str]]:
    """(where, InfluxQL) for every query in every generated file."""
    out: list[tuple[str, str]] = []
    for path in GRAFANA:
        board = _load(path)
        out += [(f"{path.name}: {p['title']}", t["query"])
                for p in board["panels"] for t in p["targets"]]
        out += [(f"{path.name}: ${v['name']}", v["query"])
                for v in board["templating"]["list"] if v["type"] == "query"]
    for path in CHRONOGRAF:
        board = _load(path)["dashboard"]
        out += [(f"{path.name}: {c['name']}", q["query"])
                for c in board["cells"] for q in c["queries"]]
        for template in board["templates"]:
            query = template.get("query") or {}
            if query:
                out.append((f"{path.name}: {template['tempVar']}",
                            f'SHOW TAG VALUES FROM "{query["measurement"]}" '
                            f'WITH KEY = "{query["tagKey"]}"'))
    for group in _yaml()["groups"]:
        out += [(f"grafana-alerts.yaml: {r['uid']} {d['refId']}", d["model"]["query"])
                for r in group["rules"] for d in r["data"] if "query" in d["model"]]
    out += [(path.name, parse_tick(path.read_text()).query) for path in TICKS]
    return out


def test_queries_name_only_schema_measurements_fields_and_tags() -> None:
    queries = all_queries()
    assert len(queries) > 60
    known = _known()
    problems = [(where, p) for where, q in queries for p in unknown_references(q, known)]
    assert problems == []
    used = {m for _, q in queries for m in re.findall(r'FROM (?:"[^"]+"\.)*"([^"]+)"', q)}
    core = {"diskprobe_io", "diskprobe_fs", "diskprobe_smart", "diskprobe_agent", "nvidia_smi",
            "diskprobe_pressure", "diskprobe_process_io", "diskprobe_cgroup_io",
            "diskprobe_training", "diskprobe_job", "diskprobe_latency", "diskprobe_latency_bucket",
            "diskprobe_process_latency", "diskprobe_cgroup_latency"}
    assert used >= core


@pytest.mark.parametrize(
    "renamed",
    [("diskprobe_io", "await_ms", "await_msec"), ("diskprobe_smart", "verdict_code", "verdict_n"),
     ("diskprobe_fs", "time_to_full_sec", "ttf"), ("diskprobe_agent", "duration_ms", "dur")],
)
def test_the_reference_check_catches_a_renamed_field(renamed: tuple[str, str, str]) -> None:
    known = _known(renamed)
    problems = [p for _, q in all_queries() for p in unknown_references(q, known)]
    assert problems and all(repr(renamed[1]) in p for p in problems)


# -- file structure --------------------------------------------------------------------------

@pytest.mark.parametrize("path", GRAFANA, ids=lambda p: p.name)
def test_grafana_dashboard_has_the_structure_import_expects(path: Path) -> None:
    board = _load(path)
    assert [i["name"] for i in board["__inputs"]] == ["DS_INFLUXDB"]
    assert board["__inputs"][0]["pluginId"] == "influxdb"
    assert board["__inputs"][0]["type"] == "datasource"
    assert isinstance(board["schemaVersion"], int) and board["schemaVersion"] >= 36
    assert board["uid"] == path.stem and board["title"] and board["time"]["to"] == "now"
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["DS_INFLUXDB"]["type"] == "datasource"
    assert variables["DS_INFLUXDB"]["query"] == "influxdb"
    assert "host" in variables and {"device", "path", "serial"} & set(variables)
    for name, variable in variables.items():
        if name != "DS_INFLUXDB":  # a hidden list reads points (the fleet's drives at risk)
            assert variable["query"].startswith(
                "SHOW TAG VALUES FROM " if variable["hide"] == 0 else 'SELECT "')
            assert variable["datasource"]["uid"] == "${DS_INFLUXDB}"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in board["panels"]:
        assert panel["type"] in PANEL_TYPES
        grid = panel["gridPos"]
        assert {"h", "w", "x", "y"} <= set(grid) and grid["x"] + grid["w"] <= 24
        area = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"])
                for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cells & area, f"{panel['title']} overlaps another panel"
        cells |= area
        assert panel["fieldConfig"]["defaults"]["unit"] in GRAFANA_UNITS, panel["title"]
        for override in panel["fieldConfig"]["overrides"]:
            for prop in override["properties"]:
                if prop["id"] == "unit":
                    assert prop["value"] in GRAFANA_UNITS
        assert panel["datasource"] == {"type": "influxdb", "uid": "${DS_INFLUXDB}"}
        assert panel["targets"]
        for target in panel["targets"]:
            assert target["rawQuery"] is True and target["refId"] and target["query"]
            assert target["resultFormat"] in ("time_series", "table")
            assert "$timeFilter" in target["query"]
            assert "$host" in target["query"]


def test_gpu_panel_puts_gpu_and_disk_on_one_time_axis_and_two_y_axes() -> None:
    board = _load(DASHBOARDS / "grafana" / "diskprobe-io.json")
    (panel,) = [p for p in board["panels"] if "GPU" in p["title"]]
    queries = [t["query"] for t in panel["targets"]]
    assert len(queries) == 2
    assert '"nvidia_smi"' in queries[0] and '"utilization_gpu"' in queries[0]
    assert '"util_percent"' in queries[1] and '"await_ms"' in queries[1]
    assert panel["fieldConfig"]["defaults"]["unit"] == "percent"
    (right,) = panel["fieldConfig"]["overrides"]
    props = {p["id"]: p["value"] for p in right["properties"]}
    assert props["custom.axisPlacement"] == "right" and props["unit"] == "ms"
    assert re.fullmatch(right["matcher"]["options"], "gpu01 nvme0n1 await")
    assert not re.fullmatch(right["matcher"]["options"], "nvme0n1 disk_util")


@pytest.mark.parametrize("path", CHRONOGRAF, ids=lambda p: p.name)
def test_chronograf_dashboard_has_the_export_format(path: Path) -> None:
    document = _load(path)
    assert document["meta"]["chronografVersion"]
    board = document["dashboard"]
    assert board["name"] and board["cells"] and board["templates"]
    (host,) = [t for t in board["templates"] if t["tempVar"] == ":host:"]
    # One host picked, or a regex where the board opens on every host (the health board).
    host_filter = '"host" = :host:' if host["type"] == "tagValues" else '"host" =~ /^:host:$/'
    for cell in board["cells"]:
        assert {"i", "x", "y", "w", "h", "name", "queries", "axes", "type"} <= set(cell)
        assert cell["x"] + cell["w"] <= 12 and cell["type"] in CHRONOGRAF_CELL_TYPES
        for query in cell["queries"]:
            assert query["type"] == "influxql"
            text = query["query"]
            # A cell with a range of its own (Panel.time_from: the tables of last reads, a
            # day; the jobs' table and count; the latency bars' minute) reads it, the rest
            # the board's.
            assert ("time > :dashboardTime: AND time < :upperDashboardTime:" in text
                    or re.search(r"WHERE time > now\(\) - \d+[mhd] AND", text))
            assert host_filter in text
            assert query["queryConfig"]["rawText"] == text
            if cell["type"] == "bar":  # one group of bars per interval of its own range
                assert re.search(r"GROUP BY time\(\d+s\)", text)
            elif cell["type"] != "table":
                assert "GROUP BY time(:interval:)" in text


@pytest.mark.parametrize("path", TICKS, ids=lambda p: p.name)
def test_tickscript_is_a_batch_alert(path: Path) -> None:
    text = path.read_text()
    tick = parse_tick(text)
    assert tick.levels and set(tick.levels) <= {"warn", "crit"}
    for word in ("var data = batch", "|alert()", ".id(", ".message(", ".details(",
                 ".stateChangesOnly()"):
        assert word in text
    assert text.count("(") == text.count(")") and text.count("'''") % 2 == 0
    assert tick.query.startswith("SELECT ") and '"telegraf"."autogen".' in tick.query
    assert not leftovers(tick.query)


def test_every_alert_rule_has_severity_summary_and_runbook() -> None:
    rules = [r for g in _yaml()["groups"] for r in g["rules"]]
    assert len(rules) == len({r["uid"] for r in rules}) >= 12
    for rule in rules:
        # A query, B its last value, C the threshold; after C a query and its reduce per
        # extra value the summary shows (diskprobe-fail-slow: the slowdown).
        extra = rule["data"][3:]
        assert [d["refId"] for d in rule["data"][:3]] == ["A", "B", "C"]
        assert rule["condition"] == "C" and len(extra) % 2 == 0
        assert [d["model"].get("type") for d in extra] == [None, "reduce"] * (len(extra) // 2)
        assert rule["data"][0]["model"]["rawQuery"] is True
        assert rule["data"][1]["model"]["type"] == "reduce"
        assert rule["data"][2]["model"]["type"] == "threshold"
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert re.fullmatch(r"\d+[smh]", rule["for"])
        assert rule["annotations"]["summary"] and rule["annotations"]["runbook"]
        assert "$" not in json.dumps(rule["labels"])  # labels are env-interpolated
        assert len(rule["uid"]) <= 40


# -- against a real InfluxDB ------------------------------------------------------------------

@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[Row]:
    real = data.run_diskprobe_once(tmp_path_factory.mktemp("diskprobe"))
    # the agent's jobs: dashboard_jobs.py; block latency: dashboard_latency.py
    return [*data.dataset(real), *synthetic_jobs(), *synthetic_latency()]


def _loaded(influx_db: tuple[InfluxServer, str], rows: list[Row]) -> tuple[InfluxServer, str]:
    server, db = influx_db
    write_rows(server, db, rows, time.time_ns())
    return server, db


def _aliases(query: str) -> set[str]:
    """The columns of the outermost SELECT (a subquery's are its input)."""
    depths = _depths(query)
    end = next((m.start() for m in re.finditer(" FROM ", query) if depths[m.start()] == 0),
               len(query))
    return set(re.findall(r'AS "([^"]+)"', query[:end]))


def _group_tags(query: str) -> set[str]:
    """The tags of the outermost GROUP BY (a subquery has its own)."""
    depths = _depths(query)
    top = [m.start() for m in re.finditer(" GROUP BY ", query) if depths[m.start()] == 0]
    match = re.search(r" GROUP BY (.*?)(?: fill\(|$)", query[top[-1]:]) if top else None
    tags = set(re.findall(r'"([^"]+)"', match.group(1))) if match else set()
    return tags


def _check_series(where: str, query: str, series: list[dict[str, Any]]) -> list[str]:
    if not series:
        return [f"{where}: no series\n  {query}"]
    problems = []
    for one in series:
        if set(one.get("tags", {})) != _group_tags(query):
            problems.append(f"{where}: tags {one.get('tags')} for {query}")
        if not _aliases(query) <= set(one["columns"]):
            problems.append(f"{where}: columns {one['columns']} for {query}")
    for alias in _aliases(query):  # every column the panel draws has data somewhere
        if not any(row[s["columns"].index(alias)] is not None
                   for s in series if alias in s["columns"] for row in s["values"]):
            problems.append(f"{where}: column {alias!r} is empty for {query}")
    return problems


@pytest.mark.parametrize("path", GRAFANA, ids=lambda p: p.name)
def test_grafana_panels_return_their_series(
    path: Path, influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    board = _load(path)
    seconds = relative_seconds(board["time"]["from"])
    variables: dict[str, list[str]] = {}
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":  # in order: later ones depend on earlier ones
            query = grafana_expand(variable["query"], seconds, variables)
            variables[variable["name"]] = tag_values(server, db, query)
            assert variables[variable["name"]], query
    assert {PROBE, STORE, GPU} & set(variables["host"])
    problems: list[str] = []
    for panel in board["panels"]:
        for target in panel["targets"]:
            query = grafana_expand(target["query"], panel_seconds(panel, seconds), variables,
                                   panel_min_interval(panel))
            assert not leftovers(query), query
            problems += _check_series(f"{panel['title']} ({target['refId']})", query,
                                      run(server, db, query))
            if panel.get("repeat"):  # one copy per host: each runs; the SMART hosts have rows
                for value in variables[panel["repeat"]]:
                    one = grafana_expand(target["query"], panel_seconds(panel, seconds),
                                         {**variables, panel["repeat"]: [value]})
                    if value in (STORE, GPU):
                        problems += _check_series(f"{panel['title']} [{value}]", one,
                                                  run(server, db, one))
                    else:
                        run(server, db, one)
    assert problems == []


def test_gpu_panel_shows_gpus_and_disks_of_the_training_host(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    board = _load(DASHBOARDS / "grafana" / "diskprobe-io.json")
    (panel,) = [p for p in board["panels"] if "GPU" in p["title"]]
    values = {"host": [GPU], "device": ["nvme0n1", "nvme1n1", "sdb"]}
    gpu, disk = (run(server, db, grafana_expand(t["query"], 3600, values))
                 for t in panel["targets"])
    assert sorted(s["tags"]["index"] for s in gpu) == ["0", "1"]
    assert sorted(s["tags"]["device"] for s in disk) == ["nvme0n1", "nvme1n1", "sdb"]
    sdb = next(s for s in disk if s["tags"]["device"] == "sdb")
    assert {row[sdb["columns"].index("disk_util")] for row in sdb["values"]} == {97.0}


@pytest.mark.parametrize("path", CHRONOGRAF, ids=lambda p: p.name)
def test_chronograf_cells_return_their_series(
    path: Path, influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    board = _load(path)["dashboard"]
    # Chronograf files carry no time range: use the Grafana twin's (7 days for health, fleet).
    seconds = relative_seconds(_load(DASHBOARDS / "grafana" / path.name)["time"]["from"])
    picks: list[dict[str, str]] = []  # a host picked from SHOW TAG VALUES, each in turn
    values: dict[str, str] = {}
    for template in board["templates"]:
        if template["type"] == "tagValues":
            query = template["query"]
            assert query["db"] == "telegraf"
            picks = [{":host:": f"'{host}'"} for host in tag_values(
                server, db, query["influxql"]
                .replace(":database:", f'"{db}"')
                .replace(":measurement:", f'"{query["measurement"]}"')
                .replace(":tagKey:", f'"{query["tagKey"]}"'))]
            assert picks
        else:
            assert template["type"] == "text"
            values[template["tempVar"]] = template["values"][0]["value"]
    assert picks or ":host:" in values  # a board opening on every host: `:host:` is `.*`
    problems: list[str] = []
    for cell in board["cells"]:
        for query in cell["queries"]:
            text = query["query"].replace(TEST_DB_PLACEHOLDER, f'"{db}"."autogen".')
            found: list[dict[str, Any]] = []
            for pick in picks or [{}]:
                expanded = chronograf_expand(text, seconds, {**values, **pick})
                assert not leftovers(expanded), expanded
                found += run(server, db, expanded)
            problems += _check_series(cell["name"], text, found)
    assert problems == []


# -- the drive-health board opens on every host ----------------------------------------------

HEALTH_BOARD = "diskprobe-health.json"
SMART_NAME = "diskprobe_smart"
HEALTH_NOW = "Drives now, worst first"


def _opened(server: InfluxServer, db: str, variables: list[dict[str, Any]],
            seconds: int) -> dict[str, list[str]]:
    """Grafana's query variables as a board opens: "All" where offered (sent as its allValue,
    else as the list of every value), else the first value."""
    opened: dict[str, list[str]] = {}
    for variable in (v for v in variables if v["type"] == "query"):
        values = tag_values(server, db, grafana_expand(variable["query"], seconds, opened))
        if variable["includeAll"]:
            opened[variable["name"]] = [ALL] if "allValue" in variable else values
        else:
            opened[variable["name"]] = values[:1]
    return opened


def test_health_board_opens_on_every_hosts_drives(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    """Opened as Grafana and Chronograf open it, "Drives now" lists the drives of every host
    that sent a SMART read in its day, not those of the first host only."""
    server, db = _loaded(influx_db, rows)
    smart_hosts = {r.tags["host"] for r in rows if r.measurement == SMART_NAME
                   and r.offset_ns > -data.DAY_S * 10**9}
    assert {STORE, GPU} <= smart_hosts
    board = _load(DASHBOARDS / "grafana" / HEALTH_BOARD)
    (panel,) = [p for p in board["panels"] if p["title"] == HEALTH_NOW]
    seconds = relative_seconds(board["time"]["from"])
    opened = _opened(server, db, board["templating"]["list"], seconds)
    (target,) = panel["targets"]
    query = grafana_expand(target["query"], panel_seconds(panel, seconds), opened)
    assert {s["tags"]["host"] for s in run(server, db, query)} == smart_hosts
    # Chronograf opens each template on its default: a text regex its constant, a list of
    # tag values (one host picked) its first value.
    templates = _load(DASHBOARDS / "chronograf" / HEALTH_BOARD)["dashboard"]["templates"]
    first = tag_values(server, db, f'SHOW TAG VALUES FROM "{SMART_NAME}" WITH KEY = "host"')[0]
    defaults = {t["tempVar"]: t["values"][0]["value"] if t["type"] == "text" else f"'{first}'"
                for t in templates}
    (text,) = chronograf_queries(HEALTH_BOARD, HEALTH_NOW, db)
    found = run(server, db, chronograf_expand(text, seconds, defaults))
    assert {s["tags"]["host"] for s in found} == smart_hosts


# -- alerts ----------------------------------------------------------------------------------

Labels = tuple[str, ...]


def _last_smart(rows: list[Row], field: str) -> dict[Labels, float]:
    last: dict[Labels, tuple[int, float]] = {}
    for row in rows:
        value = row.fields.get(field)
        if row.measurement == "diskprobe_smart" and isinstance(value, int):
            key = (row.tags["host"], row.tags["serial"])
            if key not in last or row.offset_ns >= last[key][0]:
                last[key] = (row.offset_ns, float(value))
    return {key: value for key, (_, value) in last.items()}


DRIVE = ("host", "device", "model", "serial")  # the drive-risk alerts' labels
SMART_WINDOW_NS = 2 * data.HOUR  # their query window


def afr_warn_limit() -> float:
    """diskprobe's own warn limit, as the brief defines it (not dashgen's copy)."""
    baseline = load_afr_table().baseline("hdd")
    assert baseline is not None
    return baseline * VerdictRules().afr_warn_multiple


def _drive_of(row: Row) -> Labels:
    """The drive labels InfluxDB groups the row by (a missing tag groups as "")."""
    return tuple(row.tags.get(tag, "") for tag in DRIVE)


def _last_per_drive(rows: list[Row], field: str) -> dict[Labels, float]:
    """The last value of `field` per drive within the alert window."""
    last: dict[Labels, tuple[int, float]] = {}
    for row in rows:
        value = row.fields.get(field)
        if (row.measurement != "diskprobe_smart" or row.offset_ns < -SMART_WINDOW_NS
                or not isinstance(value, (int, float)) or isinstance(value, bool)):
            continue
        key = _drive_of(row)
        if key not in last or row.offset_ns >= last[key][0]:
            last[key] = (row.offset_ns, float(value))
    return {key: value for key, (_, value) in last.items()}


def drive_risk_firing(rows: list[Row]) -> dict[str, dict[Labels, str]]:
    """Every drive (golden ones too, should they carry the fields) above diskprobe's AFR warn
    limit; for each counter diskprobe tracks, every drive whose *_per_day rate is above 0."""
    afr = _last_per_drive(rows, "afr_percent")
    growing = {
        growth_alert_uid(counter): {k: "warning" for k, v
                                    in _last_per_drive(rows, f"{counter}_per_day").items()
                                    if v > 0}
        for counter in GROWTH_COUNTERS
    }
    return {"diskprobe-afr-high": {k: "warning" for k, v in afr.items() if v > afr_warn_limit()},
            **growing}


def expected_firing(rows: list[Row]) -> dict[str, dict[Labels, str]]:
    """What each alert must report, from the loaded data and the issue's thresholds."""
    verdicts = _last_smart(rows, "verdict_code")
    used = {(r.tags["host"], r.tags["path"]): float(r.fields["used_percent"])
            for r in sorted(rows, key=lambda r: r.offset_ns)
            if r.measurement == "diskprobe_fs" and "used_percent" in r.fields}
    # This machine's own devices and drives (diskprobe --once: one sample each) fire only if
    # they really are busy or worn; on a CI VM they are not.
    real = [r for r in rows if r.origin == "real"]
    busy: dict[str, dict[Labels, str]] = {
        kind: {(r.tags["host"], r.tags["device"]): "warning" for r in real
               if r.measurement == "diskprobe_io" and re.fullmatch(pattern, r.tags["device"])
               and float(r.fields["util_percent"]) > 90 and float(r.fields["await_ms"]) > limit}
        for kind, pattern, limit in (("nvme", r"nvme[0-9]+n[0-9]+", 10),
                                     ("other", r"(sd|vd|xvd|hd)[a-z]+", 50))
    }
    wear = _last_smart(real, "percentage_used")
    warning = _last_smart(real, "critical_warning")
    spare = _last_smart(real, "available_spare_percent")
    spare_threshold = _last_smart(real, "available_spare_threshold_percent")
    spare_margin = {k: v - spare_threshold[k] for k, v in spare.items() if k in spare_threshold}
    return {
        "diskprobe-reallocated-growth": {(STORE, data.REALLOC_CASE): "warning"},
        "diskprobe-pending-growth": {(STORE, data.PENDING_CASE): "warning"},
        "diskprobe-verdict": {key: "critical" if code == 2 else "warning"
                              for key, code in verdicts.items() if code >= 1},
        "diskprobe-nvme-critical-warning": {
            (GPU, "failing-nvme-samsung-mzwll3t2hajq-critical-warning"): "critical",
            (GPU, data.WORN_A): "critical",
            **{k: "critical" for k, v in warning.items() if v != 0},
        },
        "diskprobe-nvme-wear": {
            (GPU, data.WORN_A): "critical", (GPU, data.WORN_B): "warning",
            **{k: "critical" if v >= 95 else "warning" for k, v in wear.items() if v >= 80},
        },
        "diskprobe-nvme-spare": {
            (GPU, data.WORN_A): "critical", (GPU, data.WORN_B): "warning",
            **{k: "critical" if v < 0 else "warning" for k, v in spare_margin.items() if v <= 10},
        },
        "diskprobe-fs-fill-forecast": {(PROBE, "/scratch"): "critical",
                                       (PROBE, "/checkpoints"): "warning"},
        "diskprobe-fs-used": {key: "critical" for key, pct in used.items() if pct > 95},
        "diskprobe-fs-stuck": {(PROBE, data.STUCK): "critical"},
        "diskprobe-io-saturated-nvme": {(GPU, "nvme1n1"): "warning", **busy["nvme"]},
        "diskprobe-io-saturated-other": {(GPU, "sdb"): "warning", **busy["other"]},
        "diskprobe-agent-silent": {(SILENT,): "critical"},
        "diskprobe-fail-slow": fail_slow_firing(rows),
        "diskprobe-training-disk-bound": disk_bound_firing(rows),
        "diskprobe-job-disk-bound": job_disk_bound_firing(rows),
        **latency_p99_firing(rows),
        **drive_risk_firing(rows),
    }


def test_expectations_cover_failing_and_healthy_golden_drives(rows: list[Row]) -> None:
    verdicts = expected_firing(rows)["diskprobe-verdict"]
    # Grown defects and uncorrected errors warn (no failure-rate data for SCSI; health OK).
    assert verdicts[(STORE, "failing-scsi-seagate-st373453lc-grown260")] == "warning"
    assert verdicts[(STORE, data.REALLOC_CASE)] == "warning"
    assert (GPU, "nvme-samsung-970-evo-plus-250gb") not in verdicts
    assert (STORE, "ata-hdd-wdc-wd20efrx-68euzn0") not in verdicts
    failing = {r.meta["case"] for r in rows if r.meta.get("case", "").startswith("failing-")}
    assert {serial for _, serial in verdicts} >= failing
    assert expected_firing(rows)["diskprobe-fs-used"][(PROBE, data.FULL)] == "critical"
    # Of the training host's ranks only the disk-bound one (test_dashboards_training.py).
    assert expected_firing(rows)["diskprobe-training-disk-bound"] == {
        (GPU, *data.DISK_BOUND, "nvme1n1"): "warning"}


ALERT_UIDS = sorted(p.stem for p in TICKS)


def test_every_alert_has_a_tickscript_and_grafana_rules_and_an_expectation(
    rows: list[Row],
) -> None:
    grafana_uids = {re.sub(r"-(warn|crit)$", "", r["uid"])
                    for g in _yaml()["groups"] for r in g["rules"]}
    assert set(ALERT_UIDS) == grafana_uids == set(expected_firing(rows))


def _labels(series: dict[str, Any], names: list[str]) -> Labels:
    return tuple(series["tags"][name] for name in names)


@pytest.mark.parametrize("uid", ALERT_UIDS)
def test_grafana_rules_fire_for_exactly_the_expected_cases(
    uid: str, influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    rules = [r for g in _yaml()["groups"] for r in g["rules"]
             if re.sub(r"-(warn|crit)$", "", r["uid"]) == uid]
    fired: dict[Labels, str] = {}
    now_ms = time.time_ns() // 10**6 + 1
    for rule in rules:
        for labels, severity in grafana_rule_eval.fired(server, db, rule, now_ms).items():
            assert labels not in fired, f"{labels} fires at two severities"
            fired[labels] = severity
    assert fired == expected_firing(rows)[uid]


@pytest.mark.parametrize("uid", ALERT_UIDS)
def test_tickscripts_fire_for_exactly_the_expected_cases(
    uid: str, influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    tick = parse_tick((DASHBOARDS / "alerts" / "kapacitor" / f"{uid}.tick").read_text())
    statement = kapacitor_statement(tick, db, time.time_ns() + 10**6)
    fired: dict[Labels, str] = {}
    for series in run(server, db, statement):
        level = kapacitor_level(tick, series)
        if level:
            fired[_labels(series, list(tick.group_by))] = level
    assert fired == expected_firing(rows)[uid], statement


# -- I/O pressure, top processes, containers -------------------------------------------------

def test_real_output_has_pressure_and_process_io(rows: list[Row]) -> None:
    real = {r.measurement for r in rows if r.origin == "real"}
    if Path("/proc/pressure/io").is_file():
        assert "diskprobe_pressure" in real
    assert "diskprobe_process_io" in real  # the writer beside diskprobe --once


def test_pressure_and_container_panels_show_the_training_host(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    board = _load(DASHBOARDS / "grafana" / "diskprobe-io.json")
    panels = {p["title"]: p for p in board["panels"]}
    values = {"host": [GPU], "device": ["nvme0n1", "nvme1n1", "sdb"]}

    def results(title: str) -> list[list[dict[str, Any]]]:
        return [run(server, db, grafana_expand(t["query"], 3600, values))
                for t in panels[title]["targets"]]

    psi, disk = results("I/O pressure vs disk load")
    (host,) = psi
    assert {tuple(v[1:]) for v in host["values"]} == {(data.PSI_SOME, data.PSI_FULL)}
    assert sorted(s["tags"]["device"] for s in disk) == ["nvme0n1", "nvme1n1", "sdb"]
    assert panels["I/O stall time (µs per second)"]["fieldConfig"]["defaults"]["unit"] == "µs"
    (per_container,) = results("I/O per container, pod or service")
    # One series per device a container used: added up, the pod's reads (612 MB/s).
    pod = [s for s in per_container if s["tags"]["pod_uid"]]
    assert all(s["tags"]["container_id"] and s["tags"]["device"] for s in pod)
    assert sum(s["values"][0][1] for s in pod) == 612.0e6 and len(pod) >= 2
    assert {s["tags"]["unit"] for s in per_container} >= {"postgresql.service"}
    (pressure,) = results("I/O pressure per container, pod or service")
    assert {s["values"][0][1] for s in pressure} == {41.0, 12.0, 3.0}
    (top,) = results("Top processes by storage I/O")
    table = panels["Top processes by storage I/O"]
    assert table["options"]["sortBy"] == [{"displayName": "read + write", "desc": True}]
    totals = {s["tags"]["process"]: s["values"][0][1] for s in top}
    assert totals == {name: read + write for name, _, _, read, write, _, _ in data.PROCESSES}


def test_who_waits_puts_the_random_reader_first(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    panels = {p["title"]: p for p in _load(DASHBOARDS / "grafana" / "diskprobe-io.json")["panels"]}

    def shown(title: str) -> list[dict[str, Any]]:
        """The training host's rows of a process table, as Grafana sorts them."""
        (target,) = panels[title]["targets"]
        query = grafana_expand(target["query"], 3600, {"host": [GPU]})
        return grafana_order(panels[title], _table_rows(run(server, db, query)))

    waits = shown("Who waits on disk")
    assert [r["process"] for r in waits] == sorted(
        data.BLKIO_WAIT, key=data.BLKIO_WAIT.__getitem__, reverse=True)
    assert waits[0]["process"] == data.RANDOM_READER
    for row in waits:  # every column is that process's last point
        name, user, pid, read, write, cmdline, cgroup = next(
            p for p in data.PROCESSES if p[0] == row["process"])
        assert row == {"host": GPU, "process": name, "user": user,
                       "blkio_wait_ratio": data.BLKIO_WAIT[name], "read_bytes_per_sec": read,
                       "write_bytes_per_sec": write, "pid": pid, "cmdline": cmdline,
                       "cgroup": cgroup}
    # The same reader moves the fewest bytes: the table by bytes alone lists it last.
    assert shown("Top processes by storage I/O")[-1]["process"] == data.RANDOM_READER
    assert "kernel.task_delayacct=1" in panels["Who waits on disk"]["description"]


# -- fleet: drives to replace, one drive's history, the drive-risk alerts -------------------

FLEET_BOARD = DASHBOARDS / "grafana" / "diskprobe-fleet.json"
REPLACE_TABLE = "Drives to replace, worst first"  # the fleet's other table: fail-slow devices
FLEET_HOSTS = {"host": [data.RACK_A, data.RACK_B]}
WEEK_S = 7 * 86400


def _drive(host: str, device: str) -> Labels:
    """A fleet drive's labels (host, device, model, serial) as the data gives them."""
    case = next(case for h, d, case, _ in data.FLEET if (h, d) == (host, device))
    row = next(r for r in data.golden_rows()
               if r.measurement == "diskprobe_smart" and r.meta["case"] == case)
    return (host, device, row.tags["model"], case)


FAIL_HDD, WARN_HDD = _drive(data.RACK_A, "sda"), _drive(data.RACK_A, "sdb")
OK_HDD, WARN_NVME, OK_SCSI = (_drive(data.RACK_B, d) for d in ("sda", "nvme0", "sdb"))


def _fleet_reads(rows: list[Row], drive: Labels) -> list[Row]:
    return sorted((r for r in rows if r.measurement == "diskprobe_smart"
                   and _drive_of(r) == drive), key=lambda r: r.offset_ns)


def test_drive_risk_expectations_pick_the_right_drives(rows: list[Row]) -> None:
    expected = expected_firing(rows)
    assert set(expected["diskprobe-afr-high"]) >= {FAIL_HDD, WARN_HDD}
    growth = {c: set(expected[growth_alert_uid(c)]) for c in GROWTH_COUNTERS}
    assert WARN_HDD in growth["pending_sectors"] and WARN_NVME in growth["media_errors"]
    fleet = {FAIL_HDD, WARN_HDD, OK_HDD, WARN_NVME, OK_SCSI}
    assert {c: drives & fleet for c, drives in growth.items() if drives & fleet} == {
        "pending_sectors": {WARN_HDD}, "media_errors": {WARN_NVME}}
    assert not {OK_HDD, OK_SCSI} & set(expected["diskprobe-afr-high"])
    # The healthy drive sits at the baseline itself: the limit is a multiple of it.
    assert _fleet_reads(rows, OK_HDD)[-1].fields["afr_percent"] == load_afr_table().baseline("hdd")


def test_afr_alert_uses_diskprobes_own_warn_limit() -> None:
    limit = afr_warn_limit()
    (rule,) = [r for g in _yaml()["groups"] for r in g["rules"]
               if r["uid"].startswith("diskprobe-afr")]
    evaluator = rule["data"][2]["model"]["conditions"][0]["evaluator"]
    assert evaluator == {"type": "gt", "params": [pytest.approx(limit)]}
    tick = parse_tick((DASHBOARDS / "alerts" / "kapacitor" / "diskprobe-afr-high.tick").read_text())
    assert tick.levels == {"warn": f'"value" > {limit:g}'}
    # "gt" stands for the verdict's ">=" only while no rate of the table equals the limit.
    rates = {b.afr_percent for a in load_afr_table().attributes.values() for b in a.buckets}
    assert all(rate != pytest.approx(limit) for rate in rates)


def _table_rows(series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per row, tags and columns; not "time": with several selectors InfluxDB gives
    the start of the range there, not a point's time."""
    return [{**s["tags"], **{c: v for c, v in zip(s["columns"], values) if c != "time"}}
            for s in series for values in s["values"]]


def _fleet_variables(server: InfluxServer, db: str, hosts: list[str]) -> dict[str, list[str]]:
    """The fleet board's hosts and, as Grafana reads it, its hidden list of drives at risk
    over the board's week."""
    (at_risk,) = [v for v in _load(FLEET_BOARD)["templating"]["list"] if v["name"] == "at_risk"]
    query = grafana_expand(at_risk["query"], WEEK_S, {"host": hosts})
    return {"host": hosts, "at_risk": tag_values(server, db, query)}


def test_fleet_table_lists_drives_worst_first(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    (panel,) = [p for p in _load(FLEET_BOARD)["panels"] if p["title"] == REPLACE_TABLE]
    (target,) = panel["targets"]
    seconds = panel_seconds(panel, WEEK_S)  # the table's own day
    assert seconds == 86400
    variables = _fleet_variables(server, db, FLEET_HOSTS["host"])
    table = _table_rows(run(server, db, grafana_expand(target["query"], seconds, variables)))
    shown = grafana_order(panel, table)
    # The drives at risk only (the ok ones' AFR is below the warn limit): fail before warn;
    # within a verdict the higher AFR first, no estimate last.
    assert [tuple(r[t] for t in DRIVE) for r in shown] == [FAIL_HDD, WARN_HDD, WARN_NVME]
    rates = [f"{c}_per_day" for c in GROWTH_COUNTERS]
    for row in shown:
        last = _fleet_reads(rows, tuple(row[t] for t in DRIVE))[-1].fields
        assert row["age_days"] == pytest.approx(int(last["power_on_hours"]) / 24)
        for column in ("verdict_code", "verdict", "afr_percent", "verdict_reasons", *rates):
            assert row[column] == last.get(column), column
    warn = next(r for r in shown if r["serial"] == WARN_HDD[3])
    assert warn["pending_sectors_per_day"] == 2.0 and warn["afr_percent"] > afr_warn_limit()
    # Chronograf's cell, one host at a time, lists the same drives at risk with the same
    # values (it narrows them in its own query: it has no list variable), the ok ones not.
    cell = next(c for c in _load(DASHBOARDS / "chronograf" / FLEET_BOARD.name)["dashboard"]
                ["cells"] if c["name"] == REPLACE_TABLE)
    text = cell["queries"][0]["query"].replace(TEST_DB_PLACEHOLDER, f'"{db}"."autogen".')
    chronograf = [row for host in FLEET_HOSTS["host"] for row in _table_rows(
        run(server, db, chronograf_expand(text, WEEK_S, {":host:": f"'{host}'"})))]
    assert sorted(map(str, chronograf)) == sorted(map(str, table))
    assert not {OK_HDD[3], OK_SCSI[3]} & {row["serial"] for row in chronograf}
    assert cell["tableOptions"]["sortBy"]["internalName"] == "verdict_code"


def test_all_hosts_as_grafana_sends_it_gives_every_hosts_rows(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    """"All" is sent as the allValue `.*`: the fleet table then holds the rows of every host
    the variable lists, as if each had been picked."""
    server, db = _loaded(influx_db, rows)
    board = _load(FLEET_BOARD)
    (host,) = [v for v in board["templating"]["list"] if v["name"] == "host"]
    hosts = tag_values(server, db, grafana_expand(host["query"], WEEK_S, {}))
    (panel,) = [p for p in board["panels"] if p["title"] == REPLACE_TABLE]
    (target,) = panel["targets"]
    seconds = panel_seconds(panel, WEEK_S)
    picked = _fleet_variables(server, db, hosts)
    every = _table_rows(run(server, db, grafana_expand(target["query"], seconds, picked)))
    query = grafana_expand(target["query"], seconds, {**_fleet_variables(server, db, [ALL]),
                                                      "host": [ALL]})
    assert host["allValue"] == ".*" and "/^.*$/" in query
    assert sorted(map(str, _table_rows(run(server, db, query)))) == sorted(map(str, every))
    assert {row["host"] for row in every} >= set(FLEET_HOSTS["host"])


def test_fleet_history_follows_one_drive(
    influx_db: tuple[InfluxServer, str], rows: list[Row]
) -> None:
    server, db = _loaded(influx_db, rows)
    board = _load(FLEET_BOARD)
    (serial,) = [v for v in board["templating"]["list"] if v["name"] == "serial"]
    assert serial["multi"] is False and serial["includeAll"] is False  # one drive at a time
    (panel,) = [p for p in board["panels"] if p["title"].startswith("Drive $serial")]
    values = {**FLEET_HOSTS, "serial": [WARN_HDD[3]]}
    afr, sectors = (run(server, db, grafana_expand(t["query"], WEEK_S, values))
                    for t in panel["targets"])
    reads = _fleet_reads(rows, WARN_HDD)
    (one,) = afr
    assert one["tags"] == {"host": WARN_HDD[0], "device": WARN_HDD[1], "serial": WARN_HDD[3]}
    assert [v[1] for v in one["values"]] == [r.fields["afr_percent"] for r in reads]
    (counters,) = sectors
    for name in ("reallocated_sectors", "pending_sectors"):
        column = counters["columns"].index(name)
        assert [v[column] for v in counters["values"]] == [r.fields[name] for r in reads]
    assert [r.fields["pending_sectors"] for r in reads] == [0, 2, 4, 6]  # it does grow
    # Sectors on the right axis, the rate on the left (legend: host device serial column).
    (right,) = panel["fieldConfig"]["overrides"]
    legend = f"{WARN_HDD[0]} {WARN_HDD[1]} {WARN_HDD[3]}"
    assert re.fullmatch(right["matcher"]["options"], f"{legend} pending_sectors")
    assert not re.fullmatch(right["matcher"]["options"], f"{legend} afr_percent")
