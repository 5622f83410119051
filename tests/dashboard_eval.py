"""Run generated queries the way Grafana, Chronograf and Kapacitor would, and judge alerts.

Template expansion follows the tools' own rules: Grafana's InfluxDB data source formats a
multi-value variable in a regex as `(a|b)` with regex characters escaped, and its alerting
backend renders `$timeFilter` as `time > <from>ms and time < <to>ms`; Chronograf replaces
`:dashboardTime:`/`:upperDashboardTime:`/`:interval:` and quotes tag-value templates
(ui/src/tempVars/utils/replace.ts); Kapacitor ANDs `time >= start AND time < stop` onto a
batch query's outer WHERE and adds the .groupBy() tags (query.go). Thresholds are Grafana's
threshold expression (gt, lt, within_range, outside_range); TICKscript lambdas are evaluated
by a tiny interpreter that accepts only comparisons and AND/OR.

Size: the three tools' expansion rules and the schema reference check in one place, as the
tests use them together.
"""

from __future__ import annotations

import ast
import datetime
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard_data import Row
from diskprobe.metric import Metric
from diskprobe.serializers.influx import InfluxSerializer

from influxdb_server import InfluxServer

Series = dict[str, Any]
DASHBOARDS = Path(__file__).resolve().parent.parent / "dashboards"

_REGEX_SPECIAL = re.compile(r"[\\^$*+?.()|\[\]{}/]")
_LEFTOVER = re.compile(r"\$[A-Za-z_{]|:[A-Za-z]+:")


def write_rows(server: InfluxServer, db: str, rows: list[Row], now_ns: int) -> None:
    metrics = [Metric(r.measurement, r.tags, r.fields, now_ns + r.offset_ns) for r in rows]
    status, text = server.write(db, InfluxSerializer().serialize(metrics).encode())
    assert status == 204, text


def run(server: InfluxServer, db: str, query: str) -> list[Series]:
    """The series of a one-statement query (raises InfluxError on any error)."""
    (result,) = server.query(db, query)
    series: list[Series] = result.get("series", [])
    return series


def table(series: list[Series]) -> list[dict[str, Any]]:
    """One dict per row of a table query: its tags, its columns and its time."""
    return [{**s["tags"], **dict(zip(s["columns"], values))}
            for s in series for values in s["values"]]


def generated(*parts: str) -> Any:
    """A generated JSON file under dashboards/ ("grafana", "diskprobe-io.json")."""
    return json.loads(DASHBOARDS.joinpath(*parts).read_text(encoding="utf-8"))


def grafana_panel(board: str, title: str) -> tuple[dict[str, Any], int]:
    """The Grafana panel and its dashboard's time range in seconds."""
    loaded = generated("grafana", board)
    (panel,) = [p for p in loaded["panels"] if p["title"] == title]
    return panel, relative_seconds(loaded["time"]["from"])


def chronograf_queries(board: str, title: str, db: str) -> list[str]:
    """The queries of a Chronograf cell, reading database `db`."""
    cells = generated("chronograf", board)["dashboard"]["cells"]
    (cell,) = [c for c in cells if c["name"] == title]
    return [q["query"].replace('"telegraf".', f'"{db}".') for q in cell["queries"]]


def tag_values(server: InfluxServer, db: str, query: str) -> list[str]:
    return sorted({values[1] for s in run(server, db, query) for values in s["values"]})


def leftovers(query: str) -> list[str]:
    """Template syntax that survived expansion (none may)."""
    return _LEFTOVER.findall(re.sub(r"'[^']*'", "''", query))


# -- Grafana ---------------------------------------------------------------------------------

def relative_seconds(time_from: str) -> int:
    match = re.fullmatch(r"now-(\d+)([smhd])", time_from)
    assert match, time_from
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


# A variable's "All" as Grafana holds it; sent as the variable's allValue, which the
# generated boards set to ".*" (tests/test_dashboards.py holds them to it).
ALL = "$__all"
ALL_VALUE = ".*"


def panel_seconds(panel: dict[str, Any], board_seconds: int) -> int:
    """The range a Grafana panel reads: its own timeFrom ("1d"), else the board's."""
    return relative_seconds(f"now-{panel['timeFrom']}") if "timeFrom" in panel else board_seconds


def panel_min_interval(panel: dict[str, Any]) -> int:
    """A Grafana panel's min interval ("interval": "1m") in seconds, 0 when it has none."""
    return duration_ns(panel["interval"]) // 10**9 if "interval" in panel else 0


