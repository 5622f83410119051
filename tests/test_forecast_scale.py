"""ForecastWindow's incremental fit (compute.forecast_fit) against the full fit, forecast().

The window keeps the fit's moments up to date per sample instead of refitting all points each
collect; these tests hold that it answers what forecast() answers on the same points (to
rounding, exactly when flat), through floating newest points, slides past the window's edge,
big clean-ups, clock jumps, restarts from a saved list and lists replaced behind its back.
"""

from __future__ import annotations

import gc
import io
import random
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from diskprobe.collectors import filesystems
from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.filesystems import POINT_BUDGET, STATE_SECTION, FilesystemsCollector
from diskprobe.compute import forecast_fit
from diskprobe.compute.forecast import Forecast, ForecastWindow, forecast
from diskprobe.compute.mount_selection import MountTarget
from diskprobe.config import FilesystemsConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.state import MAX_BYTES, StateStore

GB = 1e9
MIN_SAMPLES = 6


def _same(incremental: Forecast | None, full: Forecast | None, where: str) -> None:
    assert (incremental is None) == (full is None), where
    if incremental is None or full is None:
        return
    assert incremental.fill_rate == pytest.approx(full.fill_rate, rel=1e-7, abs=1e-9), where
    assert (incremental.time_to_full is None) == (full.time_to_full is None), where
    if full.time_to_full is not None:
        assert incremental.time_to_full == pytest.approx(full.time_to_full, rel=1e-7), where


def _check_series(samples: Iterator[tuple[float, float]], window_sec: float, every: int = 1) -> int:
    """Feeds a window the way the collector does (a new ForecastWindow on the same list each
    sample, given the last one's track); compares with the full fit every `every` samples.
    Returns the forecasts made."""
    points: list[list[float]] = []
    made = 0
    track = None
    for index, (t, value) in enumerate(samples):
        window = ForecastWindow(window_sec, points, track)
        window.add(t, value)
        track = window.track
        if index % every:
            continue
        full = forecast([(p[0], p[1]) for p in points], MIN_SAMPLES)
        _same(window.forecast(MIN_SAMPLES), full, f"sample {index} at t={t}")
        made += full is not None
    return made


def _sawtooth(
    steps: int, write: float, delete_every: int, delete: float
) -> Iterator[tuple[float, float]]:
    available = 500 * GB
    for step in range(steps):
        yield 1.7e9 + 10.0 * step, available
        available -= write
        if step % delete_every == delete_every - 1:
            available += delete


@pytest.mark.parametrize("window_sec", [600.0, 3600.0, 6 * 3600.0])
def test_steady_fill_matches_the_full_fit_past_the_window_edge(window_sec: float) -> None:
    steps = int(2.5 * window_sec / 10)  # the window fills, then slides 1.5 windows further
    made = _check_series(((1.7e9 + 10.0 * s, 100 * GB - 1e6 * s) for s in range(steps)),
                         window_sec, every=7)  # fmt: skip
    assert made > steps // 10


@pytest.mark.parametrize(("delete_every", "delete"), [(10, 8e9), (6, 5.5e9), (30, 31e9)])
def test_sawtooth_matches_the_full_fit(delete_every: int, delete: float) -> None:
    # The third one deletes more than it wrote: every tooth is a new maximum (restart).
    made = _check_series(_sawtooth(6000, 1e9, delete_every, delete), 3600.0, every=5)
    assert made > 0


@pytest.mark.parametrize("seed", range(6))
def test_random_walks_with_cleanups_and_plateaus_match_the_full_fit(seed: int) -> None:
    rng = random.Random(seed)

    def walk() -> Iterator[tuple[float, float]]:
        t, available = 1.7e9, 200 * GB
        for _ in range(4000):
            t += rng.choice([10.0, 10.0, 10.0, 3.0, 45.0, 400.0])  # jitter, pauses
            roll = rng.random()
            if roll < 0.01:
                available += rng.uniform(1, 50) * GB  # a clean-up
            elif roll < 0.5:
                available -= rng.uniform(0, 3e8)
            elif roll < 0.6:
                available += rng.uniform(0, 3e8)
            # else: unchanged (plateau)
            yield t, float(round(available))

    _check_series(walk(), 1800.0, every=3)


