"""The shipped InfluxDB 1.x retention policies and continuous queries, on a real InfluxDB 1.6.

A continuous query only computes windows near the wall clock, so each query's SELECT ... INTO
body runs once with an explicit time range over back-filled raw data (days of it), and what
it wrote into the long retention policy is checked, value by value, against the same
aggregates computed in Python from the raw points (tests/downsampling_data.py). One short
continuous query then runs live on a server with the continuous query service on.
"""

from __future__ import annotations

import math
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import dashboard_eval as ev
import downsampling_data as data
from diskprobe import schema
from downsampling_server import CQ_LIVE, ConfiguredInfluxServer

from ci import skip_or_fail
from influxdb_server import InfluxServer, find_influxd, quote_ident, series_rows

DASHBOARDS = Path(__file__).resolve().parent.parent / "dashboards"
if str(DASHBOARDS) not in sys.path:
    sys.path.insert(0, str(DASHBOARDS))

from dashgen import downsample  # noqa: E402
from dashgen.downsample import (  # noqa: E402
    LONG_RP,
    ContinuousQuery,
    continuous_queries,
    iql_file,
    kept_fields,
)

DAY_NS = 86400 * data.SEC
SHIPPED = DASHBOARDS / "downsampling" / "influxdb-1x.iql"


@pytest.fixture(scope="module")
def downsampled(influxdb: InfluxServer) -> Iterator[tuple[InfluxServer, str, list[Any], int]]:
    """A database with the shipped file applied as its header says (database renamed with
    the sed it gives) and raw data back-filled."""
    db = "downsampling_backfill"
    influxdb.create_database(db)
    shipped = SHIPPED.read_text(encoding="utf-8").replace('"telegraf"', quote_ident(db))
    for line in shipped.splitlines():
        if line and not line.startswith("#"):
            influxdb.query(db, line)
    names = {row["name"] for row in series_rows(influxdb.query(db, "SHOW CONTINUOUS QUERIES"))
             if row}
    assert {q.name for q in continuous_queries()} <= names
    end_ns = time.time_ns() // DAY_NS * DAY_NS  # midnight: every window is a whole one
    metrics = data.raw_points(end_ns)
    status, text = influxdb.write(db, data.line_protocol(metrics))
    assert status == 204, text
    for query in continuous_queries():  # each test below runs its own again: the same points
        influxdb.query(db, query.select(db, f"time >= {end_ns - 4 * DAY_NS} AND time < {end_ns}"))
    yield influxdb, db, metrics, end_ns
    influxdb.query(db, f"DROP DATABASE {quote_ident(db)}")


def _same(got: object, want: object) -> bool:
    if isinstance(want, frozenset):
        return got in want
    if isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, (int, float)) and isinstance(want, (int, float)), (got, want)
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9)
    return got == want and type(got) is type(want)


def _written(server: InfluxServer, db: str, query: ContinuousQuery) -> dict[Any, dict[str, Any]]:
    aliases = ", ".join(quote_ident(c.alias) for c in query.columns)
    source = f"{quote_ident(db)}.{quote_ident(LONG_RP)}.{quote_ident(query.measurement)}"
    (result,) = server.query(db, f"SELECT {aliases} FROM {source} GROUP BY *")
    out: dict[Any, dict[str, Any]] = {}
    for series in result.get("series", []):
        tags = tuple(sorted((k, v) for k, v in series.get("tags", {}).items() if v != ""))
        for values in series["values"]:
            row = dict(zip(series["columns"], values))
            if any(row[c.alias] is not None for c in query.columns):
                out[data.Window(tags, row["time"])] = row
    return out


@pytest.mark.parametrize("query", continuous_queries(), ids=lambda q: q.name)
def test_each_continuous_query_keeps_what_python_computes_from_the_raw_points(
    downsampled: tuple[InfluxServer, str, list[Any], int], query: ContinuousQuery
) -> None:
    server, db, metrics, end_ns = downsampled
    span = f"time >= {end_ns - 4 * DAY_NS} AND time < {end_ns}"
    (result,) = server.query(db, query.select(db, span))
    want = data.expected(query, metrics)
    assert want, f"{query.name}: the back-fill has no points for it"
    assert series_rows([result])[0]["written"] == len(want)
    got = _written(server, db, query)
    assert set(got) == set(want)
    problems = [(window, alias, got[window][alias], value)
                for window, row in want.items() for alias, value in row.items()
                if not _same(got[window][alias], value)]
    assert problems == []


