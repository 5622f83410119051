"""Grafana unified alerting file provisioning (apiVersion 1): one rule per alert level.

Each rule is query A (InfluxQL, raw), B = reduce(A, last), C = threshold(B); C is the
condition. Rules read the data source whose uid is `datasource_uid` (provision the InfluxDB
data source with that uid, or regenerate with --datasource-uid).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from dashgen.model import Alert, Level
from dashgen.query import grafana, render

FOLDER = "diskprobe"
Json = dict[str, Any]

_DURATION = re.compile(r"^(\d+)([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(duration: str) -> int:
    match = _DURATION.match(duration)
    if not match:
        raise ValueError(f"not a simple duration: {duration!r}")
    return int(match.group(1)) * _SECONDS[match.group(2)]


def extra_ref_ids(alert: Alert) -> list[tuple[str, str]]:
    """(query, reduce) refIds of each of the alert's extra values: D and E, F and G, ..."""
    return [(chr(ord("D") + 2 * i), chr(ord("E") + 2 * i))
            for i in range(len(alert.extra_values))]


def grafana_template(
    text: str, labels: tuple[str, ...], extras: dict[str, str] | None = None
) -> str:
    """{host} -> {{ $labels.host }}, {value} -> {{ $values.B.Value }} (the reduced value),
    an extra value {name} -> {{ $values.<its reduce refId>.Value }}."""
    for label in labels:
        text = text.replace("{" + label + "}", "{{ $labels." + label + " }}")
    for name, ref_id in (extras or {}).items():
        text = text.replace("{" + name + "}", "{{ $values." + ref_id + ".Value }}")
    return text.replace("{value}", "{{ $values.B.Value }}")


def _query(ref_id: str, query: str, window: str, datasource_uid: str) -> Json:
    return {
        "refId": ref_id,
        "relativeTimeRange": {"from": seconds(window), "to": 0},
        "datasourceUid": datasource_uid,
        "model": {
            "refId": ref_id,
            "query": query,
            "rawQuery": True,
            "resultFormat": "time_series",
            "intervalMs": 1000,
            "maxDataPoints": 43200,
        },
    }


def _reduce(ref_id: str, expression: str) -> Json:
    return {
        "refId": ref_id,
        "relativeTimeRange": {"from": 0, "to": 0},
        "datasourceUid": "__expr__",
        "model": {
            "refId": ref_id,
            "type": "reduce",
            "expression": expression,
            "reducer": "last",
            "settings": {"mode": "dropNN"},
        },
    }


def _evaluator(level: Level) -> Json:
    if level.op == "is_true":
        # Grafana's expressions read a boolean as 1 (true) or 0 (false).
        return {"type": "gt", "params": [0.5]}
    return {"type": level.op, "params": list(level.params)}


def _extras(alert: Alert, datasource_uid: str) -> list[Json]:
    """A query and a reduce per extra value, after C: one column per query, as B reads A."""
    nodes: list[Json] = []
    expressions = [expression for _, expression in alert.extra_values]
    for expression, (query_id, reduce_id) in zip(expressions, extra_ref_ids(alert)):
        select = replace(alert.query, columns=f'{expression} AS "value"')
        nodes.append(_query(query_id, render(select, grafana()), alert.window, datasource_uid))
        nodes.append(_reduce(reduce_id, query_id))
    return nodes


def _rule(alert: Alert, level: Level, datasource_uid: str) -> Json:
    query = render(alert.query, grafana())
    extras = {name: ids[1] for (name, _), ids in zip(alert.extra_values, extra_ref_ids(alert))}
    return {
        "uid": f"{alert.uid}-{level.severity[:4]}",
        "title": f"{alert.title} ({level.severity})",
        "condition": "C",
        "data": [
            _query("A", query, alert.window, datasource_uid),
            _reduce("B", "A"),
            {
                "refId": "C",
                "relativeTimeRange": {"from": 0, "to": 0},
                "datasourceUid": "__expr__",
                "model": {
                    "refId": "C",
                    "type": "threshold",
                    "expression": "B",
                    "conditions": [{"evaluator": _evaluator(level)}],
                },
            },
            *_extras(alert, datasource_uid),
        ],
        "noDataState": "OK",
        "execErrState": "Error",
        "for": alert.pending,
        "labels": {"severity": level.severity, "source": "diskprobe",
                   **({"dedup": alert.dedup} if alert.dedup else {})},
        "annotations": {
            "summary": grafana_template(alert.summary, alert.labels, extras),
            "description": alert.why,
            "runbook": alert.runbook,
        },
        "isPaused": False,
    }


def render_rules(alerts: list[Alert], datasource_uid: str) -> Json:
    groups: dict[str, Json] = {}
    for alert in alerts:
        group = groups.setdefault(
            alert.group,
            {"orgId": 1, "name": alert.group, "folder": FOLDER, "interval": alert.every,
             "rules": []},
        )
        if group["interval"] != alert.every:
            raise ValueError(f"{alert.uid}: every {alert.every} differs from its group's")
        group["rules"] += [_rule(alert, level, datasource_uid) for level in alert.levels]
    return {"apiVersion": 1, "groups": list(groups.values())}
