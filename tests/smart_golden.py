"""The golden SMART cases (tests/golden/smart-json, tests/golden/smart-text): which there are,
and one read of a case by the real collector.

A case is a folder; it runs as the folder says (tests/smart_harness.py), whichever parser that
exercises: the collector asks `--version` and reads JSON from smartctl >= 7.0 (the fake's
default), `--all` text from an older one (the text cases' `version` says 6.6). Used by
tests/test_smart_golden.py and tests/golden/regenerate.py; the comparison with expected.out:
smart_golden_compare.py.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from diskprobe.collectors.base import Collection
from diskprobe.metric import Metric
from diskprobe.schema.smart import SMART, SMART_ATTR
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.smart import json_parser, text_parser
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from smart_harness import (
    GOLDEN_JSON,
    GOLDEN_TEXT,
    TESTS,
    device_line,
    direct_smartctl,
    fake_smartctl_env,
    install_case,
    make_rig,
    read_calls,
)

GOLDEN_TREES = (GOLDEN_JSON, GOLDEN_TEXT)
# The corpus's smartctl-text files that are no golden case's response (pySMART's probes and
# device.json, scans, git-symlink stubs), at their corpus paths; see its PROVENANCE.tsv.
TEXT_FIXTURES = TESTS / "fixtures" / "smartctl-text"
# expected.out carries this timestamp; emitted lines are checked to carry the wall-clock time
# of the collect, then normalised to it (the collector stamps points with time.time_ns()).
FIXED_TIME_NS = 1_700_000_000_000_000_000
SMART_MEASUREMENTS = (SMART.name, SMART_ATTR.name)
_VERSION = re.compile(r"smartctl (\d+)\.(\d+)")
# The read-only corpus the golden responses and tests/fixtures/smartctl-text were copied from.
CORPUS = TESTS.resolve().parent.parent / "shared" / "corpus"


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def corpus_root() -> Path:
    """The corpus, for the tests that check the repo's copies against it. Absent, they skip
    with that reason; under CI (CI set) the corpus is checked out, so absent is a failure."""
    if not CORPUS.is_dir():
        reason = f"{CORPUS} not present: the copies in tests/ are not checked against it"
        if under_ci():
            pytest.fail(f"{reason} (CI is set: the corpus must be there)", pytrace=False)
        pytest.skip(reason)
    return CORPUS


def golden_health(case: str) -> DriveHealth:
    """A golden case ("smart-json/<name>" or "smart-text/<name>") parsed as the collector
    parses it: JSON where the case has it, else the text as the reader decodes it."""
    folder = TESTS / "golden" / case
    if (folder / "response.json").is_file():
        data = json_parser.load((folder / "response.json").read_text(encoding="utf-8"))
        return json_parser.parse(data, "sda")
    text = (folder / "response.txt").read_bytes().decode("utf-8", "replace")
    return text_parser.parse(text, "sda")


# -- cases ------------------------------------------------------------------------------------


def golden_cases() -> list[Path]:
    """Every case folder of both golden trees (a folder with a `device` file)."""
    return [
        case
        for tree in GOLDEN_TREES
        for case in sorted(tree.iterdir())
        if (case / "device").is_file()
    ]


def case_id(case: Path) -> str:
    """The id "smart-json/<name>": names repeat across the trees (drives captured both ways)."""
    return f"{case.parent.name}/{case.name}"


def find_cases(names: list[str]) -> list[Path]:
    """Cases by id ("smart-text/<name>") or by bare name (every tree's case of that name)."""
    by_id = {case_id(case): case for case in golden_cases()}
    found = []
    for name in names:
        matches = [by_id[name]] if name in by_id else [
            case for key, case in by_id.items() if key.split("/", 1)[1] == name
        ]  # fmt: skip
        if not matches:
            raise KeyError(f"{name}: no such case in {', '.join(t.name for t in GOLDEN_TREES)}")
        found += matches
    return found


def text_fixture_files() -> list[Path]:
    """The copies in TEXT_FIXTURES (not their PROVENANCE.tsv and README.md)."""
    about = (TEXT_FIXTURES / "PROVENANCE.tsv", TEXT_FIXTURES / "README.md")
    return sorted(path for path in TEXT_FIXTURES.rglob("*") if path.is_file() and path not in about)


def smartctl_text_copies() -> list[Path]:
    """Every file of the corpus's smartctl-text, as the repo holds it: the golden text
    responses and TEXT_FIXTURES (a file byte-identical to a golden response is not copied)."""
    responses = [case / "response.txt" for case in golden_cases()]
    return [path for path in responses if path.is_file()] + text_fixture_files()


def speaks_json(case: Path) -> bool:
    """Does the case's smartctl answer --json (>= 7.0, or no `version`: the fake's 7.3)?"""
    version = case / "version"
    match = _VERSION.search(version.read_text(encoding="utf-8")) if version.is_file() else None
    return match is None or (int(match.group(1)), int(match.group(2))) >= (7, 0)


def found_by_scan(case: Path) -> bool:
    """A golden drive is found by `--scan-open`, as on a host with this one drive; a device
    line without -d (smartctl picks the type) is no scan's output, so that one is configured."""
    return bool(DriveSpec.parse(device_line(case)).device_type)


def expected_calls(case: Path) -> list[list[str]]:
    """A golden read: `--version` once, the scan, then one read of the drive as scanned (or as
    configured), in JSON, or `--all` text from an old smartctl (none of pySMART's probes)."""
    spec = DriveSpec.parse(device_line(case))
    read = ["--all", "-n", "standby", *spec.smartctl_args()]
    scan = [["--scan-open"]] if found_by_scan(case) else []
    return [["--version"], *scan, ["--json=c", *read] if speaks_json(case) else read]


# -- a golden run -----------------------------------------------------------------------------


def serialize(metrics: list[Metric]) -> str:
    """The SMART lines as diskprobe writes them (diskprobe_agent is the runtime's, not ours)."""
    return InfluxSerializer().serialize(m for m in metrics if m.measurement in SMART_MEASUREMENTS)


_TIMESTAMP = re.compile(r" (\d+)$")


def normalise_timestamps(text: str, earliest_ns: int, latest_ns: int) -> str:
    """Every line's timestamp must lie within [earliest_ns, latest_ns]; it becomes FIXED_TIME_NS."""
    out = []
    for line in text.splitlines():
        match = _TIMESTAMP.search(line)
        assert match is not None, f"no timestamp: {line}"
        stamp = int(match.group(1))
        assert earliest_ns <= stamp <= latest_ns, f"timestamp {stamp} not the collect's: {line}"
        out.append(line[: match.start()] + f" {FIXED_TIME_NS}")
    return "".join(line + "\n" for line in out)


@dataclass
class GoldenRun:
    text: str  # normalised line protocol
    collection: Collection
    log: list[str]
    calls: list[list[str]]  # every argv the fake smartctl got
    seconds: float = 0.0  # the collect's wall time


def run_golden_case(case: Path, workdir: Path) -> GoldenRun:
    """One blocking read cycle of the real collector on this case alone (see found_by_scan),
    as the test and regenerate.py see it."""
    root = workdir / "fake"
    root.mkdir(parents=True, exist_ok=True)
    install_case(case, root)
    devices = [] if found_by_scan(case) else [device_line(case)]
    return collect_once(root, workdir, devices)


def collect_once(root: Path, workdir: Path, devices: list[str]) -> GoldenRun:
    """One blocking read cycle of the real collector on the cases installed under `root`;
    the lines as they would reach InfluxDB, each stamped with this collect's time."""
    smartctl = str(direct_smartctl(workdir))
    rig = make_rig(root, workdir / "state.json", smartctl_path=smartctl, devices=devices)
    try:
        with fake_smartctl_env(root):
            before = time.time_ns()
            collection = rig.collect()
            after = time.time_ns()
    finally:
        rig.close()
    text = normalise_timestamps(serialize(collection.metrics), before, after)
    return GoldenRun(text, collection, rig.log_lines(), read_calls(root), (after - before) / 1e9)
