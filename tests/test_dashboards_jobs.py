"""The agent's training jobs (diskprobe_job) on the dashboards and in the alerts, against a real
InfluxDB 1.x loaded with dashboard_jobs.py's jobs on the training host (their verdicts from
diskprobe's own decide()), its diskprobe_io and the meter's diskprobe_training windows
(dashboard_data.py).

The fleet board's table lists each job by its last point, disk-bound first, and its count of
disk-bound jobs follows each job's last point per interval; the I/O board shows a host's jobs'
verdicts over the devices' %util and r_await. The agent's alert fires for exactly the ranks
whose points say disk in at least half of 15 minutes (at least 3 points): not the compute,
input_cpu or blips-of-disk ones, not the spell that ended 20 minutes ago, not the job with
2 points; the data catches a rule without either condition or with a longer window. A rank
seen by both the meter and the agent fires both rules, which InfluxQL cannot merge (a query
over both measurements returns a series for each); they share one dedup label and one
Kapacitor alert ID and topic, and make one notification.
(test_dashboards.py runs every panel and alert on the full data set, with job_disk_bound_firing.)
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

import dashboard_data as data
import dashboard_eval as ev
import dashboard_jobs as jobs
import grafana_rule_eval
from dashboard_data import GPU, MIN, SEC, Row

from influxdb_server import InfluxServer

UID, METER_UID, DEDUP = "diskprobe-job-disk-bound", "diskprobe-training-disk-bound", \
    "training-job-disk-bound"  # fmt: skip
FLEET, IO_BOARD = "diskprobe-fleet.json", "diskprobe-io.json"
TABLE, COUNT = "Jobs by bottleneck", "Disk-bound jobs"
TIMELINE, DEVICES = "Training jobs' verdicts (agent)", "Jobs' devices: %util and r_await"
WINDOW_NS = 15 * MIN
RANK = ("host", "job", "rank")
SERIES = (*RANK, "job_pid")
Labels = tuple[str, ...]


def job_disk_bound_firing(rows: list[Row]) -> dict[Labels, str]:
    """diskprobe-job-disk-bound: every rank with at least 3 diskprobe_job points in the window,
    at least half of them saying disk (the string field: not the code the rule reads)."""
    votes: dict[Labels, list[bool]] = {}
    for row in rows:
        if row.measurement == "diskprobe_job" and row.offset_ns > -WINDOW_NS:
            labels = tuple(row.tags[tag] for tag in RANK)
            votes.setdefault(labels, []).append(row.fields["bottleneck"] == "disk")
    return {labels: "warning" for labels, disk in votes.items()
            if len(disk) >= 3 and 2 * sum(disk) >= len(disk)}


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    io = data.synthetic_gpu_host([Row("diskprobe_io", {}, {}, 0, "template")])
    return [*data.synthetic_training(), *io, *jobs.synthetic_jobs()]


@pytest.fixture
def loaded(influx_db: tuple[InfluxServer, str], rows: list[Row]) -> tuple[InfluxServer, str, int]:
    now_ns = time.time_ns()
    ev.write_rows(*influx_db, rows, now_ns)
    return (*influx_db, now_ns)


def _mine(rows: list[Row], job: tuple[str, str]) -> list[Row]:
    return sorted((r for r in rows if r.measurement == "diskprobe_job"
                   and (r.tags["job"], r.tags["rank"]) == job), key=lambda r: r.offset_ns)


def test_the_data_holds_each_case_with_diskprobes_own_verdicts(rows: list[Row]) -> None:
    last = {job: _mine(rows, job)[-1].fields["bottleneck"] for job, *_ in jobs.JOBS}
    assert last == {jobs.DISK_BOUND: "disk", jobs.HALF: "disk", jobs.NO_METER: "disk",
                    jobs.COMPUTE: "compute", jobs.LOADERS_BOUND: "input_cpu",
                    jobs.BLIPS: "compute", jobs.ENDED: "compute", jobs.TOO_FEW: "disk",
                    jobs.JUST_ENOUGH: "disk"}  # fmt: skip
    ended = [r.offset_ns for r in _mine(rows, jobs.ENDED) if r.fields["bottleneck"] == "disk"]
    assert len(ended) == 240 and max(ended) == -20 * MIN  # the spell ended 20 minutes ago
    assert [len(_mine(rows, job)) for job in (jobs.TOO_FEW, jobs.JUST_ENOUGH)] == [2, 3]
    codes = {r.fields["bottleneck"]: r.fields["bottleneck_code"] for r in rows
             if r.measurement == "diskprobe_job"}
    assert codes == {"disk": 4, "compute": 2, "input_cpu": 3}
    # The meter's disk-bound rank is one of the agent's: both see it.
    assert jobs.DISK_BOUND == data.DISK_BOUND
    assert set(job_disk_bound_firing(rows)) == {(GPU, *job) for job in jobs.FIRES}


def _by(series: list[ev.Series], *names: str) -> dict[Labels, ev.Series]:
    return {tuple(s["tags"][name] for name in names): s for s in series}


def test_jobs_table_lists_each_job_by_its_last_point_disk_bound_first(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, now_ns = loaded
    panel, board_s = ev.grafana_panel(FLEET, TABLE)
    seconds = ev.panel_seconds(panel, board_s)
    assert seconds == 3600 and panel["timeFrom"] == "1h"  # its own hour, not the board's week
    (target,) = panel["targets"]
    table = ev.table(ev.run(server, db, ev.grafana_expand(target["query"], seconds,
                                                          {"host": [ev.ALL]})))
    expected = []
    for job, *_ in jobs.JOBS:
        last = _mine(rows, job)[-1]
        expected.append({**{t: last.tags[t] for t in SERIES}, "time": now_ns + last.offset_ns,
                         "bottleneck": last.fields["bottleneck"],
                         "disk_bound": int(last.fields["bottleneck"] == "disk"),
                         "device": last.fields.get("device"),
                         "mount_point": last.fields.get("mount_point"),
                         "since": int(last.fields["bottleneck_since"]) * 1000})
    shown = ev.grafana_order(panel, table)
    wanted = {tuple(r[t] for t in SERIES): r for r in expected}
    assert {tuple(r.pop(t) for t in SERIES): r for r in shown} == {
        key: {k: v for k, v in row.items() if k not in SERIES} for key, row in wanted.items()}
    # Disk-bound first, the longest disk-bound first (the smallest since).
    order = [(row["disk_bound"], row["since"]) for row in ev.grafana_order(panel, ev.table(
        ev.run(server, db, ev.grafana_expand(target["query"], seconds, {"host": [GPU]}))))]
    assert order == sorted(order, key=lambda pair: (-pair[0], pair[1])) and order[0][0] == 1
    assert panel["options"]["sortBy"] == [{"displayName": "disk-bound", "desc": True},
                                          {"displayName": "since", "desc": False}]
    overrides = json.dumps(panel["fieldConfig"]["overrides"])
    assert '"dateTimeAsIso"' in overrides and '"disk": {"text": "disk", "color": "red"' in overrides
    (text,) = ev.chronograf_queries(FLEET, TABLE, db)  # one host, the same rows
    chronograf = ev.table(ev.run(server, db, ev.chronograf_expand(text, seconds,
                                                                  {":host:": f"'{GPU}'"})))
    assert "time > now() - 1h" in text and sorted(map(str, chronograf)) == sorted(
        map(str, ev.table(ev.run(server, db, ev.grafana_expand(target["query"], seconds,
                                                                {"host": [GPU]})))))


STEP_NS = 2 * MIN  # the count's buckets: the panel's min interval


def _disk_per_bucket(rows: list[Row], now_ns: int) -> dict[int, int]:
    """Per 2 minutes (InfluxDB's epoch-aligned buckets), the jobs whose last point in it is
    disk."""
    last: dict[tuple[int, Labels], tuple[int, str]] = {}
    for row in rows:
        if row.measurement != "diskprobe_job":
            continue
        at = now_ns + row.offset_ns
        key = (at - at % STEP_NS, tuple(row.tags[t] for t in SERIES))
        if key not in last or at >= last[key][0]:
            last[key] = (at, str(row.fields["bottleneck"]))
    counts: dict[int, int] = {}
    for (bucket, _), (_, verdict) in last.items():
        counts[bucket] = counts.get(bucket, 0) + (verdict == "disk")
    return counts


def test_disk_bound_count_follows_each_jobs_last_point_per_interval(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, now_ns = loaded
    panel, board_s = ev.grafana_panel(FLEET, COUNT)
    seconds = ev.panel_seconds(panel, board_s)
    assert (seconds, panel["interval"]) == (3600, "2m")  # an hour, 2 minutes at least
    (target,) = panel["targets"]
    query = ev.grafana_expand(target["query"], seconds, {"host": [ev.ALL]},
                              ev.panel_min_interval(panel))
    assert "GROUP BY time(120s), " in query  # 1 h / 1000 points is 3 s: the minimum holds
    (series,) = ev.run(server, db, query)
    shown = {at: count for at, count in series["values"]}
    expected = _disk_per_bucket(rows, now_ns)
    # The buckets wholly in the hour (the first one, cut by the range, may hold none of its
    # points).
    expected = {at: n for at, n in expected.items() if at >= now_ns - 3600 * SEC}
    assert {at: shown.get(at, 0) for at in expected} == expected
    assert set(shown.values()) - set(expected.values()) <= {0}  # fill(0) between, no more
    # Half an hour ago only llama-pt was there, disk-bound; in the last minute at least the
    # four always disk-bound (resnet50 rank 0, etl-shards, warmup, short-io).
    half_hour = now_ns - 30 * MIN
    assert expected[half_hour - half_hour % STEP_NS] == 1
    assert expected[now_ns - now_ns % STEP_NS] >= 4
    (text,) = ev.chronograf_queries(FLEET, COUNT, db)  # Chronograf: one host's count
    chronograf = ev.run(server, db, ev.chronograf_expand(text, seconds, {":host:": f"'{GPU}'"}))
    assert chronograf and "time > now() - 1h" in text


def test_io_board_shows_the_hosts_jobs_verdicts_beside_its_devices(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    panel, seconds = ev.grafana_panel(IO_BOARD, TIMELINE)
    assert panel["type"] == "state-timeline"
    variables = {"host": [GPU], "device": [ev.ALL]}
    (target,) = panel["targets"]
    timeline = _by(ev.run(server, db, ev.grafana_expand(target["query"], seconds, variables)),
                   "job", "rank")
    codes = {job: {v[1] for v in s["values"]} for job, s in timeline.items()}
    assert codes == {job: {r.fields["bottleneck_code"] for r in _mine(rows, job)}
                     for job, *_ in jobs.JOBS}
    assert codes[jobs.ENDED] == {4, 2} and codes[jobs.LOADERS_BOUND] == {3}
    mappings = panel["fieldConfig"]["defaults"]["mappings"][0]["options"]
    assert {value: m["text"] for value, m in mappings.items()} == {
        "0": "unknown", "1": "idle", "2": "compute", "3": "input_cpu", "4": "disk",
        "5": "checkpoint", "6": "throttled", "7": "remote_fs"}
    devices, _ = ev.grafana_panel(IO_BOARD, DEVICES)
    (target,) = devices["targets"]
    load = _by(ev.run(server, db, ev.grafana_expand(target["query"], seconds, variables)),
               "device")
    assert {d: {tuple(v[1:]) for v in s["values"]} for (d,), s in load.items() if d in (
        "nvme1n1", "sdb")} == {"nvme1n1": {(99.0, 25.0)}, "sdb": {(97.0, 180.0)}}
    (right,) = devices["fieldConfig"]["overrides"]  # r_await on the right, in ms
    assert right["properties"][0] == {"id": "unit", "value": "ms"}
    assert re.fullmatch(right["matcher"]["options"], f"{GPU} nvme1n1 r_await")
    # Grafana lays the two out one above the other, the whole width: one time axis.
    assert panel["gridPos"]["w"] == devices["gridPos"]["w"] == 24
    assert devices["gridPos"]["y"] == panel["gridPos"]["y"] + panel["gridPos"]["h"]
    (text,) = ev.chronograf_queries(IO_BOARD, TIMELINE, db)  # the codes, one host
    values = {":host:": f"'{GPU}'", ":device:": ".*"}
    assert len(ev.run(server, db, ev.chronograf_expand(text, seconds, values))) == len(jobs.JOBS)


def _rule(uid: str) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    groups = yaml.safe_load((ev.DASHBOARDS / "alerts" / "grafana-alerts.yaml").read_text())
    (rule,) = [r for g in groups["groups"] for r in g["rules"] if r["uid"].startswith(uid + "-")]
    return rule


def _fired(server: InfluxServer, db: str, rule: dict[str, Any], query: str = "",
           window_s: int = 0) -> dict[Labels, str]:
    if query or window_s:
        rule = json.loads(json.dumps(rule))
        node = rule["data"][0]
        node["model"]["query"] = query or node["model"]["query"]
        node["relativeTimeRange"]["from"] = window_s or node["relativeTimeRange"]["from"]
    return grafana_rule_eval.fired(server, db, rule, time.time_ns() // 10**6 + 1)


def test_grafana_rule_fires_for_the_disk_bound_ranks_only(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    rule = _rule(UID)
    query = rule["data"][0]["model"]["query"]
    assert rule["data"][0]["relativeTimeRange"]["from"] == 900 and '"bottleneck_code"' in query
    fired = _fired(server, db, rule)
    assert fired == job_disk_bound_firing(rows)
    assert set(fired) == {(GPU, *job) for job in jobs.FIRES}
    assert not {(GPU, *job) for job in (jobs.COMPUTE, jobs.LOADERS_BOUND, jobs.ENDED,
                                       jobs.TOO_FEW, jobs.BLIPS)} & set(fired)
    # The data tells a wrong rule apart: without the 3 points, with disk in any point, over
    # an hour.
    few, half = ' AND "points" >= 3', ' AND "disk" * 2 >= "points"'
    assert few.removeprefix(" AND ") in query and half in query
    assert (GPU, *jobs.TOO_FEW) in _fired(server, db, rule, query.replace(
        'WHERE "points" >= 3 AND', "WHERE"))
    assert (GPU, *jobs.BLIPS) in _fired(server, db, rule, query.replace(half, ""))
    assert (GPU, *jobs.ENDED) in _fired(server, db, rule, window_s=3600)
    assert rule["labels"] == {"severity": "warning", "source": "diskprobe", "dedup": DEDUP}
    assert all("{{ $labels." + label + " }}" in rule["annotations"]["summary"]
               for label in RANK)


def _tick(uid: str) -> tuple[ev.Tick, str]:
    text = (ev.DASHBOARDS / "alerts" / "kapacitor" / f"{uid}.tick").read_text(encoding="utf-8")
    return ev.parse_tick(text), text


def _kapacitor_fired(server: InfluxServer, db: str, tick: ev.Tick) -> dict[Labels, str]:
    statement = ev.kapacitor_statement(tick, db, time.time_ns() + 10**6)
    found = {tuple(s["tags"][t] for t in tick.group_by): ev.kapacitor_level(tick, s)
             for s in ev.run(server, db, statement)}
    return {labels: level for labels, level in found.items() if level}


def test_tickscript_fires_for_the_disk_bound_ranks_only(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    tick, text = _tick(UID)
    assert tick.group_by == RANK and tick.period == "1800s" and tick.every == "1m"
    assert tick.levels == {"warn": '"value" > 0'}
    assert _kapacitor_fired(server, db, tick) == job_disk_bound_firing(rows)
    assert '{{ index .Fields "points" }}' in text


def _alert_id(text: str, tags: dict[str, str]) -> tuple[str, str]:
    """A TICKscript's alert ID for a group's tags, and its topic."""
    template = re.search(r"\.id\('(.*?)'\)", text)
    topic = re.search(r"\.topic\('(.*?)'\)", text)
    assert template and topic
    rendered = re.sub(r'\{\{ index \.Tags "(\w+)" \}\}', lambda m: tags[m.group(1)],
                      template.group(1))
    return rendered, topic.group(1)


def topic_notifications(events: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(topic, alert ID, level) events as a Kapacitor topic handler matching `changed()`
    passes them on: the topic keeps each ID's last level (alert/topics.go, Topic.collect sets
    the event's previous state from it), so a second task's same level is no change."""
    levels: dict[tuple[str, str], str] = {}
    passed = []
    for topic, alert_id, level in events:
        if levels.get((topic, alert_id), "OK") != level:
            passed.append((topic, alert_id, level))
        levels[topic, alert_id] = level
    return passed


def test_a_rank_seen_by_both_the_meter_and_the_agent_alerts_once(
    loaded: tuple[InfluxServer, str, int], rows: list[Row],
) -> None:
    server, db, _ = loaded
    both = (GPU, *jobs.DISK_BOUND)
    # Why not one rule: InfluxQL keeps the two measurements apart, even through a subquery,
    # so a rank in both is two series with one label set (a Grafana rule would be in Error).
    union = ('SELECT count("v") AS "value" FROM (SELECT "bottleneck_code" AS "v" FROM '
             '"diskprobe_job" WHERE time > now() - 15m), (SELECT "input_wait_ratio" AS "v" '
             'FROM "diskprobe_training" WHERE time > now() - 15m) GROUP BY "host", "job", "rank"')
    found = [(s["name"], tuple(s["tags"][t] for t in RANK)) for s in ev.run(server, db, union)]
    assert sorted(name for name, labels in found if labels == both) == [
        "diskprobe_job", "diskprobe_training"]
    # Both rules fire for it, with one dedup label: a route grouped by it and the rank makes
    # one notification per rank.
    meter, agent = _fired(server, db, _rule(METER_UID)), _fired(server, db, _rule(UID))
    assert [labels for labels in meter] == [(*both, "nvme1n1")] and both in agent
    assert _rule(METER_UID)["labels"]["dedup"] == _rule(UID)["labels"]["dedup"] == DEDUP
    routed = [(DEDUP, *labels[:3]) for labels in [*meter, *agent]]
    assert sorted(set(routed)) == sorted((DEDUP, *labels) for labels in agent)
    assert routed.count((DEDUP, *both)) == 2 and len(set(routed)) == len(agent)
    # Kapacitor: the two tasks raise one alert ID on one topic; a handler matching changed()
    # passes the first WARNING only.
    events = []
    for uid in (METER_UID, UID):
        tick, text = _tick(uid)
        for labels in _kapacitor_fired(server, db, tick):
            tags = dict(zip(tick.group_by, labels))
            events.append((*reversed(_alert_id(text, tags)), "WARNING"))
    passed = topic_notifications(events)
    assert [(topic, alert_id) for topic, alert_id, _ in passed].count(
        (DEDUP, f"{DEDUP}/{GPU}/resnet50/0")) == 1
    assert len(events) == len(passed) + 1 and len(passed) == len(agent)
