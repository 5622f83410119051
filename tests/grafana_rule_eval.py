"""One Grafana unified-alerting rule of dashboards/alerts/grafana-alerts.yaml, evaluated as
Grafana's expression engine would: query A on a real InfluxDB with `$timeFilter` rendered as
the alerting backend does, B = reduce(A, last) in dropNN mode per series, and the threshold C.
Two series with one label set fail: they put a Grafana rule in Error.
"""

from __future__ import annotations

import re
from typing import Any

from dashboard_eval import grafana_alert_query, leftovers, reduce_last, run, threshold

from influxdb_server import InfluxServer

Labels = tuple[str, ...]


def group_tags(query: str) -> list[str]:
    return re.findall(r'"([^"]+)"', query.rsplit(" GROUP BY ", 1)[1])


def fired(server: InfluxServer, db: str, rule: dict[str, Any], now_ms: int) -> dict[Labels, str]:
    """The label sets (the query's GROUP BY tags) the rule fires for, with its severity."""
    query_node, reduce_node, threshold_node = rule["data"][:3]
    assert reduce_node["model"]["expression"] == "A" and rule["condition"] == "C"
    query = grafana_alert_query(query_node["model"]["query"], query_node["relativeTimeRange"],
                                now_ms)  # fmt: skip
    assert not leftovers(query), query
    evaluator = threshold_node["model"]["conditions"][0]["evaluator"]
    names = group_tags(query)
    severity: str = rule["labels"]["severity"]
    found: dict[Labels, str] = {}
    seen: set[Labels] = set()
    for series in run(server, db, query):
        labels = tuple(series["tags"].get(name, "") for name in names)
        # Grafana puts the whole rule in Error when two results share one label set
        # (ngalert eval: "frame cannot uniquely be identified by its labels").
        assert labels not in seen, f"two series with labels {labels}: Grafana's rule errs"
        seen.add(labels)
        value = reduce_last(series)
        if value is not None and threshold(evaluator["type"], evaluator["params"], value):
            found[labels] = severity
    return found
