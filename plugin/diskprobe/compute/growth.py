"""Growth of a drive's defect counters over time, from a short history of change points.

A history is a list of [time_s, value] pairs, oldest first, holding only the points where the
value changed (plus the first): a counter that holds still for years costs one pair, so
thousands of drives fit the state file. Times are wall-clock seconds (the history outlives
the process); a clock stepped backwards never yields a negative span.
"""

from __future__ import annotations

DAY_S = 86_400.0
MAX_POINTS = 64  # change points kept per counter beyond the window's start (bounded state)

History = list[list[float]]  # [[time_s, value], ...]: JSON-friendly, as the state file holds it


def record(history: History, now: float, value: int, window_s: float) -> History:
    """`history` with `value` seen at `now`; points older than the window's start dropped,
    except the last one before it (the value the window starts from)."""
    if not history or history[-1][1] != value:
        history = [*history, [now, float(value)]]
    start = now - window_s
    before = [i for i, (time_s, _) in enumerate(history) if time_s <= start]
    if before:
        history = history[before[-1] :]
    return history[-MAX_POINTS:]


def value_at(history: History, when: float) -> float | None:
    """The value the counter had at `when`: the last change at or before it, else the first."""
    if not history:
        return None
    earlier = [value for time_s, value in history if time_s <= when]
    return earlier[-1] if earlier else history[0][1]


def per_day(history: History, now: float, window_s: float) -> float | None:
    """Net change per day over the window (the window's start, or the first point if later);
    a span shorter than a day counts as a day, so one new sector a minute after start-up is
    1/d, not 1,440/d."""
    if not history:
        return None
    start = max(now - window_s, history[0][0])
    then, current = value_at(history, start), history[-1][1]
    if then is None:
        return None
    span_days = max((now - start) / DAY_S, 1.0)
    return (current - then) / span_days


def growth_since(history: History, now: float, seconds: float) -> int:
    """How much the counter grew in the last `seconds` (0 when it held or fell)."""
    then = value_at(history, now - seconds)
    if then is None:
        return 0
    return max(0, int(history[-1][1] - then))