def test_fail_slow_is_counted_per_window_and_absent_where_it_never_was(
    downsampled: tuple[InfluxServer, str, list[Any], int],
) -> None:
    """What an alert over the year reads: intervals fail-slow per 5 minutes, sda only."""
    server, db, metrics, end_ns = downsampled
    (flags,) = [q for q in continuous_queries() if q.columns[0].alias == "fail_slow_intervals"]
    server.query(db, flags.select(db, f"time >= {end_ns - DAY_NS} AND time < {end_ns}"))
    (result,) = server.query(db, (
        f'SELECT sum("fail_slow_intervals") AS "n" FROM {quote_ident(db)}."{LONG_RP}".'
        '"diskprobe_io" GROUP BY "host", "device"'))
    counted = {(s["tags"]["host"], s["tags"]["device"]): s["values"][0][1]
               for s in result.get("series", []) if s["values"][0][1] is not None}
    slow = [m for m in metrics if m.measurement == "diskprobe_io" and m.fields["fail_slow"]]
    per_device: dict[tuple[str, str], int] = {}
    for metric in slow:
        key = (metric.tags["host"], metric.tags["device"])
        per_device[key] = per_device.get(key, 0) + 1
    assert {device for _, device in per_device} == {"sda"}
    assert counted == per_device


def test_the_shipped_file_is_these_statements_one_per_line() -> None:
    lines = [line for line in iql_file().splitlines() if line and not line.startswith("#")]
    assert tuple(lines) == downsample.statements("telegraf")
    assert all(q.name in iql_file() for q in continuous_queries())


def test_a_live_continuous_query_writes_into_the_long_policy() -> None:
    """The CQ service itself: a 2 s query over points written now; bounded wait, no timing."""
    influxd = find_influxd()
    if influxd is None:
        skip_or_fail("influxd (InfluxDB 1.x) is not on PATH; install the influxdb package")
    with ConfiguredInfluxServer(influxd, CQ_LIVE) as server:
        db = "live"
        server.create_database(db)
        for statement in downsample.retention_statements(db):
            server.query(db, statement)
        (io,) = [q for q in continuous_queries() if q.name == "diskprobe_io_5m"]
        live = ContinuousQuery("live_io_2s", io.measurement, "2s", "4s", io.columns[:2])
        server.query(db, live.create(db))
        deadline, rows = time.monotonic() + 20.0, list[dict[str, Any]]()
        while time.monotonic() < deadline and not rows:
            now = time.time_ns()
            body = f"diskprobe_io,host=h,device=sda reads_per_sec=4 {now}\n"
            body += f"diskprobe_io,host=h,device=sda reads_per_sec=6 {now + 1}\n"
            assert server.write(db, body.encode())[0] == 204
            time.sleep(0.5)
            rows = series_rows(server.query(db, (
                f'SELECT "reads_per_sec", "reads_per_sec_max" FROM "{db}"."{LONG_RP}".'
                '"diskprobe_io" WHERE "reads_per_sec_max" = 6')))
        assert rows, "the continuous query wrote nothing into the long policy"
        assert all(4 <= row["reads_per_sec"] <= 6 for row in rows)


def _history_target(title: str, ref: int = 0) -> str:
    board = ev.generated("downsampling", "grafana", "diskprobe-history.json")
    (panel,) = [p for p in board["panels"] if p["title"] == title]
    return str(panel["targets"][ref]["query"])


