"""The in-job meter's look at its own job's input (InputWaitMeter, data on a local device):
what the job's processes read from storage and how much its loaders ran, window by window.

Cost, at each window's close (the meter has no thread and samples nothing): three small
files of the job's process (io, stat, the loop thread's stat), always, so the next window
has its baseline; and only in a window that waited for its input (input_wait_ratio at least
INPUT_BOUND), its descendants: every process's stat read once to find them (parent_map), then
each one's stat and io. A compute-bound job pays nothing for the scan; a window that waits is
where the verdict needs it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from diskprobe.compute.bottleneck import INPUT_BOUND
from diskprobe.compute.job_input import JobInput, device_reads, job_input
from diskprobe.roots import HostRoots
from diskprobe.sources.job_family import JobLook, look_at_job


class JobReads:
    def __init__(self, roots: HostRoots) -> None:
        self._roots = roots
        self._look = self._look_at_job(False)  # the first window's baseline

    def _look_at_job(self, with_family: bool) -> JobLook:
        # The loop's thread is the one closing the windows (step_end), and building the meter.
        return look_at_job(self._roots, os.getpid(), threading.get_native_id(), with_family)

    def window(self, step_sec: float, wait_sec: float,
               figures: dict[str, Any] | None) -> JobInput | None:  # fmt: skip
        """The evidence of the window just closed: `step_sec` of steps, `wait_sec` of them
        waiting for input, the device's iostat figures over it. None: not input-bound."""
        bound = step_sec > 0 and wait_sec / step_sec >= INPUT_BOUND
        before, self._look = self._look, self._look_at_job(bound)
        if not bound:
            return None
        return job_input(before, self._look, step_sec, wait_sec, device_reads(figures, step_sec))
