"""Grafana unified alerting file provisioning (apiVersion 1): one rule per alert level.

Each rule is query A (InfluxQL, raw), B = reduce(A, last), C = threshold(B); C is the
condition. Rules read the data source whose uid is `datasource_uid` (provision the InfluxDB
data source with that uid, or regenerate with --datasource-uid).
"""

from __future__ import annotations

import re
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


def grafana_template(text: str, labels: tuple[str, ...]) -> str:
    """{host} -> {{ $labels.host }}, {value} -> {{ $values.B.Value }} (the reduced value)."""
    for label in labels:
        text = text.replace("{" + label + "}", "{{ $labels." + label + " }}")
    return text.replace("{value}", "{{ $values.B.Value }}")


def _rule(alert: Alert, level: Level, datasource_uid: str) -> Json:
    query = render(alert.query, grafana())
    return {
        "uid": f"{alert.uid}-{level.severity[:4]}",
        "title": f"{alert.title} ({level.severity})",
        "condition": "C",
        "data": [
            {
                "refId": "A",
                "relativeTimeRange": {"from": seconds(alert.window), "to": 0},
                "datasourceUid": datasource_uid,
                "model": {
                    "refId": "A",
                    "query": query,
                    "rawQuery": True,
                    "resultFormat": "time_series",
                    "intervalMs": 1000,
                    "maxDataPoints": 43200,
                },
            },
            {
                "refId": "B",
                "relativeTimeRange": {"from": 0, "to": 0},
                "datasourceUid": "__expr__",
                "model": {
                    "refId": "B",
                    "type": "reduce",
                    "expression": "A",
                    "reducer": "last",
                    "settings": {"mode": "dropNN"},
                },
            },
            {
                "refId": "C",
                "relativeTimeRange": {"from": 0, "to": 0},
                "datasourceUid": "__expr__",
                "model": {
                    "refId": "C",
                    "type": "threshold",
                    "expression": "B",
                    "conditions": [{"evaluator": {"type": level.op, "params": list(level.params)}}],
                },
            },
        ],
        "noDataState": "OK",
        "execErrState": "Error",
        "for": alert.pending,
        "labels": {"severity": level.severity, "source": "diskprobe"},
        "annotations": {
            "summary": grafana_template(alert.summary, alert.labels),
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