def _bucketed(metrics: list[Any], name: str, field: str, by: tuple[str, ...],
              window: str, bucket_ns: int) -> dict[tuple[Any, ...], Any]:
    """The maximum of `field` per Grafana bucket of the downsampled windows' start times."""
    window_ns = data.duration_ns(window)
    out: dict[tuple[Any, ...], Any] = {}
    for m in metrics:
        if m.measurement == name:
            start = m.time_ns // window_ns * window_ns
            key = (*(m.tags[t] for t in by), start // bucket_ns * bucket_ns)
            out[key] = max(out.get(key, m.fields[field]), m.fields[field])
    return out


def test_the_history_board_reads_a_year_of_downsampled_series(
    downsampled: tuple[InfluxServer, str, list[Any], int],
) -> None:
    """The long-range panels, as Grafana sends them for the last 365 days, on the long
    policy: per bucket, the worst verdict and the %util peak equal the raw points' maxima."""
    server, db, metrics, _ = downsampled
    year = 365 * 86400
    bucket_ns = max(1, year // 1000) * data.SEC  # Grafana's $__interval for 1000 points
    hosts = {"host": list(data.HOSTS), "serial": ["A1"], "device": ["sda", "nvme0n1"]}
    checks = (("Worst verdict per day", 0, "diskprobe_smart", "verdict_code", ("host", "serial"),
               "1d"),
              ("%util: mean and peak", 1, "diskprobe_io", "util_percent", ("host", "device"),
               "5m"))
    for title, ref, name, field, by, window in checks:
        query = ev.grafana_expand(_history_target(title, ref), year, hosts)
        assert not ev.leftovers(query) and f'"{LONG_RP}".' in query
        got = {(*(s["tags"][t] for t in by), row[0]): row[1]
               for s in ev.run(server, db, query) for row in s["values"]}
        assert got == _bucketed(metrics, name, field, by, window, bucket_ns), title


def test_the_history_board_counts_fail_slow_intervals_over_the_year(
    downsampled: tuple[InfluxServer, str, list[Any], int],
) -> None:
    server, db, metrics, _ = downsampled
    query = ev.grafana_expand(_history_target("Devices fail-slow in the range"), 365 * 86400,
                              {"host": list(data.HOSTS), "device": ["sda", "nvme0n1"]})
    rows = ev.table(ev.run(server, db, query))
    want: dict[tuple[str, str], int] = {}
    for m in metrics:
        if m.measurement == "diskprobe_io" and m.fields["fail_slow"]:
            key = (m.tags["host"], m.tags["device"])
            want[key] = want.get(key, 0) + 1
    assert {(r["host"], r["device"]): r["fail_slow_intervals"] for r in rows} == want
    # The worst slowdown over the 5-minute windows that had a fail-slow interval.
    window_ns = data.duration_ns("5m")
    io = [m for m in metrics if m.measurement == "diskprobe_io"]
    slow = {(m.tags["host"], m.tags["device"], m.time_ns // window_ns) for m in io
            if m.fields["fail_slow"]}
    worst: dict[tuple[str, str], float] = {}
    for m in io:
        if (m.tags["host"], m.tags["device"], m.time_ns // window_ns) in slow:
            key = (m.tags["host"], m.tags["device"])
            worst[key] = max(worst.get(key, 0.0), float(m.fields["slowdown_ratio"]))
    assert {(r["host"], r["device"]): r["slowdown_ratio_max"] for r in rows} == worst


def _known_downsampled() -> ev.Known:
    """The long policy's measurements: the fields the continuous queries write, the raw tags."""
    names = {q.measurement for q in continuous_queries()}
    return ev.Known({m: set(kept_fields(m)) for m in names},
                    {m: {t.name for t in schema.measurement(m).tags} | {"host"} for m in names})


def test_every_history_panel_reads_kept_fields_and_returns_series(
    downsampled: tuple[InfluxServer, str, list[Any], int],
) -> None:
    server, db, _, _ = downsampled
    board = ev.generated("downsampling", "grafana", "diskprobe-history.json")
    variables = {"host": list(data.HOSTS), "serial": ["A1"], "device": ["sda", "nvme0n1"]}
    queries = [(p["title"], t["query"]) for p in board["panels"] for t in p["targets"]]
    queries += [(v["name"], v["query"]) for v in board["templating"]["list"]
                if v["type"] == "query"]
    problems = [(title, p) for title, q in queries
                for p in ev.unknown_references(q, _known_downsampled())]
    assert problems == [] and len(queries) >= 8
    for title, query in queries:
        expanded = ev.grafana_expand(query, 365 * 86400, variables)
        assert not ev.leftovers(expanded) and f'"{LONG_RP}".' in expanded, title
        assert ev.run(server, db, expanded), f"{title}: no series from {expanded}"


def test_the_chronograf_history_board_answers_as_the_grafana_one(
    downsampled: tuple[InfluxServer, str, list[Any], int],
) -> None:
    server, db, _, _ = downsampled
    title, year = "Devices fail-slow in the range", 365 * 86400
    grafana = ev.table(ev.run(server, db, ev.grafana_expand(
        _history_target(title), year, {"host": list(data.HOSTS), "device": ["sda", "nvme0n1"]})))
    board = ev.generated("downsampling", "chronograf", "diskprobe-history.json")["dashboard"]
    (host,) = [t["query"] for t in board["templates"] if t["tempVar"] == ":host:"]
    hosts = ev.tag_values(server, db, host["influxql"].replace(":database:", f'"{db}"')
                          .replace(":measurement:", f'"{host["measurement"]}"')
                          .replace(":tagKey:", f'"{host["tagKey"]}"'))
    assert f'"{LONG_RP}".' in host["influxql"] and hosts == sorted(data.HOSTS)
    (query,) = ev.chronograf_queries("../downsampling/chronograf/diskprobe-history.json",
                                     title, db)
    assert f'"{db}"."{LONG_RP}"."diskprobe_io"' in query
    chronograf = [row for name in hosts for row in ev.table(ev.run(
        server, db, ev.chronograf_expand(query, year, {":host:": f"'{name}'", ":device:": ".*"})))]
    def rows(table: list[dict[str, Any]]) -> list[str]:  # "time" is each range's start
        return sorted(str({k: v for k, v in row.items() if k != "time"}) for row in table)

    assert grafana and rows(chronograf) == rows(grafana)


def test_the_storage_benchmark_runs_in_quick_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """Only that it works: the figures themselves are the benchmark's to print."""
    if find_influxd() is None:
        skip_or_fail("influxd (InfluxDB 1.x) is not on PATH; install the influxdb package")
    sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))
    import bench_downsampling_storage as bench

    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    raw, low = (float(x) for x in re.findall(r"raw \(autogen\) ([\d.]+) MB, downsampled "
                                             r"\(diskprobe_1y\) ([\d.]+) MB", out)[0])
    assert raw > 0 and low > 0 and "per host per year" in out
