"""Growth of defect counters (compute/growth.py) and the drive memory that keeps it across
restarts (smart/memory.py, state file section "smart_growth"), on a real StateStore."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from diskprobe.compute import growth
from diskprobe.compute.growth import DAY_S, MAX_POINTS, History
from diskprobe.log import Logger
from diskprobe.smart.memory import DriveMemory
from diskprobe.smart.verdict import GROWTH_COUNTERS
from diskprobe.state import StateStore
from smart_golden import golden_health

GOLDEN = Path(__file__).parent / "golden"
WEEK = 7 * DAY_S  # [smart] growth_window's default
T0 = 1_700_000_000.0  # wall-clock seconds, as the collector passes them


def _recorded(points: list[tuple[float, int]], window_s: float = WEEK) -> History:
    """A history as successive reads build it."""
    history: History = []
    for now, value in points:
        history = growth.record(history, now, value, window_s)
    return history


def test_record_keeps_only_change_points() -> None:
    reads = [(T0 + day * DAY_S, value) for day, value in enumerate([0, 0, 0, 1, 1, 3, 3])]
    assert _recorded(reads) == [[T0, 0.0], [T0 + 3 * DAY_S, 1.0], [T0 + 5 * DAY_S, 3.0]]


def test_record_drops_points_before_the_window_but_keeps_the_one_it_starts_from() -> None:
    days = [(0, 0), (1, 1), (2, 2), (5, 3)]  # a 2-day window ending at day 5 starts at day 3
    history = _recorded([(T0 + d * DAY_S, v) for d, v in days], window_s=2 * DAY_S)
    assert history == [[T0 + 2 * DAY_S, 2.0], [T0 + 5 * DAY_S, 3.0]]
    assert growth.value_at(history, T0 + 3 * DAY_S) == 2.0  # the value at the window's start


def test_record_is_bounded_by_max_points() -> None:
    history = _recorded([(T0 + i * 60.0, i) for i in range(1000)])  # 1,000 changes in 17 h
    assert len(history) == MAX_POINTS and history[-1] == [T0 + 999 * 60.0, 999.0]


def test_per_day_over_a_week() -> None:
    history = _recorded([(T0 + day * DAY_S, day) for day in range(8)])  # 0 -> 7 over 7 days
    assert growth.per_day(history, T0 + 7 * DAY_S, WEEK) == 1.0
    # A day later without change: the window starts at day 1 (value 1), so 6 in 7 days.
    history = growth.record(history, T0 + 8 * DAY_S, 7, WEEK)
    assert growth.per_day(history, T0 + 8 * DAY_S, WEEK) == pytest.approx(6 / 7)


def test_a_span_shorter_than_a_day_counts_as_a_day() -> None:
    history = _recorded([(T0, 0), (T0 + 60.0, 1)])  # one new sector a minute after start-up
    assert growth.per_day(history, T0 + 60.0, WEEK) == 1.0  # not 1,440/d


def test_a_clock_stepped_backwards_gives_no_negative_span_and_no_crash() -> None:
    history = _recorded([(T0 + 10 * DAY_S, 0), (T0 + 11 * DAY_S, 4)])
    now = T0 + 5 * DAY_S  # NTP stepped the clock back six days: before every point
    assert growth.per_day(history, now, WEEK) == 4.0  # a span of at least a day, never < 0
    history = growth.record(history, now, 6, WEEK)  # and a change read at that time
    rate = growth.per_day(history, now, WEEK)
    assert rate is not None and math.isfinite(rate) and rate >= 0
    assert growth.growth_since(history, now, DAY_S) == 6  # grew since the oldest value known


def test_pending_sectors_decreasing_give_a_negative_net_rate() -> None:
    # Pending sectors fall when the drive rewrites (or remaps) them: 5, then 2 on day 3.
    history = _recorded([(T0, 5), (T0 + 3 * DAY_S, 2)])
    assert growth.per_day(history, T0 + 7 * DAY_S, WEEK) == pytest.approx(-3 / 7)
    assert growth.growth_since(history, T0 + 3 * DAY_S, DAY_S) == 0  # a fall is no growth


def test_growth_since_the_last_day() -> None:
    history = _recorded([(T0, 0), (T0 + 6.5 * DAY_S, 2), (T0 + 7 * DAY_S, 3)])
    assert growth.growth_since(history, T0 + 7 * DAY_S, DAY_S) == 3  # from 0 at day 6
    assert growth.growth_since(history, T0 + 7.6 * DAY_S, DAY_S) == 1  # from 2 at day 6.6
    assert growth.growth_since(history, T0 + 8 * DAY_S, DAY_S) == 0
    assert growth.growth_since([], T0, DAY_S) == 0 and growth.per_day([], T0, WEEK) is None


# -- DriveMemory.trend on a real state file ----------------------------------------------------


_golden = golden_health


def _store(path: Path) -> tuple[StateStore, io.StringIO]:
    log = io.StringIO()
    env = {"XDG_STATE_HOME": str(path.parent / "xdg")}
    return StateStore(str(path), Logger(log), 0.0, env=env), log


def _warnings(log: io.StringIO) -> list[str]:
    return [line for line in log.getvalue().splitlines() if line.startswith("W! ")]


HDD = "smart-json/ata-hdd-megaraid-seagate-st6000nm0115"  # serial ZAD2C11G, all counters 0
KEY = "ST6000NM0115-1YZ110|ZAD2C11G"


def test_history_and_rate_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    health = _golden(HDD)
    assert f"{health.model}|{health.serial}" == KEY and health.counters["pending_sectors"] == 0
    store, log = _store(path)
    memory = DriveMemory(store)
    first = memory.trend(health, T0, WEEK)
    assert set(first.per_day) == {n for n in GROWTH_COUNTERS if n in health.counters}
    assert not any(first.increases.values()) and not any(first.last_day.values())
    health.counters["pending_sectors"] = 2  # two pending sectors a day later
    second = memory.trend(health, T0 + DAY_S, WEEK)
    assert second.increases["pending_sectors"] == second.last_day["pending_sectors"] == 2
    assert second.per_day["pending_sectors"] == 2.0
    store.save(force=True)
    store.close()  # the process ends; a new one reads the file
    saved = json.loads(path.read_text())["sections"]["smart_growth"][KEY]["pending_sectors"]
    assert saved == [[T0, 0.0], [T0 + DAY_S, 2.0]]
    again, log = _store(path)
    third = DriveMemory(again).trend(health, T0 + 3 * DAY_S, WEEK)
    assert third.increases["pending_sectors"] == 2  # the baseline survived
    assert third.last_day["pending_sectors"] == 0  # nothing new within the last day
    assert third.per_day["pending_sectors"] == pytest.approx(2 / 3)  # 2 over 3 days
    assert log.getvalue() == ""


def test_a_drive_whose_serial_identifies_nothing_keeps_its_history_by_device(
    tmp_path: Path,
) -> None:
    health = _golden("smart-text/failing-ata-hdd-hitachi-hds721010cla632-passed")
    assert health.serial == "" and health.counters["pending_sectors"] == 29  # anonymised
    store, _ = _store(tmp_path / "state.json")
    memory = DriveMemory(store)
    memory.trend(health, T0, WEEK)
    health.counters["pending_sectors"] = 31  # two more an hour later
    trend = memory.trend(health, T0 + 3600.0, WEEK)
    assert trend.increases == {} and trend.last_day["pending_sectors"] == 2
    assert trend.per_day["pending_sectors"] == 2.0
    assert list(store.sections["smart_growth"]) == ["device:sda"]


def _hostile_store(tmp_path: Path, section: Any) -> tuple[DriveMemory, StateStore, io.StringIO]:
    path = tmp_path / "state.json"
    sections = {"smart_growth": section}
    path.write_text(json.dumps({"format": "diskprobe-state", "version": 1, "sections": sections}))
    store, log = _store(path)
    return DriveMemory(store), store, log


HOSTILE: dict[str, Any] = {
    "nan-time": {"pending_sectors": [[math.nan, 1.0]]},  # json.dumps writes NaN, json reads it
    "infinite-value": {"pending_sectors": [[T0, math.inf]]},
    "string-history": {"pending_sectors": "0"},
    "string-point": {"pending_sectors": [["yesterday", 1]]},
    "three-numbers": {"pending_sectors": [[T0, 1.0, 2.0]]},
    "bool-time": {"pending_sectors": [[True, 1]]},
    "nested": {"pending_sectors": [[[T0], [1.0]]]},
    "history-not-in-a-dict": [[T0, 1.0]],
    "a-number": 7,
}


def test_hostile_smart_growth_entries_are_dropped_with_one_warning(tmp_path: Path) -> None:
    kept = {"pending_sectors": [[T0, 0.0]]}  # this drive's real history, as a day ago
    memory, store, log = _hostile_store(tmp_path, {**HOSTILE, KEY: kept})
    health = _golden(HDD)
    health.counters["pending_sectors"] = 2
    trend = memory.trend(health, T0 + DAY_S, WEEK)
    warnings = _warnings(log)
    assert len(warnings) == 1 and "smart_growth" in warnings[0], log.getvalue()
    assert f"dropped {len(HOSTILE)} malformed entries" in warnings[0]
    assert list(store.sections["smart_growth"]) == [KEY]
    assert trend.last_day["pending_sectors"] == 2 and trend.per_day["pending_sectors"] == 2.0
    memory.trend(health, T0 + 2 * DAY_S, WEEK)
    assert len(_warnings(log)) == 1  # once, not on every read


@pytest.mark.parametrize("section", [[[T0, 1.0]], "smart_growth", 42, None])
def test_a_smart_growth_section_that_is_no_object_is_rebuilt(tmp_path: Path, section: Any) -> None:
    memory, store, log = _hostile_store(tmp_path, section)
    trend = memory.trend(_golden(HDD), T0, WEEK)
    assert trend.per_day["pending_sectors"] == 0.0 and trend.last_day["pending_sectors"] == 0
    assert len(_warnings(log)) == (0 if section is None else 1), log.getvalue()
    assert list(store.sections["smart_growth"]) == [KEY]


# A history longer than record() ever keeps (MAX_POINTS) was not written by diskprobe: it is
# dropped at load (was a bug: 100,000 points per counter were kept and saved again for every
# drive that is never read again).
def test_a_huge_smart_growth_history_is_dropped_with_one_warning(tmp_path: Path) -> None:
    huge = {"pending_sectors": [[T0 - i, 0.0] for i in range(100_000, 0, -1)]}
    memory, store, log = _hostile_store(tmp_path, {"GONE|DRIVE": huge, KEY: huge})
    trend = memory.trend(_golden(HDD), T0, WEEK)
    assert trend.per_day["pending_sectors"] == 0.0
    assert len(_warnings(log)) == 1, log.getvalue()
    assert "GONE|DRIVE" not in store.sections["smart_growth"]
