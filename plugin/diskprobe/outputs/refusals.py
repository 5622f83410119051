"""How the InfluxDB output (outputs/influxdb.py) logs the batches a server refuses for good
(HTTP 400, 413, 422): a persistent refusal, such as a field-type conflict, refuses every
batch for as long as it lasts, and was one E! line per batch for ever (9 in 10 s).

One E! line for the first refused batch, with the server's message; then, while batches keep
being refused, at most one E! line every REPEAT_SEC, each with the batches and points dropped
since the line before and the last message; one I! line when a batch is accepted again. Every
refused batch also has its D! line, and its points are counted in dropped_points (the spool's
ledger) whatever is logged.
"""

from __future__ import annotations

import time
from typing import Callable

from diskprobe.log import Logger

REPEAT_SEC = 600.0  # at most one E! line per 10 minutes while batches keep being refused
PREFIX = "output influxdb: "


class RefusalLog:
    """Not thread-safe: the InfluxDB output's sender thread alone calls it."""

    def __init__(self, log: Logger, clock: Callable[[], float] = time.monotonic) -> None:
        self._log = log
        self._clock = clock
        self._next_line = 0.0  # when the next E! line may come (while refusing)
        self._refusing = False
        self._since = (0, 0)  # (batches, points) refused since the last E! line
        self._total = (0, 0)  # (batches, points) refused since the first one

    def refused(self, seq: int, points: int, status: int, message: str) -> None:
        """Batch #seq, of `points` points, was refused with `status` and `message`."""
        what = f"server refused batch #{seq} (HTTP {status}: {message}); dropped"
        now = self._clock()
        batches, dropped = self._since
        self._since = (batches + 1, dropped + points)
        self._total = (self._total[0] + 1, self._total[1] + points)
        if not self._refusing:
            every = f"{REPEAT_SEC / 60:g} minutes"
            self._log.error(f"{PREFIX}{what} (counted in dropped_points); while batches keep "
                            f"being refused, one line every {every}")  # fmt: skip
        elif now >= self._next_line:
            batches, dropped = self._since
            self._log.error(f"{PREFIX}server still refusing batches: {batches} batches "
                            f"({dropped} points) dropped since the last line; the last: "
                            f"{what}")  # fmt: skip
        else:
            self._log.debug(f"{PREFIX}{what}")
            return
        self._refusing = True
        self._next_line = now + REPEAT_SEC
        self._since = (0, 0)

    def accepted(self) -> None:
        """A batch was accepted: one I! line if batches were being refused."""
        if not self._refusing:
            return
        batches, points = self._total
        self._log.info(f"{PREFIX}server accepts batches again; {batches} batches refused "
                       f"({points} points dropped, counted in dropped_points)")  # fmt: skip
        self._refusing = False
        self._since = self._total = (0, 0)
