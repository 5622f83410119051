"""The Prometheus alerting and recording rules (dashboards/prometheus/), checked by the real
promtool and run on a real VictoriaMetrics through vmalert.

- promtool check rules on every shipped file, promtool test rules on the fleet scenario
  (tests/prometheus_rules_files.py writes the test files; a test keeps them current);
- every shipped alert (dashgen) has its rules, same severities, same `for`;
- the names the rules read are the names diskprobe's Prometheus format writes, and the names
  VictoriaMetrics makes of diskprobe's line protocol (one rules file per path);
- the two-store setup: a day of back-filled line protocol in a raw VictoriaMetrics, vmalert
  replay into a long-term one: the recorded series hold the right values, and the ALERTS
  series name exactly the failing and fail-slow drives (not a moved drive's old host, a
  decommissioned host or a cleared fail-slow), the disk-bound training jobs (not a
  compute-bound one, nor one whose disk-bound spell ended at noon) and the devices whose
  latency p99 stayed high while busy (not on 50 requests, not for 10 minutes only).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from diskprobe import __version__
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema import MEASUREMENTS
from diskprobe.serializers.prometheus import PrometheusSerializer
from prometheus_rules_cases import TESTS
from prometheus_rules_files import write_all
from prometheus_rules_fleet import DAY, HOUR, NOON, fleet_day
from prometheus_rules_vm import RULES, VMALERT, Store, replay

sys.path.insert(0, str(RULES.parent))
from dashgen.alert_rules import alerts
from dashgen.prometheus_rules import NOT_EXPRESSIBLE, alert_name, render

# one worker runs the file: the two-store fixture (two servers, a vmalert replay) is built once
pytestmark = pytest.mark.xdist_group("test_prometheus_rules")
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
RULE_FILES = sorted(RULES.glob("*.yaml"))
NAME = re.compile(r"\b(diskprobe_[a-z0-9_]+)\b(?!:)")


def promtool(*args: str, cwd: Path = RULES) -> str:
    if not os.access(PROMTOOL, os.X_OK):
        pytest.fail("promtool not installed (Debian: apt-get install prometheus)")
    done = subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_shipped_files_are_generated_and_current() -> None:
    assert {path.name for path in RULE_FILES} == {Path(p).name for p in render()}
    for path, text in render().items():
        assert (RULES.parent / path).read_text() == text, "run: python dashboards/generate.py"
    for test_file, test_text in write_all().items():
        assert test_file.read_text() == test_text, "run: python tests/prometheus_rules_files.py"


def test_promtool_check_rules() -> None:
    out = promtool("check", "rules", *(p.name for p in RULE_FILES))
    assert out.count("SUCCESS") == len(RULE_FILES)


def test_promtool_test_rules() -> None:
    tests = sorted(p.name for p in TESTS.glob("*.yaml"))
    assert len(tests) == 8  # alerts, growth, recording, latency: per name flavor
    out = promtool("test", "rules", *tests, cwd=TESTS)
    assert out.count("SUCCESS") == len(tests)


def _rules(name: str) -> list[dict[str, Any]]:
    groups = yaml.safe_load((RULES / name).read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


@pytest.mark.parametrize("name", ["diskprobe-alerts.yaml", "diskprobe-alerts-influx.yaml"])
def test_every_shipped_alert_has_its_rules(name: str) -> None:
    got = sorted((r["annotations"]["uid"], r["labels"]["severity"], r.get("for", "0s"))
                 for r in _rules(name))
    want = sorted((a.uid, level.severity, a.pending) for a in alerts()
                  for level in a.levels if a.uid not in NOT_EXPRESSIBLE)
    assert got == want
    assert {a.uid for a in alerts()} - {g[0] for g in got} == set(NOT_EXPRESSIBLE)
    by_uid = {a.uid: a for a in alerts()}
    assert all(r["alert"] == alert_name(by_uid[r["annotations"]["uid"]]) for r in _rules(name))


def every_field(at: int) -> list[Metric]:
    """One point per measurement with every schema field (strings are text, bools true)."""
    values: dict[str, FieldValue] = {"str": "text", "bool": True, "int": 7, "float": 1.5}

    def value(kind: str) -> FieldValue:
        return values[kind]

    # `le` and `op`: the latency histogram's series (diskprobe_latency_seconds_count)
    return [Metric(spec.name, {"host": "h", "device": "sda", "serial": "S", "path": "/",
                               "op": "read", "le": "+Inf"},
                   {f.name: value(f.type) for f in spec.fields}, at)
            for spec in MEASUREMENTS]


def _referenced(name: str) -> set[str]:
    return {m for rule in _rules(name) for m in NAME.findall(str(rule["expr"]))}


def test_rules_read_the_names_of_the_prometheus_format() -> None:
    page = PrometheusSerializer().serialize(every_field(0))
    written = set(re.findall(r"^(diskprobe_[a-z0-9_]+)\{", page, re.M))
    for name in ("diskprobe-alerts.yaml", "diskprobe-recording.yaml"):
        assert _referenced(name) <= written, _referenced(name) - written


def test_rules_read_the_names_victoriametrics_makes_of_line_protocol(tmp_path: Path) -> None:
    store = Store(tmp_path / "lp", "100y")
    store.start()
    try:
        store.write(every_field(time.time_ns()))
        stored = {row["metric"]["__name__"] for row in store.settled('{__name__=~"diskprobe_.*"}')}
    finally:
        store.stop()
    for name in ("diskprobe-alerts-influx.yaml", "diskprobe-recording-influx.yaml"):
        assert _referenced(name) <= stored, _referenced(name) - stored
    # VictoriaMetrics keeps a string field as a series of zeros: no rule may read one.
    strings = {f"{s.name}_{f.name}" for s in MEASUREMENTS for f in s.fields if f.type == "str"}
    assert strings <= stored and not strings & _referenced("diskprobe-alerts-influx.yaml")


def _diskprobe_once(tmp_path: Path, output_format: str) -> str:
    """One real `diskprobe --once` on this machine (no SMART: no root here)."""
    config = tmp_path / f"{output_format}.toml"
    config.write_text(f'state_file = "{tmp_path / output_format}.json"\n[smart]\nenabled = false\n')
    script = Path(sys.executable).parent / "diskprobe"
    done = subprocess.run([str(script), "--config", str(config), "--once", "--format",
                           output_format], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


# Always sent by a live agent: the liveness gate of every alert and the fs/io alerts' inputs.
ALWAYS = (("diskprobe_agent", "duration_ms"), ("diskprobe_io", "await_ms"),
          ("diskprobe_io", "util_percent"), ("diskprobe_fs", "used_percent"),
          ("diskprobe_fs", "responsive"))


def test_a_real_run_gives_the_same_series_in_both_paths(tmp_path: Path) -> None:
    """diskprobe --once as Prometheus text and as line protocol through VictoriaMetrics: the
    fields every live agent sends have the rules' names in each, with the same labels (VM adds
    only `db`). Neither has `host`: Telegraf adds it on the InfluxDB path, and the
    Prometheus path needs it from the scrape config (dashboards/prometheus/README.md)."""
    from dashgen.prom_flavor import INFLUX, PROMETHEUS

    page = _diskprobe_once(tmp_path, "prometheus")
    store = Store(tmp_path / "vm", "100y")
    store.start()
    try:
        store.post(_diskprobe_once(tmp_path, "influx"))
        rows = store.settled('{__name__=~"diskprobe_(agent|io|fs)_.*"}',
                             names=frozenset(INFLUX.metric(m, f) for m, f in ALWAYS))
    finally:
        store.stop()
    for measurement, field in ALWAYS:
        name = PROMETHEUS.metric(measurement, field)
        scraped = {frozenset(dict(re.findall(r'(\w+)="([^"]*)"', labels)).items())
                   for labels in re.findall(rf"^{name}{{(.*)}} ", page, re.M)}
        name = INFLUX.metric(measurement, field)
        stored = {frozenset((k, v) for k, v in row["metric"].items() if k not in ("__name__", "db"))
                  for row in rows if row["metric"]["__name__"] == name}
        if measurement == "diskprobe_agent":
            # Two runs: on a loaded machine a collector may miss one run's batch (seen under
            # CI: only io's agent point in the Prometheus run); io's, in both, is compared.
            io = frozenset({("collector", "io"), ("version", __version__)})
            assert io in scraped and io in stored, name
            scraped, stored = {io}, {labels for labels in stored if labels == io}
        else:
            scraped, stored = _in_both_runs(scraped, stored, MOUNT_OR_DEVICE[measurement])
        assert scraped and stored == scraped, name


# The suite's other tests mount and unmount loop devices and FUSE file systems between the two
# runs (seen under CI: a loop4 mount in the second run only): fs and io series are compared for
# the mounts and devices both runs saw, and "/" must be one of them.
MOUNT_OR_DEVICE = {"diskprobe_fs": "path", "diskprobe_io": "device"}


Series = set[frozenset[tuple[str, str]]]


def _in_both_runs(scraped: Series, stored: Series, key: str) -> tuple[Series, Series]:
    def keys(series: Series) -> set[str]:
        return {dict(labels).get(key, "") for labels in series}

    both = keys(scraped) & keys(stored)
    assert key != "path" or "/" in both, (keys(scraped), keys(stored))
    return ({labels for labels in scraped if dict(labels).get(key, "") in both},
            {labels for labels in stored if dict(labels).get(key, "") in both})


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Store, int]]:
    """A day of the fleet in a raw store, replayed by vmalert into a long-term store (once
    for the tests that read it)."""
    tmp_path = tmp_path_factory.mktemp("two-stores")
    if not os.access(VMALERT, os.X_OK):
        pytest.fail("vmalert not installed (Debian: apt-get install victoria-metrics)")
    start = (int(time.time()) // DAY - 2) * DAY  # midnight two days ago: inside 15d
    raw, long_term = Store(tmp_path / "raw", "15d"), Store(tmp_path / "long", "1y")
    raw.start()
    long_term.start()
    raw.write(fleet_day(start))
    raw.settled('{__name__=~"diskprobe_(smart|agent|job|latency)_.*"}')
    rules = [RULES / "diskprobe-alerts-influx.yaml", RULES / "diskprobe-recording-influx.yaml"]
    replay(rules, raw, long_term, start, start + DAY, tmp_path / "vmalert.log")
    yield raw, long_term, start
    raw.stop()
    long_term.stop()


def _firing(store: Store, at: int) -> set[tuple[str, ...]]:
    """(alert, host, the drive's serial, the training job's job/rank or the latency alert's
    device/op) of the firing alerts."""
    rows = store.query('count_over_time(ALERTS{alertstate="firing"}[10m])', at)
    return {(r["metric"]["alertname"], r["metric"]["host"], r["metric"].get("serial", "")
             or "/".join(r["metric"][label] for label in ("job", "rank") if "rank" in r["metric"])
             or "/".join(r["metric"][label] for label in ("device", "op") if "op" in r["metric"]))
            for r in rows}


def test_vmalert_fires_for_exactly_the_failing_and_fail_slow_drives(
    two_stores: tuple[Store, Store, int],
) -> None:
    _, long_term, start = two_stores
    assert _firing(long_term, start + 6 * HOUR) == {
        ("DiskprobeVerdict", "h1", "S-FAIL"), ("DiskprobeVerdict", "h1", "MOVED"),
        ("DiskprobeVerdict", "h3", "S-DEAD"), ("DiskprobeFailSlow", "h1", "N-SLOW"),
        ("DiskprobeFailSlow", "h1", "N-CLEARED"), ("DiskprobeJobDiskBound", "h1", "resnet50/0"),
        ("DiskprobeJobDiskBound", "h1", "llama-pt/0"),
        # block latency: not sdb (50 requests), nor nvme0n1's 10 minutes (05:52 to 06:02)
        ("DiskprobeLatencyP99Read", "h1", "sda/read"),
        ("DiskprobeLatencyP99Read", "h1", "sdc/read"),
    }
    # h3 silent since noon: "diskprobe silent" for an hour, then it drops out
    assert ("DiskprobeAgentSilent", "h3", "") in _firing(long_term, NOON + start + 30 * 60)
    assert _firing(long_term, start + 18 * HOUR) == {
        ("DiskprobeVerdict", "h1", "S-FAIL"), ("DiskprobeVerdict", "h2", "MOVED"),
        ("DiskprobeReallocatedGrowth", "h1", "S-FAIL"), ("DiskprobeFailSlow", "h1", "N-SLOW"),
        ("DiskprobeJobDiskBound", "h1", "resnet50/0"),  # not llama-pt, compute since noon
        # not sdc (quiet since noon), nor nvme1n1's flushes (since 17:54 only)
        ("DiskprobeLatencyP99Read", "h1", "sda/read"),
    }


def test_vmalert_records_the_downsampled_series(two_stores: tuple[Store, Store, int]) -> None:
    _, long_term, start = two_stores
    slow = '{host="h1",device="nvme0n1"}'
    rows = long_term.export("diskprobe_io:await_ms:avg5m" + slow)
    assert len(rows) == 1
    stamps, values = rows[0]["timestamps"], rows[0]["values"]
    # one point per 5 minutes from midnight (its window: the one sample at midnight, 0 ms);
    # every later window (t - 5m, t] holds one whole cycle 0..29 ms: mean 14.5, max 29
    assert stamps[0] == start * 1000 and len(stamps) == DAY // 300 + 1
    assert {b - a for a, b in zip(stamps, stamps[1:])} == {300_000}
    assert values[0] == 0 and set(values[1:]) == {14.5}
    assert {*long_term.export("diskprobe_io:await_ms:max5m" + slow)[0]["values"][1:]} == {29}
    cleared = long_term.export('diskprobe_io:fail_slow:max5m{device="nvme1n1"}')[0]
    by_time = dict(zip(cleared["timestamps"], cleared["values"]))
    assert by_time[(start + 6 * HOUR) * 1000] == 1 and by_time[(start + 18 * HOUR) * 1000] == 0
    daily = long_term.export('diskprobe_smart:reallocated_sectors:max1d{serial="S-FAIL"}')
    # at each midnight the day before: the day before the test's day (8), the day (8 -> 16)
    assert [(r["timestamps"], r["values"]) for r in daily] == [
        ([start * 1000, (start + DAY) * 1000], [8, 16])]
    verdicts = long_term.export("diskprobe_smart:verdict_code:max1d")
    assert sorted((r["metric"]["host"], r["metric"]["serial"], r["values"][-1]) for r in verdicts
                  if r["timestamps"][-1] == (start + DAY) * 1000) == [
        ("h1", "MOVED", 2), ("h1", "S-FAIL", 2), ("h1", "S-OK", 0), ("h2", "MOVED", 2),
        ("h3", "S-DEAD", 2)]


def test_the_vm_storage_benchmark_runs_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import bench_downsampling_vm

    assert bench_downsampling_vm.main(["--quick"]) == 0
    out = capsys.readouterr().out
    raw, low = map(float, re.findall(r"raw ([0-9.]+) MB, downsampled ([0-9.]+) MB", out)[0])
    assert raw > 0 and low > 0 and "per host per year" in out, out
