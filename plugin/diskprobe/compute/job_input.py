"""What a training job's own input did over one window of the in-job meter, from two looks at
the job (sources/job_family.py) and its data's device counters. Pure.

- the bytes its processes read from storage: the job process's read_bytes plus its live
  descendants' (DataLoader workers). A descendant counts from the baseline it had at the
  previous look; one first seen that started after the previous look counts from 0; one that
  was already running and never looked at (the previous window did not wait for its input,
  so nobody listed the descendants) counts from this look on. A descendant gone since the
  previous look had its whole count added to its parent's when it was reaped: its baseline is
  taken off again, so its reads are not counted twice (one without a baseline that ends is
  counted whole: nothing says how much of it the window read; one that outlived its parent
  and was reaped outside the job is taken off for nothing: the sum is floored at 0).
  Processes are keyed by (pid, start time), so a reused PID is a new process.
- how long those reads waited on the data's device: the job's share of the bytes the device
  read in the window times the device's read time (the kernel's read ms: the sum over
  requests of each one's time, so it grows with the requests in flight). That assumes the
  job's requests took the device's average time per byte; /proc/<pid>/io does not say which
  device a read went to, so reads from other devices count here too (an upper bound).
- how much its loaders ran: the CPU time of its descendants, of its threads other than the
  loop's, and of the loop's thread beyond the time the loop was not waiting for input (with
  num_workers=0 the loader runs in the loop's thread, during the wait).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from diskprobe.metric import FieldValue
from diskprobe.sources.job_family import CLOCK_TICKS, JobLook, ProcessCounters


@dataclass(frozen=True)
class JobInput:
    """The job's own evidence over one window (None: could not be measured)."""

    read_bytes_per_sec: float | None  # storage reads of its processes, loaders included
    read_wait_share: float | None  # estimated time its reads waited on the data's device /
    # the loop's time waiting for input; above 1 when several loaders wait at once
    loader_cpu_cores: float  # CPU time of its loaders / the window's time (thread-equivalents)


def _family_delta(before: JobLook, after: JobLook, value: Callable[[ProcessCounters], int | None],
                  reaped_into_parent: bool) -> int:  # fmt: skip
    """The descendants' growth of one counter between the looks (0 when not listed now)."""
    if after.family is None:
        return 0
    known = before.family if before.family is not None else {}
    total = 0
    for key, counters in after.family.items():
        now = value(counters)
        if key in known:
            base = value(known[key])
        elif key[1] >= before.at_ticks:  # started after the previous look: all of it is new
            base = 0
        else:  # running at the previous look, which did not list the descendants
            continue
        if now is not None and base is not None:
            total += max(0, now - base)
    if reaped_into_parent:  # read_bytes: an ended child's whole count is now its parent's
        total -= sum(value(counters) or 0 for key, counters in known.items()
                     if key not in after.family)  # fmt: skip
    return total


def job_read_bytes(before: JobLook, after: JobLook) -> int | None:
    """Storage bytes the job read between the looks; None when its io file is unreadable."""
    first, last = before.own, after.own
    if first is None or last is None or first.read_bytes is None or last.read_bytes is None:
        return None
    own = last.read_bytes - first.read_bytes
    return max(0, own + _family_delta(before, after, lambda c: c.read_bytes, True))


def loader_cpu_sec(before: JobLook, after: JobLook, busy_sec: float) -> float:
    """CPU seconds of the job's loaders between the looks; the loop was not waiting for input
    for `busy_sec` (its step), so its thread's CPU beyond that ran during the wait."""
    ticks = float(_family_delta(before, after, lambda c: c.cpu_ticks, False))
    first, last = before.own, after.own
    loop_first, loop_last = before.loop_cpu_ticks, after.loop_cpu_ticks
    if first and last and loop_first is not None and loop_last is not None \
            and before.loop_tid == after.loop_tid:  # fmt: skip
        loop = loop_last - loop_first
        ticks += max(0, last.cpu_ticks - first.cpu_ticks - loop)  # its other threads
        ticks += max(0.0, loop - busy_sec * CLOCK_TICKS)
    return ticks / CLOCK_TICKS


def read_wait_sec(job_bytes: int, device_read_bytes: float, device_read_ms: float) -> float:
    """Seconds the job's reads waited on the device: its share of the device's bytes (at most
    all of them) times the device's read time."""
    if job_bytes <= 0 or device_read_bytes <= 0:
        return 0.0
    return min(1.0, job_bytes / device_read_bytes) * device_read_ms / 1000.0


def device_reads(figures: Mapping[str, FieldValue] | None,
                 seconds: float) -> tuple[float, float] | None:  # fmt: skip
    """Bytes read and read ms of the device over the window, from its iostat figures."""
    if not figures:
        return None
    reads = float(figures["reads_per_sec"]) * seconds
    return float(figures["read_bytes_per_sec"]) * seconds, float(figures["read_await_ms"]) * reads


def job_input(before: JobLook, after: JobLook, seconds: float, wait_sec: float,
              device: tuple[float, float] | None) -> JobInput:  # fmt: skip
    """The window's evidence: `seconds` of steps, `wait_sec` of them waiting for input, and
    the device's (bytes read, read ms) over the window (None: no counters for it)."""
    read = job_read_bytes(before, after)
    waited: float | None = None
    if read == 0:  # nothing read from storage: no wait on any device, counters or not
        waited = 0.0
    elif read is not None and device is not None:
        waited = read_wait_sec(read, *device)
    per_sec = 1.0 / seconds if seconds > 0 else 0.0
    return JobInput(None if read is None else read * per_sec,
                    None if waited is None or wait_sec <= 0 else waited / wait_sec,
                    loader_cpu_sec(before, after, seconds - wait_sec) * per_sec)  # fmt: skip
