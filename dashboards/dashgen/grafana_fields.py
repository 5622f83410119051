"""Grafana field config: units, value mappings, threshold colours and lines, per panel and
per table column (split from grafana.py, which lays out the dashboard)."""

from __future__ import annotations

from typing import Any

from dashgen.model import Column, Panel
from dashgen.refs import grafana_unit

Json = dict[str, Any]

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


def defaults(panel: Panel) -> Json:
    defaults: Json = {"unit": grafana_unit(panel.unit)}
    if panel.verdict_mapping and panel.kind != "table":  # tables: on their verdict columns
        defaults["mappings"] = VERDICT_MAPPINGS
        defaults["min"], defaults["max"] = 0, 2
    if panel.states and panel.kind != "table":  # tables: on their columns (Column.states)
        defaults["mappings"] = state_mappings(panel.states)
        defaults["color"] = {"mode": "thresholds"}  # the mappings' colours, not a palette
    if panel.kind == "heatmap":
        defaults["custom"] = {"scaleDistribution": {"type": "linear"},
                              "hideFrom": {"legend": False, "tooltip": False, "viz": False}}
    if panel.kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0,
                              "showPoints": "never", "spanNulls": False}
        if panel.threshold is not None:
            # Grafana draws a line at every step but the base one (which has no value).
            defaults["thresholds"] = {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "red", "value": panel.threshold}]}
            defaults["custom"]["thresholdsStyle"] = {"mode": "dashed"}
    return defaults


def _column(panel: Panel, column: Column) -> list[Json]:
    properties: list[Json] = [{"id": "unit", "value": grafana_unit(column.unit)}]
    if column.title:
        properties.append({"id": "displayName", "value": column.title})
    if column.steps:
        properties += _steps(column.steps)
    verdicts = {"verdict_code": VERDICT_MAPPINGS, "verdict": VERDICT_TEXT_MAPPINGS}
    if panel.verdict_mapping and column.name in verdicts:
        mappings = verdicts[column.name]
    elif column.states:
        mappings = state_mappings(column.states)
    else:
        return properties
    cells = {"type": "color-background"}
    return [*properties, {"id": "mappings", "value": mappings},
            {"id": "custom.cellOptions", "value": cells}]


def state_mappings(states: tuple[tuple[str, str, str], ...]) -> list[Json]:
    """Value mappings from (value, text, colour): a boolean matches as "true" or "false"."""
    options = {value: {"text": text, "color": colour, "index": index}
               for index, (value, text, colour) in enumerate(states)}
    return [{"type": "value", "options": options}]


def overrides(panel: Panel) -> list[Json]:
    overrides: list[Json] = [
        {"matcher": {"id": "byName", "options": column.name},
         "properties": _column(panel, column)}
        for column in panel.columns
    ]
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


def heatmap_options(panel: Panel) -> Json:
    """Grafana 9.1+'s heatmap of one series per bucket, each named by its upper bound (the
    query's alias, `$tag_le`): no calculation, rows laid out as upper bounds ("le"); Grafana
    sorts the series by the number their name parses as ("+Inf" last)."""
    return {
        "calculate": False,
        "rowsFrame": {"layout": "le"},
        "yAxis": {"axisPlacement": "left", "unit": grafana_unit(panel.rows_unit),
                  "reverse": False},
        "cellValues": {"unit": grafana_unit(panel.unit)},
        "cellGap": 1,
        "filterValues": {"le": 1e-9},  # empty cells stay transparent
        "color": {"mode": "scheme", "scheme": "Oranges", "fill": "dark-orange",
                  "scale": "exponential", "exponent": 0.5, "steps": 64, "reverse": False},
        "showValue": "never",
        "tooltip": {"show": True, "yHistogram": True},
        "legend": {"show": True},
        "exemplars": {"color": "rgba(255,0,255,0.7)"},
    }
