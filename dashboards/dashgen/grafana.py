"""Grafana dashboard JSON (schemaVersion 39, Grafana 9.1+), importable through the UI.

Panels use the data source `${DS_INFLUXDB}`: the import dialog asks for it (`__inputs`), and a
data source variable of the same name resolves it when the file is provisioned from disk.
"""

from __future__ import annotations

from typing import Any

from dashgen.model import Dashboard, Panel, Target, Variable
from dashgen.query import grafana as grafana_flavor
from dashgen.query import render
from dashgen.refs import grafana_unit, quote

SCHEMA_VERSION = 39
DATASOURCE = {"type": "influxdb", "uid": "${DS_INFLUXDB}"}
VERDICT_MAPPINGS = [
    {
        "type": "value",
        "options": {
            "0": {"text": "ok", "color": "green", "index": 0},
            "1": {"text": "warn", "color": "orange", "index": 1},
            "2": {"text": "fail", "color": "red", "index": 2},
        },
    }
]
VERDICT_TEXT_MAPPINGS = [
    {
        "type": "value",
        "options": {
            "ok": {"color": "green", "index": 0},
            "warn": {"color": "orange", "index": 1},
            "fail": {"color": "red", "index": 2},
        },
    }
]

Json = dict[str, Any]


def render_dashboard(board: Dashboard) -> Json:
    panels = [_panel(panel, i + 1, pos) for i, (panel, pos) in enumerate(_layout(board.panels))]
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
        "templating": {"list": [_datasource_variable(), *map(_variable, board.variables)]},
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


def variable_query(variable: Variable) -> str:
    text = f"SHOW TAG VALUES FROM {quote(variable.measurement)} WITH KEY = {quote(variable.tag)}"
    if variable.depends_on:
        text += " WHERE " + " AND ".join(f"{quote(t)} =~ /^${t}$/" for t in variable.depends_on)
    return text


def _variable(variable: Variable) -> Json:
    query = variable_query(variable)
    return {
        "name": variable.tag,
        "label": variable.tag,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": query,
        "current": {},
        "hide": 0,
        "includeAll": variable.multi,
        "multi": variable.multi,
        "options": [],
        "refresh": 2,  # on time range change: new devices and drives appear
        "regex": "",
        "skipUrlSync": False,
        "sort": 1,
    }


def _target(target: Target, ref_id: str, table: bool) -> Json:
    return {
        "refId": ref_id,
        "datasource": DATASOURCE,
        "query": render(target.select, grafana_flavor()),
        "rawQuery": True,
        "resultFormat": "table" if table else "time_series",
        "alias": "" if table else target.legend,
    }


def _panel(panel: Panel, panel_id: int, grid: Json) -> Json:
    table = panel.kind == "table"
    out: Json = {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": grid,
        "targets": [
            _target(target, chr(ord("A") + i), table) for i, target in enumerate(panel.targets)
        ],
        "fieldConfig": {"defaults": _defaults(panel), "overrides": _overrides(panel)},
        "options": _options(panel),
    }
    if table:
        out["transformations"] = [{"id": "merge", "options": {}}]
    if panel.repeat:
        out.update({"repeat": panel.repeat, "repeatDirection": "v", "maxPerRow": 1})
    return out


def _defaults(panel: Panel) -> Json:
    defaults: Json = {"unit": grafana_unit(panel.unit)}
    if panel.verdict_mapping and panel.kind != "table":  # tables: on their verdict columns
        defaults["mappings"] = VERDICT_MAPPINGS
        defaults["min"], defaults["max"] = 0, 2
    if panel.kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0,
                              "showPoints": "never", "spanNulls": False}
    return defaults


def _overrides(panel: Panel) -> list[Json]:
    overrides: list[Json] = []
    for column in panel.columns:
        properties: list[Json] = [{"id": "unit", "value": grafana_unit(column.unit)}]
        if column.title:
            properties.append({"id": "displayName", "value": column.title})
        if column.steps:
            properties += _steps(column.steps)
        mappings = {"verdict_code": VERDICT_MAPPINGS, "verdict": VERDICT_TEXT_MAPPINGS}
        if panel.verdict_mapping and column.name in mappings:
            properties.append({"id": "mappings", "value": mappings[column.name]})
            properties.append(
                {"id": "custom.cellOptions", "value": {"type": "color-background"}}
            )
        overrides.append({"matcher": {"id": "byName", "options": column.name},
                          "properties": properties})
    if panel.right_unit:
        overrides.append(
            {
                "matcher": {"id": "byRegexp", "options": panel.right_match},
                "properties": [
                    {"id": "unit", "value": grafana_unit(panel.right_unit)},
                    {"id": "custom.axisPlacement", "value": "right"},
                    {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
                ],
            }
        )
    return overrides


def _steps(steps: tuple[tuple[float, str], ...]) -> list[Json]:
    """Absolute thresholds colouring the cell's text: green below the first step."""
    base: list[Json] = [{"color": "green", "value": None}]  # Grafana's base step has no value
    thresholds = base + [{"color": colour, "value": value} for value, colour in steps]
    return [
        {"id": "thresholds", "value": {"mode": "absolute", "steps": thresholds}},
        {"id": "custom.cellOptions", "value": {"type": "color-text"}},
    ]


def _options(panel: Panel) -> Json:
    if panel.kind == "table":
        titles = {column.name: column.title or column.name for column in panel.columns}
        sort = [{"displayName": titles[name], "desc": panel.sort_desc}
                for name in (panel.sort_by, *panel.then_by) if panel.sort_by]
        return {"showHeader": True, "cellHeight": "sm", "sortBy": sort}
    legend = {"displayMode": "table", "placement": "bottom", "showLegend": True,
              "calcs": ["mean", "max", "lastNotNull"]}
    if panel.kind == "state-timeline":
        return {"legend": {**legend, "calcs": []}, "mergeValues": True, "showValue": "auto",
                "alignValue": "left", "rowHeight": 0.9, "tooltip": {"mode": "single"}}
    return {"legend": legend, "tooltip": {"mode": "multi", "sort": "desc"}}