def grafana_regex(values: list[str]) -> str:
    if values == [ALL]:
        return ALL_VALUE
    escaped = [_REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), v) for v in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def grafana_expand(query: str, range_seconds: int, variables: dict[str, list[str]],
                   min_interval_s: int = 0) -> str:
    """A dashboard query as Grafana sends it for a relative range ending now; `$__interval`
    at least the panel's min interval (panel_min_interval)."""
    text = query.replace("$timeFilter", f"time >= now() - {range_seconds}s and time <= now()")
    text = text.replace("$__interval", f"{max(1, range_seconds // 1000, min_interval_s)}s")
    for name in sorted(variables, key=len, reverse=True):
        text = text.replace(f"${name}", grafana_regex(variables[name]))
    return text


def grafana_alert_query(query: str, relative: dict[str, int], now_ms: int) -> str:
    start, stop = now_ms - relative["from"] * 1000, now_ms - relative["to"] * 1000
    return query.replace("$timeFilter", f"time > {start}ms and time < {stop}ms")


def threshold(op: str, params: list[float], value: float) -> bool:
    if op == "gt":
        return value > params[0]
    if op == "lt":
        return value < params[0]
    if op == "within_range":
        return params[0] < value < params[1]
    if op == "outside_range":
        return value < params[0] or value > params[1]
    raise ValueError(op)


def reduce_last(series: Series, column: str = "value") -> float | None:
    """Grafana's reduce(last) in dropNN mode: the last non-null number. A boolean counts as
    1 or 0 (bool is an int here), as Grafana's expressions convert it (grafana#34996)."""
    index = series["columns"].index(column)
    numbers = [row[index] for row in series["values"] if isinstance(row[index], (int, float))]
    return float(numbers[-1]) if numbers else None


# -- Chronograf ------------------------------------------------------------------------------

def chronograf_expand(query: str, range_seconds: int, values: dict[str, str]) -> str:
    """`values`: tempVar -> the text Chronograf substitutes (tag values already quoted)."""
    text = query.replace(":dashboardTime:", f"now() - {range_seconds}s")
    text = text.replace(":upperDashboardTime:", "now()")
    text = text.replace(":interval:", f"{max(1000, range_seconds * 1000 // 1000)}ms")
    for var, value in values.items():
        text = text.replace(var, value)
    return text


def template_values(template: dict[str, Any]) -> list[str]:
    return [v["value"] for v in template.get("values", [])]


# -- Kapacitor -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tick:
    dbrp: tuple[str, str]
    query: str
    period: str
    every: str
    group_by: tuple[str, ...]
    levels: dict[str, str]  # "warn"/"crit" -> lambda expression


def parse_tick(text: str) -> Tick:
    def one(pattern: str) -> str:
        found = re.findall(pattern, text, re.S)
        assert len(found) == 1, (pattern, found)
        return str(found[0])

    dbrp = re.fullmatch(r'"([^"]+)"\."([^"]+)"', one(r"dbrp (\S+)"))
    assert dbrp, "dbrp statement"
    group_by = tuple(re.findall(r"'([^']+)'", one(r"\.groupBy\(([^)]*)\)")))
    levels = dict(re.findall(r"\.(warn|crit)\(lambda: (.+?)\)\n", text))
    return Tick((dbrp.group(1), dbrp.group(2)), one(r"\|query\('''(.*?)'''\)"),
                one(r"\.period\((\w+)\)"), one(r"\.every\((\w+)\)"), group_by, levels)


def _depths(query: str) -> list[int]:
    """Parenthesis depth at each character, quotes respected (-1 inside a quoted string)."""
    depths, depth, quote = [], 0, ""
    for char in query:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        depths.append(-1 if quote else depth)
    return depths


def _top_level_where(query: str) -> int:
    depths = _depths(query)
    return next((i for i in range(len(query))
                 if depths[i] == 0 and query.startswith(" WHERE ", i)), -1)


def _rfc3339(ns: int) -> str:
    moment = datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9:09d}Z"


def duration_ns(text: str) -> int:
    match = re.fullmatch(r"(\d+)([smhd])", text)
    assert match, text
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)] * 10**9


def kapacitor_statement(tick: Tick, database: str, now_ns: int) -> str:
    """The statement Kapacitor sends for one batch run ending at `now_ns` (a subquery's
    `now()` is that moment too: data back-filled before the wall clock is read as it was)."""
    db, rp = tick.dbrp
    query = tick.query.replace(f'"{db}"."{rp}".', f'"{database}"."{rp}".')
    query = query.replace("now()", f"'{_rfc3339(now_ns)}'")
    depths = _depths(query)
    outer = "".join(c for c, d in zip(query, depths) if d == 0)
    assert " GROUP BY " not in outer, "Kapacitor sets GROUP BY from .groupBy()"
    start = now_ns - duration_ns(tick.period)
    window = f"time >= '{_rfc3339(start)}' AND time < '{_rfc3339(now_ns)}'"
    where = _top_level_where(query)
    if where >= 0:
        query = query[:where] + " WHERE (" + query[where + len(" WHERE "):] + ") AND " + window
    else:
        query += " WHERE " + window
    return query + " GROUP BY " + ", ".join(f'"{tag}"' for tag in tick.group_by)