def test_flat_window_gives_exactly_zero_like_the_full_fit() -> None:
    points: list[list[float]] = []
    window = ForecastWindow(3600.0, points)
    for step in range(3000):
        window = ForecastWindow(3600.0, points, window.track)
        window.add(1.7e9 + 10.0 * step, 123456789.0)
    result = window.forecast(MIN_SAMPLES)
    assert result == forecast([(p[0], p[1]) for p in points], MIN_SAMPLES)
    assert result is not None and result.fill_rate == 0.0 and result.time_to_full is None


def test_flat_after_a_fill_slides_back_to_exactly_zero() -> None:
    # The fill's moments were added and then removed one by one: rounding must not leave a
    # tiny rate where the full fit finds exactly none.
    samples = [(1.7e9 + 10.0 * s, 100 * GB - 7e6 * min(s, 500)) for s in range(2000)]
    _check_series(iter(samples), 600.0)
    points: list[list[float]] = []
    window = ForecastWindow(600.0, points)
    for t, value in samples:
        window = ForecastWindow(600.0, points, window.track)
        window.add(t, value)
    assert window.forecast(MIN_SAMPLES) == Forecast(fill_rate=0.0, time_to_full=None)


def test_clock_jumps_restart_both_the_same_way() -> None:
    samples = [(1.7e9 + 10.0 * s, 100 * GB - 1e6 * s) for s in range(300)]
    samples += [(1.7e9 - 5000 + 10.0 * s, 90 * GB - 2e6 * s) for s in range(300)]  # back
    samples += [(1.8e9 + 10.0 * s, 80 * GB - 3e6 * s) for s in range(300)]  # far ahead
    _check_series(iter(samples), 1200.0)


def test_a_saved_list_resumes_and_a_replaced_list_is_refitted() -> None:
    window_sec = 1800.0
    saved: list[list[float]] = []
    samples = list(_sawtooth(900, 1e9, 10, 8e9))
    for t, value in samples[:600]:
        ForecastWindow(window_sec, saved).add(t, value)
    resumed = [list(p) for p in saved]  # as json.load gives it back after a restart
    _check_series(iter(samples[600:]), window_sec)  # a fresh list, for reference
    window = ForecastWindow(window_sec, resumed)  # the track is built from the saved list
    for t, value in samples[600:]:
        window = ForecastWindow(window_sec, resumed, window.track)
        window.add(t, value)
        full = forecast([(p[0], p[1]) for p in resumed], MIN_SAMPLES)
        _same(window.forecast(MIN_SAMPLES), full, f"resumed at t={t}")
    resumed[-1] = [resumed[-1][0], resumed[-1][1] - 5e9]  # changed outside add()
    full = forecast([(p[0], p[1]) for p in resumed], MIN_SAMPLES)
    replaced = ForecastWindow(window_sec, resumed, window.track)  # the old track is stale
    assert replaced.track is not window.track
    _same(replaced.forecast(MIN_SAMPLES), full, "replaced")
    other = [list(p) for p in resumed]  # another list, the same points: its own track
    assert ForecastWindow(window_sec, other, replaced.track).track is not replaced.track


def test_steady_state_refits_only_every_max_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cost guarantee, counted rather than timed: once the window is full, a steady fill
    # recomputes the moments from all points only every MAX_UPDATES samples, not each one.
    calls = []
    exact = forecast_fit.exact_moments
    monkeypatch.setattr(
        forecast_fit, "exact_moments", lambda t, e: calls.append(len(t)) or exact(t, e)
    )
    points: list[list[float]] = []
    steps = 20 * ForecastWindow.MAX_POINTS
    window = ForecastWindow(3600.0, points)
    for step in range(steps):
        window = ForecastWindow(3600.0, points, window.track)  # 10 s resolution: all settle
        window.add(1.7e9 + 10.0 * step, 100 * GB - 1e6 * step)
        window.forecast(MIN_SAMPLES)
    assert len(points) >= ForecastWindow.MAX_POINTS
    assert len(calls) <= 2 * steps / forecast_fit.MAX_UPDATES + 2


