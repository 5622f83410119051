"""The fill-rate forecast on synthetic series whose true answer is known."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.compute.forecast import TEN_YEARS_SEC, ForecastWindow, forecast

GB = 1e9


def test_steady_fill_gives_rate_and_time_to_full() -> None:
    samples = [(t, 100 * GB - 1e6 * t) for t in range(0, 3600, 60)]  # 1 MB/s
    result = forecast(samples, 6)
    assert result is not None
    assert result.fill_rate == pytest.approx(1e6)
    assert result.time_to_full == pytest.approx(samples[-1][1] / 1e6)


def _sawtooth(
    write: float, delete: float, rate: float, cycles: int, step: float = 10.0
) -> list[tuple[float, float]]:
    """Checkpoint rotation: write `write` bytes at `rate`, delete `delete` at once, repeat."""
    samples, available, t = [], 500 * GB, 0.0
    for _ in range(cycles):
        written = 0.0
        while written < write:
            samples.append((t, available))
            available -= rate * step
            written += rate * step
            t += step
        available += delete
    return samples


def test_sawtooth_follows_net_growth_not_each_tooth() -> None:
    # write 10 GB at 100 MB/s, delete 8 GB: net 2 GB per 100 s cycle = 20 MB/s.
    samples = _sawtooth(10 * GB, 8 * GB, 100e6, cycles=12)
    result = forecast(samples, 6)
    assert result is not None and result.time_to_full is not None
    assert result.fill_rate == pytest.approx(20e6, rel=0.10)
    assert result.time_to_full == pytest.approx(samples[-1][1] / 20e6, rel=0.10)


@pytest.mark.parametrize("phase", range(6))
def test_sawtooth_estimate_is_stable_across_window_phase(phase: int) -> None:
    # Six samples per tooth (3 GB at 500 MB per 10 s step); windows of 8 teeth, shifted.
    samples = _sawtooth(3 * GB, 2 * GB, 50e6, cycles=12)[phase : phase + 48]
    result = forecast(samples, 6)
    assert result is not None
    assert result.fill_rate == pytest.approx(50e6 / 3, rel=0.2)


def test_flat_volume_has_zero_rate_and_no_time_to_full() -> None:
    result = forecast([(float(t), 50 * GB) for t in range(20)], 6)
    assert result is not None and result.fill_rate == 0.0 and result.time_to_full is None


def test_shrinking_volume_has_no_forecast() -> None:
    assert forecast([(float(t), 50 * GB + 1e6 * t) for t in range(20)], 6) is None


def test_big_cleanup_restarts_the_trend() -> None:
    filling = [(float(t), 10 * GB - 1e7 * t) for t in range(0, 300, 10)]
    cleaned = [(300.0 + t, 60 * GB - 2e7 * t) for t in range(0, 100, 10)]
    result = forecast(filling + cleaned, 6)
    assert result is not None and result.fill_rate == pytest.approx(2e7)


def test_not_enough_samples() -> None:
    assert forecast([(float(t), 1e9 - t) for t in range(5)], 6) is None


def test_forecast_beyond_ten_years_is_omitted() -> None:
    result = forecast([(float(t), 1e15 - 0.001 * t) for t in range(0, 600, 60)], 6)
    assert result is not None and result.fill_rate > 0 and result.time_to_full is None
    assert 1e15 / result.fill_rate > TEN_YEARS_SEC


def test_noisy_series_without_trend_is_not_trusted() -> None:
    values = [5e9, 5.2e9, 4.9e9, 5.1e9, 5.3e9, 4.95e9, 5.25e9, 5.05e9, 5.15e9, 5.0e9]
    result = forecast(list(zip(map(float, range(10)), values)), 6)
    assert result is None or result.time_to_full is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1e9, allow_nan=False),
            st.floats(-1e18, 1e18, allow_nan=False, allow_infinity=False),
        ),
        max_size=40,
    )
)
def test_never_nan_or_infinite(points: list[tuple[float, float]]) -> None:
    result = forecast(sorted(points), 2)
    if result is not None:
        assert math.isfinite(result.fill_rate) and result.fill_rate >= 0
        assert result.time_to_full is None or 0 <= result.time_to_full <= TEN_YEARS_SEC


def test_window_slides_thins_and_survives_clock_jumps() -> None:
    window = ForecastWindow(3600.0)  # resolution 10 s
    for t in range(0, 7200, 2):
        window.add(float(t), 1e9 - t)
    assert ForecastWindow.MAX_POINTS - 2 <= len(window.points) <= ForecastWindow.MAX_POINTS + 1
    spacing = [b[0] - a[0] for a, b in zip(window.points, window.points[1:-1])]
    assert min(spacing) >= window.resolution
    assert window.points[0][0] >= 7198 - 3600 and window.points[-1] == [7198.0, 1e9 - 7198]
    window.add(100.0, 5.0)  # wall clock stepped back: start over
    assert window.points == [[100.0, 5.0]]


def test_window_works_on_the_state_list_in_place() -> None:
    stored: list[list[float]] = []
    window = ForecastWindow(60.0, stored)
    window.add(1.0, 2.0)
    assert stored == [[1.0, 2.0]]


def test_time_to_full_counts_from_the_highest_usage_not_just_after_a_delete() -> None:
    # Right after a delete the next peak still starts from the last one: the forecast must
    # not jump later by a tooth's height / net rate.
    samples = _sawtooth(10 * GB, 8 * GB, 100e6, cycles=12)
    before = forecast(samples, 6)
    after = forecast([*samples, (samples[-1][0] + 1, samples[-1][1] + 8 * GB)], 6)
    assert before is not None and after is not None
    assert before.time_to_full is not None and after.time_to_full is not None
    assert after.time_to_full == pytest.approx(before.time_to_full, rel=0.05)