_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.Gt, ast.Lt, ast.GtE,
            ast.LtE, ast.Eq, ast.NotEq, ast.Name, ast.Load, ast.Constant, ast.UnaryOp, ast.USub)


def tick_lambda(expression: str, value: float | bool) -> bool:
    """A TICKscript lambda over "value" (comparisons, AND, OR, TRUE, FALSE), evaluated for
    `value`. Kapacitor compares a boolean only with a boolean: anything else is an error."""
    python = expression.replace('"value"', "value").replace(" AND ", " and ")
    literal = re.search(r"\b(?:TRUE|FALSE)\b", python) is not None
    if literal != isinstance(value, bool):
        raise TypeError(f"Kapacitor cannot evaluate {expression} for {value!r}")
    python = re.sub(r"\bTRUE\b", "True", re.sub(r"\bFALSE\b", "False", python))
    tree = ast.parse(python.replace(" OR ", " or "), mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED) or (isinstance(node, ast.Name) and node.id != "value"):
            raise ValueError(f"unsupported TICKscript lambda: {expression}")
    return bool(eval(compile(tree, "<tick>", "eval"), {"__builtins__": {}}, {"value": value}))


def kapacitor_level(tick: Tick, series: Series) -> str:
    """Kapacitor's alert level for one group: the highest level any of its points reaches."""
    index = series["columns"].index("value")
    level = ""
    for row in series["values"]:
        value = row[index]
        if not isinstance(value, (int, float)):
            continue
        if "crit" in tick.levels and tick_lambda(tick.levels["crit"], value):
            return "critical"
        if "warn" in tick.levels and tick_lambda(tick.levels["warn"], value):
            level = "warning"
    return level


# -- schema references -----------------------------------------------------------------------

_STRING = re.compile(r"'(?:[^'\\]|\\.)*'")
# A regex literal follows =~ or !~ ("device" =~ /^sd/); any other slash divides
# (last("power_on_hours") / 24), and must not swallow the text up to the next regex.
_REGEX = re.compile(r"([=!]~\s*)/(?:[^/\\\n]|\\.)*/")
_SOURCE = re.compile(r'FROM\s+((?:"[^"]+"\.)*"([^"]+)")')
_ALIAS = re.compile(r'\bAS\s+"([^"]+)"')
_IDENT = re.compile(r'"([^"]+)"')


@dataclass(frozen=True)
class Known:
    fields: dict[str, set[str]]  # measurement -> fields
    tags: dict[str, set[str]]  # measurement -> tags


def unknown_references(query: str, known: Known) -> list[str]:
    """Measurements, fields and tags in `query` that `known` does not have."""
    text = _REGEX.sub(r"\1//", _STRING.sub("''", query))
    problems: list[str] = []
    measurements = [m.group(2) for m in _SOURCE.finditer(text)]
    for name in measurements:
        if name not in known.fields:
            problems.append(f"unknown measurement {name!r}")
    aliases = set(_ALIAS.findall(text))
    rest = _SOURCE.sub("", _ALIAS.sub("", text))
    if text.startswith("SHOW TAG VALUES"):
        for ident in _IDENT.findall(rest):
            if not any(ident in known.tags.get(m, set()) for m in measurements):
                problems.append(f"{measurements}: unknown tag {ident!r}")
        return problems
    for ident in _IDENT.findall(rest):
        if ident in aliases:
            continue  # a subquery's column
        if not any(ident in known.fields.get(m, set()) | known.tags.get(m, set())
                   for m in measurements):
            problems.append(f"{measurements}: unknown field or tag {ident!r}")
    return problems


def grafana_order(panel: dict[str, Any], table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as Grafana's table sorts them: options.sortBy, first key first. An empty cell
    sorts below every number (Grafana's table sorts it as -Infinity)."""
    names = {p["value"]: o["matcher"]["options"] for o in panel["fieldConfig"]["overrides"]
             for p in o["properties"] if p["id"] == "displayName"}
    ordered = list(table)
    for key in reversed(panel["options"]["sortBy"]):  # stable sorts, last key first
        column = names[key["displayName"]]
        ordered.sort(key=lambda row: -math.inf if row[column] is None else row[column],
                     reverse=key["desc"])
    return ordered
