"""Alert exactness on the simulated fleet: every Grafana rule and TICKscript evaluated at the
simulation's anchor as tests/dashboard_eval.py judges them (Grafana: reduce(last) in dropNN
mode, then the threshold; Kapacitor: the highest level any point of a group reaches), and the
firing set compared with the generator's ground truth (fleet_sim_hosts.expected_alerts):

- drive alerts (the ones on diskprobe_smart): the union of their (host, serial) must be
  exactly the failing drives where they are now;
- diskprobe-fail-slow: exactly the devices fail-slow now (host, device, model, serial);
- diskprobe-fs-stuck: exactly the mounts hung for 5 minutes or more now (host, path);
- diskprobe-job-disk-bound: exactly the disk-bound training job (host, job, rank);
- every other alert (volumes, saturation, silence, training): nothing.

So the moved drive on its old host, the decommissioned host's last values, the fail-slow
state that cleared, a mount hung for 3 minutes only and one that answers again must all stay
silent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fleet_sim_queries import DASHBOARDS, grafana_rules

import dashboard_eval as ev
import grafana_rule_eval

from influxdb_server import InfluxServer

Labels = tuple[str, ...]
# uid -> the manifest's list of the label tuples it must fire for, exactly
EXACT = {"diskprobe-fail-slow": "fail_slow", "diskprobe-fs-stuck": "stuck",
         "diskprobe-job-disk-bound": "jobs"}


@dataclass
class Fired:
    """uid -> labels -> level, per tool."""

    grafana: dict[str, dict[Labels, str]] = field(default_factory=dict)
    kapacitor: dict[str, dict[Labels, str]] = field(default_factory=dict)


def evaluate_grafana(server: InfluxServer, db: str,
                     anchor_ns: int) -> dict[str, dict[Labels, str]]:
    fired: dict[str, dict[Labels, str]] = {}
    for rule in grafana_rules():
        uid = re.sub(r"-(warn|crit)$", "", rule["uid"])
        found = grafana_rule_eval.fired(server, db, rule, anchor_ns // 10**6 + 1)
        if found:
            fired.setdefault(uid, {}).update(found)
    return fired


def evaluate_kapacitor(server: InfluxServer, db: str,
                       anchor_ns: int) -> dict[str, dict[Labels, str]]:
    fired: dict[str, dict[Labels, str]] = {}
    for path in sorted((DASHBOARDS / "alerts" / "kapacitor").glob("*.tick")):
        tick = ev.parse_tick(path.read_text(encoding="utf-8"))
        statement = ev.kapacitor_statement(tick, db, anchor_ns + 10**6)
        for series in ev.run(server, db, statement):
            level = ev.kapacitor_level(tick, series)
            if level:
                labels = tuple(series["tags"].get(name, "") for name in tick.group_by)
                fired.setdefault(path.stem, {})[labels] = level
    return fired


def _drive_uids() -> set[str]:
    """The alerts on diskprobe_smart (their labels include host and serial)."""
    return {re.sub(r"-(warn|crit)$", "", r["uid"]) for r in grafana_rules()
            if '"diskprobe_smart"' in r["data"][0]["model"]["query"]}


def mismatches(tool: str, fired: dict[str, dict[Labels, str]],
               expected: dict[str, Any]) -> list[str]:
    """What fired that should not have, and what should have fired and did not."""
    drive_uids = _drive_uids()
    drives: set[Labels] = set()
    problems: list[str] = []
    for uid, labels in fired.items():
        if uid in drive_uids:
            drives |= {(key[0], key[-1]) for key in labels}  # (host, ..., serial)
        elif uid not in EXACT and labels:
            problems.append(f"{tool} {uid} fired for {sorted(labels)[:5]} (expected none)")
    want = {tuple(item) for item in expected["drives"]}
    problems += [f"{tool}: drive alert for {key} (not a failing drive there)"
                 for key in sorted(drives - want)]
    problems += [f"{tool}: no drive alert for failing {key}" for key in sorted(want - drives)]
    for uid, key in EXACT.items():
        got = set(fired.get(uid, {}))
        want_set = {tuple(item) for item in expected.get(key, [])}  # older manifests: none
        problems += [f"{tool}: {uid} fired for {k} (not expected)" for k in sorted(got - want_set)]
        problems += [f"{tool}: no {uid} alert for {k}" for k in sorted(want_set - got)]
    return problems


def summary(fired: dict[str, dict[Labels, str]]) -> str:
    return ", ".join(f"{uid} {len(labels)}" for uid, labels in sorted(fired.items()) if labels)


def check(server: InfluxServer, db: str, anchor_ns: int,
          expected: dict[str, Any]) -> tuple[Fired, list[str]]:
    fired = Fired(evaluate_grafana(server, db, anchor_ns),
                  evaluate_kapacitor(server, db, anchor_ns))
    problems = mismatches("grafana", fired.grafana, expected)
    problems += mismatches("kapacitor", fired.kapacitor, expected)
    return fired, problems
