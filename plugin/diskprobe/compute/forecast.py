"""How fast a volume fills and when it will be full, robust to checkpoint-rotation sawtooths.

Method ("upper-envelope least squares"), per series of (time, available) samples in the window:
1. keep the samples from the emptiest moment of the window onward (the last maximum of
   `available`), so a big clean-up restarts the trend instead of hiding it;
2. replace each sample by the running minimum of `available` so far: the highest usage seen,
   an envelope that ignores the teeth (write 10 GB, delete 8 GB) and rises by the net growth;
3. least-squares slope of that envelope over time: the fill rate; R^2 of the same fit says
   whether the trend is steady enough to trust.
Cost: forecast() is O(n) (n <= the stored window, see MAX_POINTS); ForecastWindow keeps the
same fit up to date in O(1) amortized per sample (compute.forecast_fit), which is what makes
full windows affordable at thousands of mounts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from diskprobe.compute.forecast_fit import FitTrack

TEN_YEARS_SEC = 10 * 365.25 * 86400
MIN_R_SQUARED = 0.6


@dataclass(frozen=True)
class Forecast:
    fill_rate: float  # units per second; > 0 while filling, 0.0 when flat
    time_to_full: float | None  # seconds until `available` reaches 0; None if untrustworthy


def _least_squares(times: Sequence[float], values: Sequence[float]) -> tuple[float, float] | None:
    """(slope, R^2) of the least-squares line, None when time does not vary."""
    count = len(times)
    mean_t = sum(times) / count
    mean_v = sum(values) / count
    s_tt = s_tv = s_vv = 0.0
    for t, v in zip(times, values):
        dt, dv = t - mean_t, v - mean_v
        s_tt += dt * dt
        s_tv += dt * dv
        s_vv += dv * dv
    if s_tt <= 0:
        return None
    slope = s_tv / s_tt
    r_squared = (s_tv * s_tv) / (s_tt * s_vv) if s_vv > 0 else 1.0
    return slope, r_squared


def forecast(samples: Sequence[tuple[float, float]], min_samples: int) -> Forecast | None:
    """Forecast from (time_sec, available) samples in time order; None without enough data."""
    if len(samples) < min_samples:
        return None
    peak = max(range(len(samples)), key=lambda i: samples[i][1])  # first emptiest moment
    recent = samples[peak:]
    if len(recent) < min_samples:
        return None  # emptiest moment is too recent: not filling, or just cleaned up
    times, envelope = [], []
    lowest = recent[0][1]
    for t, available in recent:
        lowest = min(lowest, available)
        times.append(t)
        envelope.append(lowest)
    fit = _least_squares(times, envelope)
    if fit is None:
        return None
    slope, r_squared = fit
    # From the highest usage seen, not the current one: right after a delete the next peak
    # still starts from there, so counting from "now" would be late by a tooth's height.
    return _result(slope, r_squared, min(recent[-1][1], lowest))


def _result(slope: float, r_squared: float, available: float) -> Forecast:
    fill_rate = max(0.0, -slope)
    time_to_full = None
    if fill_rate > 0 and r_squared >= MIN_R_SQUARED:
        seconds = max(0.0, available) / fill_rate
        if seconds <= TEN_YEARS_SEC:
            time_to_full = seconds
    return Forecast(fill_rate=fill_rate, time_to_full=time_to_full)


class ForecastWindow:
    """A sliding window of samples for one series, thinned to at most `max_points` points
    (MAX_POINTS unless the caller must bound many windows' memory; see the fs collector).

    `points` (the state file's list) must change only through add(): the incremental fit
    (compute.forecast_fit) follows every change it makes. The collector makes a window per
    collect on the same list and hands it the list's `track` from the last one; a track of
    another list, or of one changed behind add()'s back (length or end points), is rebuilt.
    """

    MAX_POINTS = 360

    def __init__(
        self,
        window_sec: float,
        points: list[Sequence[float]] | None = None,
        track: FitTrack | None = None,
        max_points: int = MAX_POINTS,
        *,
        tuples: bool = False,
    ) -> None:
        self.window_sec = window_sec
        self.resolution = window_sec / max_points
        self.points: list[Sequence[float]] = points if points is not None else []
        # New points as (t, value) tuples rather than the [t, value] lists json.load gives:
        # the cyclic GC untracks a tuple of floats once it has seen it, while every full
        # collection walked the lists (200,000 of them at 2,000 mounts: 60 ms per collect).
        self.tuples = tuples
        if track is None or track.points is not self.points or not track.matches():
            track = FitTrack(self.points)
        self.track = track  # the caller keeps it for the next window on the same list

    def add(self, t: float, value: float) -> None:
        points, track = self.points, self.track
        if points and t < points[-1][0]:
            points.clear()  # the clock went backwards: start over rather than fit nonsense
            track.cleared()
        # The newest point floats: later samples replace it until it lies one resolution step
        # past the point before it, so stored points are at least that far apart.
        point = (t, value) if self.tuples else [t, value]
        if len(points) >= 2 and points[-1][0] - points[-2][0] < self.resolution:
            points[-1] = point
        else:
            points.append(point)
            if len(points) >= 2:
                track.appended()
        cutoff = t - self.window_sec
        while points and points[0][0] < cutoff:
            track.popped(points.pop(0))
        track.remember()

    def forecast(self, min_samples: int) -> Forecast | None:
        """forecast(points, min_samples), equal up to rounding, in O(1)."""
        fit = self.track.fit(min_samples)
        if fit is None:
            return None
        m_tt, m_te, m_ee, lowest, flat = fit
        if m_tt <= 0:
            return None  # time does not vary
        if flat:  # exactly what the full fit finds for a constant envelope
            return _result(0.0, 1.0, lowest)
        r_squared = (m_te * m_te) / (m_tt * m_ee) if m_ee > 0 else 1.0
        return _result(m_te / m_tt, r_squared, lowest)
