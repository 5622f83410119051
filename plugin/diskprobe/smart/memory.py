"""What diskprobe remembers about drives across reads and restarts (in the state file).

- identity per device tag: a drive left asleep by `-n standby` says nothing, so its point
  carries the model and serial it had when last awake;
- baselines: the first values of the defect counters seen for each drive, keyed by model and
  serial (device names move across reboots), so "grew since baseline" survives restarts.
  Masked serials ("REDACTED", "XXXX", "--") identify nothing: no baseline;
- growth histories: each defect counter's change points over `[smart] growth_window`
  (compute/growth.py), for the *_per_day rates and "grew within the last day". A drive with
  a masked serial keeps its history under its device name (a swap of drives between names
  shows as a change, not as silence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from diskprobe.compute import growth
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.verdict import GROWTH_COUNTERS
from diskprobe.state import StateStore
from diskprobe.state_sections import dict_of, finite_number, plain_int

PLACEHOLDER_SERIAL = re.compile(
    r"^(redacted|[x0*?.\-\s]+|n/?a|none|unknown|yes|default|to be filled.*)$", re.IGNORECASE
)
IDENTITY = ("model", "serial", "protocol", "media")


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _history(value: Any) -> bool:
    """[[time_s, value], ...] with finite numbers: what compute.growth keeps."""
    return isinstance(value, list) and len(value) <= growth.MAX_POINTS and all(
        isinstance(point, list) and len(point) == 2 and all(map(finite_number, point))
        for point in value
    )


@dataclass
class Trend:
    """A drive's growth as the verdict and the point need it."""

    increases: dict[str, int] = field(default_factory=dict)  # since the drive's baseline
    last_day: dict[str, int] = field(default_factory=dict)  # within the last 24 h
    per_day: dict[str, float] = field(default_factory=dict)  # over the growth window


class DriveMemory:
    def __init__(self, state: StateStore) -> None:
        # "model|serial" -> {counter: first value}; device tag -> {identity key: text}
        self._baselines: dict[str, Any] = state.section("smart_baselines", dict_of(plain_int))
        self._last: dict[str, Any] = state.section("smart_last", dict_of(_text))
        self._histories: dict[str, Any] = state.section("smart_growth", dict_of(_history))

    def remember_identity(self, health: DriveHealth) -> None:
        """Store an awake drive's identity; fill a silent one's from what was stored."""
        known = self._last.get(health.device)
        if health.serial:
            self._last[health.device] = {key: getattr(health, key) for key in IDENTITY}
        elif isinstance(known, dict):
            for key in IDENTITY:
                if not getattr(health, key) and isinstance(known.get(key), str):
                    setattr(health, key, known[key])

    def trend(self, health: DriveHealth, now_s: float, window_s: float) -> Trend:
        """Record this read's defect counters; their growth since baseline, in the last day
        and per day over the window."""
        trend = Trend(increases=self.increases(health))
        key = _identity_key(health) or f"device:{health.device}"
        histories = self._histories.setdefault(key, {})
        for name in GROWTH_COUNTERS:
            value = health.counters.get(name)
            if value is None:
                continue
            history = growth.record(histories.get(name, []), now_s, value, window_s)
            histories[name] = history
            trend.last_day[name] = growth.growth_since(history, now_s, growth.DAY_S)
            rate = growth.per_day(history, now_s, window_s)
            if rate is not None:
                trend.per_day[name] = rate
        return trend

    def increases(self, health: DriveHealth) -> dict[str, int]:
        """Growth of the defect counters since the first values seen for this drive."""
        key = _identity_key(health)
        if key is None:
            return {}
        baseline = self._baselines.setdefault(key, {})
        increases = {}
        for name in GROWTH_COUNTERS:
            value = health.counters.get(name)
            if value is None:
                continue
            first = baseline.setdefault(name, value)
            if not isinstance(first, int) or isinstance(first, bool):
                first = baseline[name] = value
            increases[name] = max(0, value - first)
        return increases


def _identity_key(health: DriveHealth) -> str | None:
    """"model|serial", or None where the serial identifies nothing."""
    if not health.serial or PLACEHOLDER_SERIAL.match(health.serial):
        return None
    return f"{health.model}|{health.serial}"
