"""The [io] rule across fields: fail_slow_window must hold enough intervals to judge a device
(a device turns fail-slow only on several distinct intervals: compute/failslow.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diskprobe.config.errors import ConfigError
from diskprobe.durations import format_duration

if TYPE_CHECKING:
    from diskprobe.config import AgentConfig

MIN_INTERVALS_PER_WINDOW = 10


def check_fail_slow_window(config: AgentConfig, where: str) -> None:
    io = config.io
    interval = io.interval if io.interval is not None else config.interval
    if not io.enabled or io.fail_slow_window >= MIN_INTERVALS_PER_WINDOW * interval:
        return
    held = int(io.fail_slow_window // interval)
    raise ConfigError(
        f"{where}[io] fail_slow_window = \"{format_duration(io.fail_slow_window)}\" holds "
        f"{held} intervals of {format_duration(interval)}; fail-slow needs at least "
        f"{MIN_INTERVALS_PER_WINDOW}: lengthen fail_slow_window or shorten the interval"
    )
