"""Every query of the generated dashboards and alerts, expanded as the tools send them
(tests/dashboard_eval.py), over each dashboard's default range ending at the simulation's
anchor, and timed warm.

- Grafana (dashboards/grafana/*.json): template variables first (their SHOW TAG VALUES
  queries are timed too), each set as it loads by default: "All" where the variable offers
  it (Grafana then sends every value as one regex, `(a|b|...)`, having no custom all value),
  else the first value; a retention-policy variable (`$rp`, another helper's work) is set to
  "autogen". `$timeFilter` is Grafana's absolute form, `time >= <from>ms and time <= <to>ms`.
- Chronograf (dashboards/chronograf/*.json): `:host:` one host (tag values are a single
  select), text variables their constant, `:rp:` autogen; the range is the Grafana board's of
  the same name (Chronograf keeps no range in the export), absolute RFC 3339 bounds.
- Alerts: every Grafana rule's data queries (grafana_alert_query) and every TICKscript's
  batch statement (kapacitor_statement), both ending at the anchor.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

import dashboard_eval as ev

from influxdb_server import InfluxServer, quote_string

DASHBOARDS = ev.DASHBOARDS
RP = "autogen"
LONG_S = 10.0  # a query whose warming run took this long is not run again


@dataclass
class Query:
    name: str  # "grafana/diskprobe-fleet: Drives to replace, worst first [A]"
    text: str
    spans_hosts: bool
    timings: list[float] = field(default_factory=list)
    rows: int = 0
    error: str = ""
    timed_out: bool = False

    @property
    def median(self) -> float:
        return statistics.median(self.timings) if self.timings else float("nan")


def rfc3339(ns: int) -> str:
    return ev._rfc3339(ns)


def _rows(series: list[ev.Series]) -> int:
    return sum(len(s.get("values", [])) for s in series)


def grafana_queries(server: InfluxServer, db: str, anchor_ns: int, boards: str = "*",
                    seconds_override: int = 0, rp: str = RP,
                    prefer: dict[str, str] | None = None) -> list[Query]:
    """Every query of the boards (glob), over their default range (or `seconds_override`),
    reading retention policy `rp` (through `$rp` where the board has it, else by naming it
    in FROM). `prefer`: the value of a single-value variable, if it is among its values."""
    out: list[Query] = []
    for path in sorted((DASHBOARDS / "grafana").glob(f"{boards}.json")):
        board = ev.generated("grafana", path.name)
        seconds = seconds_override or ev.relative_seconds(board["time"]["from"])
        variables: dict[str, list[str]] = {"rp": [rp]}
        for template in board.get("templating", {}).get("list", []):
            if template.get("type") != "query" or template["name"] == "rp":
                continue  # the retention policy stays `rp`, whatever the board offers
            text = ev.grafana_expand(template["query"], seconds, variables)
            text = text.replace("now()", f"{anchor_ns // 10**6}ms")  # the simulation's now
            query = Query(f"grafana/{path.stem}: variable ${template['name']}", text, True)
            out.append(query)
            values = ev.tag_values(server, db, text)
            wanted = (prefer or {}).get(template["name"], "")
            if template.get("includeAll"):  # Grafana opens on "All", sent as its allValue
                if "allValue" in template:
                    assert template["allValue"] == ev.ALL_VALUE, template["name"]
                    variables[template["name"]] = [ev.ALL]
                else:  # a hidden list of a few values (the drives at risk), sent as a regex
                    variables[template["name"]] = values or ["none"]
            else:  # Grafana's default is the first; a drive with a history is more telling
                chosen = [wanted] if wanted in values else values[:1]
                variables[template["name"]] = chosen or ["none"]
        for panel in board["panels"]:
            own = ev.panel_seconds(panel, seconds_override or seconds)  # its own range first
            window = (f"time >= {(anchor_ns // 10**6) - own * 1000}ms and "
                      f"time <= {anchor_ns // 10**6}ms")
            for target in panel.get("targets", []):
                raw = target["query"].replace("$timeFilter", window)
                if rp != RP and "$rp" not in raw:
                    raw = re.sub(r'FROM "(diskprobe_[a-z_]+)"', rf'FROM "{rp}"."\1"', raw)
                text = ev.grafana_expand(raw, own, variables, ev.panel_min_interval(panel))
                name = f"grafana/{path.stem}: {panel['title']} [{target.get('refId', '')}]"
                out.append(Query(name, text, '"host" =~' in text))
    return out


def chronograf_queries(db: str, anchor_ns: int, host: str) -> list[Query]:
    out: list[Query] = []
    for path in sorted((DASHBOARDS / "chronograf").glob("*.json")):
        board = ev.generated("chronograf", path.name)["dashboard"]
        seconds = ev.relative_seconds(ev.generated("grafana", path.name)["time"]["from"])
        values = {":rp:": RP, ":database:": db}
        for template in board.get("templates", []):
            if template["tempVar"] == ":host:" and template["type"] == "tagValues":
                values[":host:"] = quote_string(host)  # one value picked: the host asked for
            elif template["tempVar"] not in values:  # a regex (the health board's `:host:`
                values[template["tempVar"]] = ev.template_values(template)[0]  # too): `.*`
        for number, cell in enumerate(board["cells"]):
            for query in cell["queries"]:
                raw = query["query"].replace('"telegraf".', f'"{db}".')
                raw = raw.replace(":upperDashboardTime:", f"'{rfc3339(anchor_ns)}'")
                raw = raw.replace(":dashboardTime:", f"'{rfc3339(anchor_ns - seconds * 10**9)}'")
                raw = raw.replace("now()", f"'{rfc3339(anchor_ns)}'")  # a cell's own range
                text = ev.chronograf_expand(raw, seconds, values)
                out.append(Query(f"chronograf/{path.stem}: {cell['name']} #{number}", text,
                                 False))
    return out


def grafana_rules() -> list[dict[str, Any]]:
    loaded = yaml.safe_load((DASHBOARDS / "alerts" / "grafana-alerts.yaml").read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


def alert_queries(db: str, anchor_ns: int) -> list[Query]:
    out: list[Query] = []
    for rule in grafana_rules():
        for node in rule["data"]:
            if node["datasourceUid"] == "__expr__":
                continue
            text = ev.grafana_alert_query(node["model"]["query"], node["relativeTimeRange"],
                                          anchor_ns // 10**6 + 1)
            out.append(Query(f"alert/grafana {rule['uid']} [{node['refId']}]", text, True))
    for path in sorted((DASHBOARDS / "alerts" / "kapacitor").glob("*.tick")):
        tick = ev.parse_tick(path.read_text(encoding="utf-8"))
        text = ev.kapacitor_statement(tick, db, anchor_ns + 10**6)
        out.append(Query(f"alert/kapacitor {path.stem}", text, True))
    return out


def run_timed(server: InfluxServer, db: str, query: Query, repeats: int,
              clock: Callable[[], float] = time.perf_counter) -> None:
    """Once to warm, then `repeats` timed runs (none if warming took over LONG_S: that run's
    time is the figure, saving minutes at 1,000 hosts). A
    query cut off by the HTTP timeout (influxdb_server.HTTP_TIMEOUT_SEC; InfluxDB aborts a
    query whose client went away) gets that timeout as its time and `timed_out`."""
    leftover = ev.leftovers(query.text)
    if leftover:
        query.error = f"unexpanded {leftover}"
        return
    started = clock()
    try:
        query.rows = _rows(ev.run(server, db, query.text))
        if clock() - started > LONG_S:  # at that cost warm or cold hardly differ
            query.timings.append(clock() - started)
            return
        for _ in range(repeats):
            started = clock()
            ev.run(server, db, query.text)
            query.timings.append(clock() - started)
    except Exception as error:  # any failure is reported per query; the bench goes on
        if "timed out" in str(error):
            query.timed_out = True
            query.timings = [clock() - started]
        else:
            query.error = str(error)[:300]


def dump(queries: list[Query], path: Path) -> None:
    lines = [f"{q.name}\t{q.median:.4f}\t{q.rows}\t{q.error}\t{q.text}" for q in queries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
