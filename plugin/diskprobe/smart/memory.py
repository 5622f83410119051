"""What diskprobe remembers about drives across reads and restarts (in the state file).

- identity per device tag: a drive left asleep by `-n standby` says nothing, so its point
  carries the model and serial it had when last awake;
- baselines: the first values of Backblaze's five predictors seen for each drive, keyed by
  model and serial (device names move across reboots), so "grew since baseline" survives
  restarts. Masked serials ("REDACTED", "XXXX", "--") identify nothing: no baseline.
"""

from __future__ import annotations

import re
from typing import Any

from diskprobe.smart.model import DriveHealth
from diskprobe.smart.verdict import BACKBLAZE_FIVE
from diskprobe.state import StateStore
from diskprobe.state_sections import dict_of, plain_int

PLACEHOLDER_SERIAL = re.compile(
    r"^(redacted|[x0*?.\-\s]+|n/?a|none|unknown|yes|default|to be filled.*)$", re.IGNORECASE
)
IDENTITY = ("model", "serial", "protocol", "media")


def _text(value: Any) -> bool:
    return isinstance(value, str)


class DriveMemory:
    def __init__(self, state: StateStore) -> None:
        # "model|serial" -> {counter: first value}; device tag -> {identity key: text}
        self._baselines: dict[str, Any] = state.section("smart_baselines", dict_of(plain_int))
        self._last: dict[str, Any] = state.section("smart_last", dict_of(_text))

    def remember_identity(self, health: DriveHealth) -> None:
        """Store an awake drive's identity; fill a silent one's from what was stored."""
        known = self._last.get(health.device)
        if health.serial:
            self._last[health.device] = {key: getattr(health, key) for key in IDENTITY}
        elif isinstance(known, dict):
            for key in IDENTITY:
                if not getattr(health, key) and isinstance(known.get(key), str):
                    setattr(health, key, known[key])

    def increases(self, health: DriveHealth) -> dict[str, int]:
        """Growth of the Backblaze five since the first values seen for this drive."""
        if not health.serial or PLACEHOLDER_SERIAL.match(health.serial):
            return {}
        baseline = self._baselines.setdefault(f"{health.model}|{health.serial}", {})
        increases = {}
        for name in BACKBLAZE_FIVE:
            value = health.counters.get(name)
            if value is None:
                continue
            first = baseline.setdefault(name, value)
            if not isinstance(first, int) or isinstance(first, bool):
                first = baseline[name] = value
            increases[name] = max(0, value - first)
        return increases
