"""Grafana dashboard JSON (schemaVersion 39, Grafana 9.1+), importable through the UI.

Panels use the data source `${DS_INFLUXDB}`: the import dialog asks for it (`__inputs`), and a
data source variable of the same name resolves it when the file is provisioned from disk.
"""

from __future__ import annotations

from typing import Any

from dashgen.grafana_fields import defaults, heatmap_options, overrides
from dashgen.model import Dashboard, Panel, Target, Variable
from dashgen.query import grafana as grafana_flavor
from dashgen.query import render
from dashgen.refs import quote

SCHEMA_VERSION = 39
DATASOURCE = {"type": "influxdb", "uid": "${DS_INFLUXDB}"}
Json = dict[str, Any]


def render_dashboard(board: Dashboard, retention_policy: str = "") -> Json:
    """`retention_policy`: every query and variable reads it (default: the database's)."""
    panels = [_panel(panel, i + 1, pos, retention_policy)
              for i, (panel, pos) in enumerate(_layout(board.panels))]
    return {
        "__inputs": [
            {
                "name": "DS_INFLUXDB",
                "label": "InfluxDB",
                "description": "InfluxQL data source: InfluxDB 1.x, or 2.x/3.x through DBRP",
                "type": "datasource",
                "pluginId": "influxdb",
                "pluginName": "InfluxDB",
            }
        ],
        "__requires": [
            {"type": "grafana", "id": "grafana", "name": "Grafana", "version": "9.1.0"},
            {"type": "datasource", "id": "influxdb", "name": "InfluxDB", "version": "1.0.0"},
            *[
                {"type": "panel", "id": kind, "name": kind, "version": ""}
                for kind in sorted({p.kind for p in board.panels})
            ],
        ],
        "annotations": {"list": []},
        "description": board.description,
        "editable": True,
        "graphTooltip": 1,  # shared crosshair: one time axis across panels
        "links": [
            {
                "type": "dashboards",
                "tags": ["diskprobe"],
                "asDropdown": False,
                "includeVars": True,
                "keepTime": True,
                "title": "diskprobe",
            }
        ],
        "panels": panels,
        "refresh": board.refresh,
        "schemaVersion": SCHEMA_VERSION,
        "tags": ["diskprobe"],
        "templating": {"list": [_datasource_variable(),
                                *(_variable(v, retention_policy) for v in board.variables)]},
        "time": {"from": board.time_from, "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": board.title,
        "uid": board.slug,
        "version": 1,
    }


def _layout(panels: tuple[Panel, ...]) -> list[tuple[Panel, Json]]:
    """Left to right, top to bottom on Grafana's 24-column grid."""
    placed: list[tuple[Panel, Json]] = []
    x = y = row_height = 0
    for panel in panels:
        if x + panel.width > 24:
            x, y, row_height = 0, y + row_height, 0
        placed.append((panel, {"h": panel.height, "w": panel.width, "x": x, "y": y}))
        x += panel.width
        row_height = max(row_height, panel.height)
    return placed


def _datasource_variable() -> Json:
    return {
        "name": "DS_INFLUXDB",
        "label": "Data source",
        "type": "datasource",
        "query": "influxdb",
        "current": {},
        "hide": 0,
        "includeAll": False,
        "multi": False,
        "options": [],
        "refresh": 1,
        "regex": "",
    }


def variable_query(variable: Variable, retention_policy: str = "") -> str:
    source = quote(variable.measurement)
    if retention_policy:
        source = f"{quote(retention_policy)}.{source}"
    depends = [f"{quote(t)} =~ /^${t}$/" for t in variable.depends_on]
    if variable.points_where:
        time_filter = "$timeFilter"
        if variable.points_range:
            time_filter = f"time > now() - {variable.points_range}"
        return (f"SELECT {quote(variable.tag)}, {quote(variable.points_field)} FROM {source} "
                f"WHERE " + " AND ".join([time_filter, *depends, variable.points_where]))
    text = f"SHOW TAG VALUES FROM {source} WITH KEY = {quote(variable.tag)}"
    if depends:
        text += " WHERE " + " AND ".join(depends)
    return text


def _variable(variable: Variable, retention_policy: str) -> Json:
    query = variable_query(variable, retention_policy)
    answer: Json = {
        "name": variable.variable,
        "label": variable.variable,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": query,
        "current": {},
        "hide": 2 if variable.points_where else 0,
        "includeAll": variable.multi and variable.offers_all,
        "multi": variable.multi,
        "options": [],
        "refresh": 2,  # on time range change: new devices and drives appear
        "regex": "",
        "skipUrlSync": False,
        "sort": 1,
    }
    if answer["includeAll"] and not variable.points_where:
        # Grafana's default "All" is a regex listing every value: 8,800 serials at 1,000 hosts.
        # (A points_where variable's "All" is that list: the few values matching.)
        answer["allValue"] = ".*"
    return answer


def _target(target: Target, ref_id: str, table: bool, retention_policy: str) -> Json:
    return {
        "refId": ref_id,
        "datasource": DATASOURCE,
        "query": render(target.select, grafana_flavor(retention_policy)),
        "rawQuery": True,
        "resultFormat": "table" if table else "time_series",
        "alias": "" if table else target.legend,
    }


def _panel(panel: Panel, panel_id: int, grid: Json, retention_policy: str) -> Json:
    table = panel.kind == "table"
    out: Json = {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": grid,
        "targets": [
            _target(target, chr(ord("A") + i), table, retention_policy)
            for i, target in enumerate(panel.targets)
        ],
        "fieldConfig": {"defaults": defaults(panel), "overrides": overrides(panel)},
        "options": _options(panel),
    }
    if table:
        out["transformations"] = [{"id": "merge", "options": {}}]
    if panel.repeat:
        out.update({"repeat": panel.repeat, "repeatDirection": "v", "maxPerRow": 1})
    if panel.time_from:
        out["timeFrom"] = panel.time_from
    if panel.min_interval:
        out["interval"] = panel.min_interval
    return out


def _options(panel: Panel) -> Json:
    if panel.kind == "table":
        titles = {column.name: column.title or column.name for column in panel.columns}
        then = panel.sort_desc if panel.then_desc is None else panel.then_desc
        sort = [{"displayName": titles[name], "desc": panel.sort_desc if i == 0 else then}
                for i, name in enumerate((panel.sort_by, *panel.then_by)) if panel.sort_by]
        return {"showHeader": True, "cellHeight": "sm", "sortBy": sort}
    if panel.kind == "heatmap":
        return heatmap_options(panel)
    legend = {"displayMode": "table", "placement": "bottom", "showLegend": True,
              "calcs": ["mean", "max", "lastNotNull"]}
    if panel.kind == "state-timeline":
        return {"legend": {**legend, "calcs": []}, "mergeValues": True, "showValue": "auto",
                "alignValue": "left", "rowHeight": 0.9, "tooltip": {"mode": "single"}}
    return {"legend": legend, "tooltip": {"mode": "multi", "sort": "desc"}}
