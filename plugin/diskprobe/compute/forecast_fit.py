"""The forecast's fit kept up to date as a window slides: O(1) amortized per sample.

compute.forecast's method (least squares over the running minimum of `available` from the
window's last maximum on) recomputed from scratch costs O(points) per series per collect:
with full 6 h windows (360 points, two series per mount) that is 1.4 million loop steps per
collect at 2,000 mounts, several times node_exporter's whole scrape. A FitTrack follows one
window's list instead:
* all points but the newest are "settled" (the newest floats, see ForecastWindow.add);
* a monotonic deque of the settled points gives the first maximum (the fit's start);
* running (Welford) moments of the envelope from there are updated per settled point;
* the floating newest point is folded in at forecast time, on a copy.
When the fit's start slides out of the window and the next maximum is not the next point, the
envelope changes shape: the moments are recomputed (two-pass, as the full fit). They are also
recomputed every MAX_UPDATES updates, so the rounding of add/remove never builds up.
Results equal the full fit up to rounding (last bits), and exactly when the envelope is flat.
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

MAX_UPDATES = 360  # incremental updates between two exact recomputations


class Moments:
    """Count, means and centred co-moments of (time, envelope) pairs."""

    __slots__ = ("m_ee", "m_te", "m_tt", "mean_e", "mean_t", "n")

    def __init__(self) -> None:
        self.n = 0
        self.mean_t = self.mean_e = self.m_tt = self.m_te = self.m_ee = 0.0

    def add(self, t: float, e: float) -> None:
        self.n += 1
        dt, de = t - self.mean_t, e - self.mean_e
        self.mean_t += dt / self.n
        self.mean_e += de / self.n
        self.m_tt += dt * (t - self.mean_t)
        self.m_te += dt * (e - self.mean_e)
        self.m_ee += de * (e - self.mean_e)

    def remove(self, t: float, e: float) -> None:
        """The inverse of add(t, e) (Welford run backwards)."""
        self.n -= 1
        if self.n == 0:
            self.mean_t = self.mean_e = self.m_tt = self.m_te = self.m_ee = 0.0
            return
        dt, de = t - self.mean_t, e - self.mean_e
        self.mean_t -= dt / self.n
        self.mean_e -= de / self.n
        self.m_tt -= dt * (t - self.mean_t)
        self.m_te -= dt * (e - self.mean_e)
        self.m_ee -= de * (e - self.mean_e)


def exact_moments(times: list[float], envelope: list[float]) -> Moments:
    """Two-pass moments, as compute.forecast's full fit computes them."""
    moments = Moments()
    moments.n = count = len(times)
    if count:
        moments.mean_t = mean_t = sum(times) / count
        moments.mean_e = mean_e = sum(envelope) / count
        for t, e in zip(times, envelope):
            dt, de = t - mean_t, e - mean_e
            moments.m_tt += dt * dt
            moments.m_te += dt * de
            moments.m_ee += de * de
    return moments


class FitTrack:
    """The incremental fit of one window's list; ForecastWindow reports every change."""

    def __init__(self, points: list[Sequence[float]]) -> None:
        self.points = points
        self.base = 0  # absolute index of points[0]
        self.maxima: deque[int] = deque()  # settled points, values non-increasing
        self.moments = Moments()  # envelope of settled points from maxima[0] on
        self.lowest = 0.0  # the envelope's last value
        self.updates = 0
        for index in range(len(points) - 1):
            self._settle(index, rebuild=False)
        self._rebuild()
        self.remember()

    def remember(self) -> None:
        points = self.points
        self.seen = (len(points), points[0] if points else None, points[-1] if points else None)

    def matches(self) -> bool:
        """Whether the list is as ForecastWindow left it (same length, same end points)."""
        length, first, last = self.seen
        points = self.points
        return len(points) == length and (not points or (points[0] is first and points[-1] is last))

    def cleared(self) -> None:
        self.base, self.updates = 0, 0
        self.maxima.clear()
        self.moments = Moments()

    def appended(self) -> None:
        """A point was appended: the one before it settles."""
        self._settle(self.base + len(self.points) - 2, rebuild=True)

    def popped(self, dropped: Sequence[float]) -> None:
        """`dropped`, points[0], slid out of the window."""
        gone = self.base
        self.base += 1
        maxima = self.maxima
        if not maxima or maxima[0] != gone:
            return  # it was before the fit's start: the fit does not change
        maxima.popleft()
        if maxima and maxima[0] == gone + 1 and self.updates < MAX_UPDATES:
            # The next point is the new maximum: the envelope after it keeps its values
            # (all at or below it already); only the old start's term (its own value) goes.
            self.moments.remove(dropped[0], dropped[1])
            self.updates += 1
        else:
            self._rebuild()

    def _settle(self, index: int, rebuild: bool) -> None:
        t, value = self.points[index - self.base]
        maxima = self.maxima
        while maxima and self.points[maxima[-1] - self.base][1] < value:
            maxima.pop()
        maxima.append(index)
        if len(maxima) == 1:  # a new maximum: the envelope starts over here
            self.moments = Moments()
            self.moments.add(t, value)
            self.lowest = value
            self.updates = 0
            return
        if value < self.lowest:
            self.lowest = value
        self.moments.add(t, self.lowest)
        self.updates += 1
        if rebuild and self.updates >= MAX_UPDATES:
            self._rebuild()

    def _rebuild(self) -> None:
        """Exact moments of the settled envelope from the first maximum on."""
        self.updates = 0
        if not self.maxima:
            self.moments = Moments()
            return
        start = self.maxima[0] - self.base
        times, envelope = [], []
        lowest = self.points[start][1]
        for t, value in self.points[start:-1]:
            if value < lowest:
                lowest = value
            times.append(t)
            envelope.append(lowest)
        self.moments = exact_moments(times, envelope)
        self.lowest = lowest

    def fit(self, min_samples: int) -> tuple[float, float, float, float, bool] | None:
        """(m_tt, m_te, m_ee, the envelope's last value, whether the envelope is flat) with
        the newest point folded in; None when fewer than `min_samples` points follow the
        maximum. Inline rather than Moments.copy().add(): this runs per series per collect."""
        points = self.points
        if len(points) < min_samples or not self.maxima:
            return None  # no settled point: the newest one alone is its own maximum
        t, value = points[-1]
        top = points[self.maxima[0] - self.base][1]  # the envelope's first value
        moments = self.moments
        count = moments.n + 1
        if value > top or count < min_samples:
            return None  # the newest point is the maximum, or the start is too recent
        lowest = value if value < self.lowest else self.lowest
        dt, de = t - moments.mean_t, lowest - moments.mean_e
        weight = (count - 1) / count  # Moments.add's (t - new mean) is dt * weight
        return (
            moments.m_tt + dt * dt * weight,
            moments.m_te + dt * de * weight,
            moments.m_ee + de * de * weight,
            lowest,
            lowest == top,
        )
