"""The SMART tests' harness: drive cases for the fake smartctl, a collector on them, its output.

A case folder (tests/golden/smart-json/<case>/, or one made in a test) holds what
tests/fake_smartctl/smartctl replays: `device`, `response.json` and/or `response.txt`, optional
`exit_status` and `behaviour`. Tests copy the cases they need into a temporary
FAKE_SMARTCTL_DIR, so they can change a case (behaviour, response) without touching the tree.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from diskprobe.collectors.base import Collection
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import SmartConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.smart.devices import DriveSpec
from diskprobe.state import StateStore

from lineproto import Point

TESTS = Path(__file__).parent
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
GOLDEN_JSON = TESTS / "golden" / "smart-json"
CASE_FILES = ("device", "response.json", "response.txt", "exit_status", "behaviour")
# expected.out carries this timestamp; emitted lines are checked to carry the wall-clock time
# of the collect, then normalised to it (the collector stamps points with time.time_ns()).
FIXED_TIME_NS = 1_700_000_000_000_000_000
SMART_MEASUREMENTS = ("diskprobe_smart", "diskprobe_smart_attr")


def golden_cases() -> list[Path]:
    return sorted(p for p in GOLDEN_JSON.iterdir() if (p / "device").is_file())


def device_line(case: Path) -> str:
    return (case / "device").read_text(encoding="utf-8").strip()


def install_case(source: Path, root: Path, name: str | None = None) -> Path:
    """Copy the replayable files of one case folder into FAKE_SMARTCTL_DIR `root`."""
    target = root / (name or source.name)
    target.mkdir(parents=True, exist_ok=True)
    for file_name in CASE_FILES:
        if (source / file_name).is_file():
            shutil.copyfile(source / file_name, target / file_name)
    return target


def set_behaviour(case: Path, behaviour: str | None) -> None:
    path = case / "behaviour"
    if behaviour:
        path.write_text(behaviour + "\n", encoding="utf-8")
    elif path.exists():
        path.unlink()


def read_calls(root: Path) -> list[list[str]]:
    """Every argv the fake smartctl was run with, oldest first."""
    log = root / "calls.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def call_device(argv: list[str]) -> str | None:
    """The drive spec a call read ("/dev/sda -d sat"); None for --scan-open / --version."""
    if any(arg in ("--scan", "--scan-open", "--version", "-V") for arg in argv) or not argv:
        return None
    device_type = ""
    for i, arg in enumerate(argv[:-1]):
        if arg in ("-d", "--device"):
            device_type = argv[i + 1]
        elif arg.startswith("--device="):
            device_type = arg.split("=", 1)[1]
    return str(DriveSpec(argv[-1], device_type))


def calls_per_device(root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for argv in read_calls(root):
        device = call_device(argv)
        if device is not None:
            counts[device] = counts.get(device, 0) + 1
    return counts


@dataclass
class Rig:
    """A SmartCollector on the fake smartctl, with its log and state file."""

    root: Path  # FAKE_SMARTCTL_DIR
    state_path: Path
    log_stream: io.StringIO
    log: Logger
    state: StateStore
    collector: SmartCollector

    def log_lines(self, prefix: str = "") -> list[str]:
        lines = self.log_stream.getvalue().splitlines()
        return [line for line in lines if line.startswith(prefix)]

    def collect(self) -> Collection:
        return self.collector.collect()

    def close(self) -> None:
        self.collector.close()


def make_rig(
    root: Path,
    state_path: Path,
    smartctl_path: str | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    blocking: bool = True,
    log_stream: io.StringIO | None = None,
    **config: Any,
) -> Rig:
    """FAKE_SMARTCTL_DIR must be set (monkeypatch.setenv) before collect() runs smartctl."""
    stream = log_stream if log_stream is not None else io.StringIO()
    log = Logger(stream, debug=True)
    state = StateStore(str(state_path), log, save_interval=0.0)
    smart_config = SmartConfig(smartctl_path=smartctl_path or str(FAKE_SMARTCTL), **config)
    collector = SmartCollector(smart_config, log, state, blocking=blocking, monotonic=monotonic)
    return Rig(root, state_path, stream, log, state, collector)


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
    calls: list[list[str]]


def run_golden_case(case: Path, workdir: Path) -> GoldenRun:
    """One blocking read of one case by the real collector, as test and regenerate see it."""
    root = workdir / "fake"
    root.mkdir(parents=True, exist_ok=True)
    install_case(case, root)
    rig = make_rig(root, workdir / "state.json", devices=[device_line(case)])
    with fake_smartctl_env(root):
        before = time.time_ns()
        collection = rig.collect()
        after = time.time_ns()
    rig.close()
    text = normalise_timestamps(serialize(collection.metrics), before, after)
    return GoldenRun(text, collection, rig.log_lines(), read_calls(root))


@contextlib.contextmanager
def fake_smartctl_env(root: Path) -> Iterator[None]:
    """FAKE_SMARTCTL_DIR set for the duration (for scripts; tests use monkeypatch.setenv)."""
    saved = os.environ.get("FAKE_SMARTCTL_DIR")
    os.environ["FAKE_SMARTCTL_DIR"] = str(root)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("FAKE_SMARTCTL_DIR", None)
        else:
            os.environ["FAKE_SMARTCTL_DIR"] = saved


def golden_key(point: Point) -> str:
    """How golden lines are paired: the drive point, and each attribute by its id."""
    if point.measurement == "diskprobe_smart_attr":
        return f"diskprobe_smart_attr id={point.tags.get('id')}"
    return point.measurement


def golden_by_key(points: list[Point]) -> dict[str, Point]:
    keyed = {golden_key(point): point for point in points}
    assert len(keyed) == len(points), "two lines with the same measurement and attribute id"
    return keyed


def golden_differences(expected: Point, actual: Point) -> frozenset[str]:
    """The tags and fields that differ; type() as well: 1, 1.0 and True are not equal here."""
    out = set()
    for kind, want, got in (
        ("tag", expected.tags, actual.tags),
        ("field", expected.fields, actual.fields),
    ):
        for name in set(want) | set(got):
            missing = name not in want or name not in got
            if missing or (type(want[name]), want[name]) != (type(got[name]), got[name]):
                out.add(f"{kind}:{name}")
    if expected.time_ns != actual.time_ns:
        out.add("timestamp")
    return frozenset(out)