def test_the_collector_keeps_each_windows_fit_across_collects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The collector makes a new ForecastWindow per collect on the state's list: unless it hands
    # the window the last collect's track, every collect refits every point (O(window)).
    built = []
    real_init = forecast_fit.FitTrack.__init__

    def counting_init(self: forecast_fit.FitTrack, points: list[list[float]]) -> None:
        built.append(len(points))
        real_init(self, points)

    monkeypatch.setattr(forecast_fit.FitTrack, "__init__", counting_init)
    now = [1000.0]
    clock = Clock(monotonic=lambda: now[0], wall_ns=lambda: int(now[0] * 1e9))
    log = Logger(io.StringIO())
    context = CollectorContext(HostRoots(), log, StateStore(str(tmp_path / "s.json"), log), clock)
    config = FilesystemsConfig(mount_points=["/"], forecast_min_samples=3, forecast_window=600.0)
    collector = FilesystemsCollector(config, context)
    for _ in range(60):
        now[0] += 10.0
        assert collector.collect().metrics
    assert len(built) == 2, built  # one track per series (space, inodes), built once


def test_many_mounts_share_a_point_budget_and_their_windows_survive_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,000 mounts with full 360-point windows were 183 MiB and a ~40 MB state file, over the
    # 16 MiB a start reads back: save() left the windows out, so every restart lost them.
    # Now all windows share POINT_BUDGET points (50 per series at 2,000 mounts). Scaled down
    # tenfold here (200 mounts, 20,000 points) to stay quick; the file size is extrapolated.
    budget, mounts = POINT_BUDGET // 10, 200
    monkeypatch.setattr(filesystems, "POINT_BUDGET", budget)
    targets = [MountTarget(f"/m{i}", "/", "/dev/x", "ext4", "rw", 8, 0) for i in range(mounts)]
    now = [1.7e9]
    clock = Clock(monotonic=lambda: now[0], wall_ns=lambda: int(now[0] * 1e9))
    log = Logger(io.StringIO())
    state_file = tmp_path / "state.json"
    state = StateStore(str(state_file), log, save_interval=1e9)
    context = CollectorContext(HostRoots(), log, state, clock)
    config = FilesystemsConfig(forecast_min_samples=3, forecast_window=3600.0)
    collector = FilesystemsCollector(config, context, targets=lambda: targets)
    per_series = budget // (2 * mounts)
    step = 24.0  # 1 point per collect at 360 points (10 s apart); 1 in 3 at 50 (72 s)
    try:
        for _ in range(148):  # 3,552 s: all in the window
            now[0] += step
            assert len(collector.collect().metrics) == mounts
    finally:
        collector.close()
    held = [len(points) for entry in state.section(STATE_SECTION).values()
            for points in entry.values()]  # fmt: skip
    assert len(held) == 2 * mounts and max(held) <= per_series + 1, (per_series, max(held))
    assert min(held) >= per_series - 2, min(held)  # thinned, not emptied
    # Nor do the points cost the cyclic GC: as tuples of floats they are untracked after a
    # pass, where every full collection walked 200,000 lists (60 ms per collect).
    gc.collect()
    windows = [
        points for entry in state.section(STATE_SECTION).values() for points in entry.values()
    ]
    tracked = [point for points in windows for point in points if gc.is_tracked(point)]
    assert not tracked, tracked[:3]
    state.save(force=True)
    state.close()
    per_point = state_file.stat().st_size / sum(held)
    assert per_point * POINT_BUDGET < MAX_BYTES / 2, per_point  # the real budget fits, twice
    restarted = StateStore(str(state_file), log).section(STATE_SECTION)
    assert restarted == _as_lists(state.section(STATE_SECTION))  # json.load gives lists


def _as_lists(section: dict[str, dict[str, list[Sequence[float]]]]) -> dict[str, Any]:
    return {path: {series: [list(point) for point in points] for series, points in entry.items()}
            for path, entry in section.items()}  # fmt: skip
