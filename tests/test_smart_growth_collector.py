"""Growth per day through the real SMART collector: a hard drive whose pending sectors grow
day by day, read by the fake smartctl on a fake wall clock, across a restart.

The drive is tests/golden/smart-json/ata-hdd-wdc-wuh721816ale6l4-windows (corpus
smartctl-json, pySMART/ Scrutiny captures, see its PROVENANCE): its 197 Current_Pending_Sector
raw value is rewritten per "day" in a copy (DERIVED, marked in the copy).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import SmartConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.state import StateStore
from smart_harness import FAKE_SMARTCTL, GOLDEN_JSON, call_device, install_case, read_calls

from helpers import FakeClock

DRIVE = "ata-hdd-wdc-wuh721816ale6l4-windows"
DEVICE = "/dev/sda -d sat"
DAY_NS = 86_400 * 10**9
START_NS = 1_800_000_000 * 10**9


class WallClock:
    def __init__(self) -> None:
        self.now_ns = START_NS

    def __call__(self) -> int:
        return self.now_ns


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "fake"
    root.mkdir()
    monkeypatch.setenv("FAKE_SMARTCTL_DIR", str(root))
    case = install_case(GOLDEN_JSON / DRIVE, root)
    (case / "device").write_text(DEVICE + "\n", encoding="utf-8")
    yield case


def set_pending(case: Path, pending: int, serial: str | None = None) -> None:
    path = case / "response.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for row in data["ata_smart_attributes"]["table"]:
        if row["id"] == 197:
            row["raw"] = {"value": pending, "string": str(pending)}
    if serial is not None:
        data["serial_number"] = serial
    data["_derived"] = f"DERIVED for a test from {DRIVE}: 197 raw -> {pending}"
    path.write_text(json.dumps(data), encoding="utf-8")


class Rig:
    def __init__(self, state_path: Path, wall: WallClock) -> None:
        self.mono = FakeClock()
        self.log = io.StringIO()
        self.state = StateStore(str(state_path), Logger(self.log), save_interval=0.0)
        config = SmartConfig(smartctl_path=str(FAKE_SMARTCTL), devices=[DEVICE])
        clock = Clock(monotonic=self.mono, wall_ns=wall)
        context = CollectorContext(log=Logger(self.log), state=self.state, clock=clock)
        self.collector = SmartCollector(config, context, blocking=True)

    def read(self) -> Metric:
        self.mono.now += 1801  # past [smart] interval: a new read
        points = [m for m in self.collector.collect().metrics if m.measurement == "diskprobe_smart"]
        assert len(points) == 1
        return points[0]

    def close(self) -> None:
        self.state.save(force=True)
        self.collector.close()


def test_pending_sectors_growing_two_a_day_read_as_2_per_day_and_survive_a_restart(
    fake: Path, tmp_path: Path
) -> None:
    wall, state = WallClock(), tmp_path / "state.json"
    rig = Rig(state, wall)
    seen = []
    for day, pending in enumerate((0, 2, 4, 6)):
        wall.now_ns = START_NS + day * DAY_NS
        set_pending(fake, pending)
        seen.append(rig.read())
    rig.close()
    assert [p.fields["pending_sectors"] for p in seen] == [0, 2, 4, 6]
    # Day 0: no growth yet; then 2, 4, 6 sectors over 1, 2, 3 days.
    assert [p.fields["pending_sectors_per_day"] for p in seen] == [0.0, 2.0, 2.0, 2.0]
    assert seen[0].fields["verdict"] == "ok"
    last = seen[-1]
    reasons = str(last.fields["verdict_reasons"]).split(",")
    # 3..6 pending: 68.24 %/year in the table (a warning under the 100 % fail limit).
    assert last.fields["afr_percent"] == 68.24
    assert (last.fields["verdict"], reasons) == (
        "warn",
        ["pending_sectors=6", "afr_percent=68.24(pending_sectors=6)", "pending_sectors_increase=6"],
    )
    # One smartctl read per drive per day, and nothing else but --version.
    reads = [argv for argv in read_calls(fake.parent) if call_device(argv)]
    assert len(reads) == 4

    # A restart four days later: the history came back from the state file.
    restarted = Rig(state, wall)
    wall.now_ns = START_NS + 7 * DAY_NS
    after = restarted.read()
    restarted.close()
    assert after.fields["pending_sectors_per_day"] == pytest.approx(6 / 7)
    assert after.fields["pending_sectors_increase"] == 6
    saved = json.loads(state.read_text(encoding="utf-8"))["sections"]["smart_growth"]
    history = saved[f"{last.tags['model']}|{last.tags['serial']}"]["pending_sectors"]
    assert [value for _, value in history] == [0, 2, 4, 6]  # change points only


def test_a_drive_whose_serial_is_masked_warns_on_growth_within_a_day(
    fake: Path, tmp_path: Path
) -> None:
    wall = WallClock()
    rig = Rig(tmp_path / "state.json", wall)
    set_pending(fake, 0, serial="REDACTED")  # no baseline for a serial that names nothing
    first = rig.read()
    wall.now_ns += DAY_NS // 2
    set_pending(fake, 2, serial="REDACTED")
    grown = rig.read()
    wall.now_ns += 2 * DAY_NS  # two quiet days later the day's growth is gone; the level stays
    held = rig.read()
    rig.close()
    assert first.fields["verdict"] == "ok"
    assert "pending_sectors_growth_24h=2" in str(grown.fields["verdict_reasons"]).split(",")
    assert "pending_sectors_growth_24h" not in str(held.fields["verdict_reasons"])
    assert held.fields["pending_sectors_per_day"] == pytest.approx(2 / 2.5)
