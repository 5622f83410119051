"""Chronograf dashboard JSON in the format of its export/import ({"meta", "dashboard"}).

Chronograf templates are single-valued: `:host:` is chosen from SHOW TAG VALUES; device, path
and serial are free-text regexes defaulting to `.*` (Chronograf has no multi-select or "All"),
and so is `:host:` on a board that opens on every host (model.Variable.chronograf_all).
Queries name `"telegraf"."autogen".<measurement>` (Chronograf proxies raw queries without a
default database); generate with --database to change it.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from dashgen.model import Dashboard, Panel, Variable
from dashgen.query import Flavor, render
from dashgen.refs import chronograf_axis

CHRONOGRAF_VERSION = "1.10.0"
CELL_TYPES = {"timeseries": "line", "table": "table", "state-timeline": "line-stepplot",
              "bar": "bar"}  # a Grafana heatmap has bar cells in Chronograf (no heatmap)
NAMESPACE = uuid.UUID("6f1c2c3e-3a5b-4c8e-9d2a-64697370726f")  # fixed: ids stay stable

Json = dict[str, Any]


def _id(*parts: str) -> str:
    return str(uuid.uuid5(NAMESPACE, "/".join(parts)))


def _board_flavor(board: Dashboard, flavor: Flavor) -> Flavor:
    """`flavor` without the exact tags whose variable opens on every value on this board."""
    every_value = {variable.tag for variable in board.variables if variable.chronograf_all}
    return replace(flavor, exact_vars=tuple(tag for tag in flavor.exact_vars
                                            if tag not in every_value))


def render_dashboard(board: Dashboard, flavor: Flavor) -> Json:
    flavor = _board_flavor(board, flavor)
    cells: list[Json] = []
    x = y = row_height = 0
    for panel in board.panels:
        for cell in panel.chronograf_cells or (panel,):
            width, height = max(cell.width // 2, 3), max(cell.height // 2, 3)
            if x + width > 12:
                x, y, row_height = 0, y + row_height, 0
            cells.append(_cell(board, cell, flavor, {"x": x, "y": y, "w": width, "h": height}))
            x += width
            row_height = max(row_height, height)
    return {
        "meta": {"chronografVersion": CHRONOGRAF_VERSION, "sources": {}},
        "dashboard": {
            "id": 0,
            "name": board.title,
            "organization": "default",
            "cells": cells,
            "templates": [_template(board, v, flavor) for v in board.variables
                          if not v.points_where],
        },
    }


def template_query(variable: Variable, flavor: Flavor) -> Json:
    if variable.tag in flavor.exact_vars:
        # Another retention policy than the default: its tag values (a host gone from the raw
        # data is still in the downsampled year), as Chronograf fills in the rest.
        source = ":measurement:"
        if flavor.retention_policy != "autogen":
            source = f'"{flavor.retention_policy}".:measurement:'
        return {
            "influxql": f"SHOW TAG VALUES ON :database: FROM {source} WITH KEY=:tagKey:",
            "db": flavor.database,
            "measurement": variable.measurement,
            "tagKey": variable.tag,
            "fieldKey": "",
        }
    return {}


def _template(board: Dashboard, variable: Variable, flavor: Flavor) -> Json:
    if variable.tag in flavor.exact_vars:
        return {
            "tempVar": f":{variable.tag}:",
            "id": _id(board.slug, "template", variable.tag),
            "type": "tagValues",
            "label": f"{variable.tag} (from {variable.measurement})",
            "values": [],
            "query": template_query(variable, flavor),
        }
    return {
        "tempVar": f":{variable.tag}:",
        "id": _id(board.slug, "template", variable.tag),
        "type": "text",
        "label": f"{variable.tag} regex",
        "values": [{"value": ".*", "type": "constant", "selected": True, "localSelected": True}],
    }


def _axis(unit: str, label: str = "") -> Json:
    suffix, base = chronograf_axis(unit)
    return {"bounds": ["", ""], "label": label, "prefix": "", "suffix": suffix, "base": base,
            "scale": "linear"}


def _cell(board: Dashboard, panel: Panel, flavor: Flavor, grid: Json) -> Json:
    if panel.time_from:
        flavor = replace(flavor, fixed_range=panel.time_from)
    queries = []
    for target in panel.targets:
        text = render(target.select, flavor)
        queries.append(
            {
                "query": text,
                "queryConfig": {
                    "database": "", "measurement": "", "retentionPolicy": "", "fields": [],
                    "tags": {}, "groupBy": {"time": "", "tags": []}, "areTagsAccepted": False,
                    "rawText": text, "range": None, "shifts": None,
                },
                "source": "",
                "type": "influxql",
            }
        )
    field_options = [
        {"internalName": c.name, "displayName": _column_title(c.title or c.name, c.unit),
         "visible": True, "direction": "", "tempVar": ""}
        for c in panel.columns
    ]
    sort_by = panel.sort_by or "time"
    return {
        "i": _id(board.slug, panel.title),
        **grid,
        "name": panel.title,
        "queries": queries,
        "axes": {"x": _axis(""), "y": _axis(panel.unit), "y2": _axis("")},
        "type": CELL_TYPES[panel.kind],
        "colors": [],
        "legend": {},
        "tableOptions": {
            "verticalTimeAxis": True,
            "sortBy": {"internalName": sort_by, "displayName": "", "visible": True,
                       "direction": "desc" if panel.sort_desc else "asc", "tempVar": ""},
            "wrapping": "truncate",
            "fixFirstColumn": True,
        },
        "fieldOptions": field_options,
        "timeFormat": "YYYY-MM-DD HH:mm:ss",
        "decimalPlaces": {"isEnforced": True, "digits": 2},
        "note": panel.description,
        "noteVisibility": "default",
    }


def _column_title(title: str, unit: str) -> str:
    suffix = chronograf_axis(unit)[0].strip()
    return f"{title} ({suffix})" if suffix else title
