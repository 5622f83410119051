"""diskprobe_process_io: the top processes by storage I/O (read_bytes/write_bytes per second)
and, with delay accounting on, by time blocked on block I/O (compute/process_rank.py).

The wait is read only for processes whose io file changed (the few doing I/O): the kernel
counts a block I/O wait when it ends, and the I/O that made it moved the counters. A wait that
began in an earlier interval is counted in the interval it ends, as iotop shows it."""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.compute.process_rank import Candidate, chosen_series
from diskprobe.config import ProcessIoConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.process_io import PROCESS_IO
from diskprobe.sources.delayacct import TICKS_PER_SEC, delay_accounting, process_blkio_ticks
from diskprobe.sources.privileges import ptrace_read_advice
from diskprobe.sources.procio import (
    Details,
    MalformedIo,
    Scan,
    parse_proc_io,
    process_details,
    scan_io,
    start_ticks,
    use_roots,
)

MEASUREMENT = PROCESS_IO.name


@dataclass
class _Seen:
    started: int | None  # start ticks: (pid, started) is the key; None when it was gone
    read: int
    write: int
    blkio: tuple[int, int] | None = None  # (blkio ticks summed over threads, threads)


class ProcessIoCollector(BaseCollector[ProcessIoConfig]):
    """Keeps every process's counters from the previous scan; reports the busiest few."""

    name = "process_io"
    needs_prime = True

    def __init__(self, config: ProcessIoConfig, context: CollectorContext) -> None:
        super().__init__(config, context)
        self._previous: dict[int, _Seen] = {}
        # The io file of every pid in _previous as last read, by the pid's name (the same
        # processes): the same bytes next time mean nothing moved. Kept apart from _Seen so
        # that the idle majority is told from the rest by one comprehension over the scan.
        self._raw: dict[str, bytes] = {}
        self._previous_at: float | None = None
        self._malformed: set[int] = set()  # pids whose io file was malformed last scan
        self._delayacct = False  # kernel.task_delayacct as of the last scan
        use_roots(self._roots)

    def collect(self) -> Collection:
        use_roots(self._roots)
        self._note_delay_accounting(delay_accounting(self._roots) is not False)
        scan = scan_io(self._roots)
        now, time_ns = self._clock.monotonic(), self._clock.wall_ns()
        self._log_unreadable(scan)
        elapsed = now - self._previous_at if self._previous_at is not None else 0.0
        items = len(scan.raw)  # before _update takes scan.raw over
        candidates = self._update(scan, elapsed)
        self._previous_at = now
        metrics = self._winners(candidates, time_ns)
        return Collection(metrics=metrics, items=items)

    def _note_delay_accounting(self, on: bool) -> None:
        if not on and self._log.first_time("process_io-delayacct"):
            self._log.debug("process_io: kernel.task_delayacct is 0: no blkio_wait_ratio "
                            "(diskprobe doctor says how to turn it on)")  # fmt: skip
        self._delayacct = on

    def _blkio(self, pid: int) -> tuple[int, int] | None:
        return process_blkio_ticks(self._roots, pid) if self._delayacct else None

    def _update(self, scan: Scan, elapsed: float) -> list[Candidate]:
        """Store this scan; return the processes above the threshold since the last one.

        Idle processes (the usual case) keep their _Seen as it is: not parsed, not touched.
        """
        previous, last, raw = self._previous, self._raw, scan.raw
        changed = [name for name, data in raw.items() if last.get(name) != data]
        for name in last.keys() - raw.keys():
            previous.pop(int(name), None)  # exited: its state goes with it
        candidates: list[Candidate] = []
        malformed: set[int] = set()
        minimum, min_wait = float(self.config.min_bytes_per_sec), self.config.min_wait_ratio
        for name in changed:
            pid = int(name)
            before = previous.pop(pid, None)
            counters = self._parse(pid, raw[name], malformed)
            if counters is None:
                del raw[name]  # left out: next scan sees it as new, as if never read
                continue
            read, write = counters
            blkio = self._blkio(pid)
            if before is None or read < before.read or write < before.write:
                # New here (or counters went back: another process under that PID).
                previous[pid] = _Seen(start_ticks(self._roots, pid), read, write, blkio)
                continue
            previous[pid] = _Seen(before.started, read, write, blkio)
            if elapsed <= 0 or before.started is None:
                continue
            candidate = Candidate(pid, before.started, (read - before.read) / elapsed,
                                  (write - before.write) / elapsed,
                                  _wait(before.blkio, blkio, elapsed))  # fmt: skip
            if candidate.ranked(minimum, min_wait):
                candidates.append(candidate)
        self._raw = raw  # the keys of _previous again: gone, left out and forgotten are not in it
        self._malformed = malformed  # only this scan's: bounded by the processes there are
        candidates.sort(key=lambda c: c.bytes_rate, reverse=True)
        return candidates

    def _parse(self, pid: int, data: bytes, malformed: set[int]) -> tuple[int, int] | None:
        """(read_bytes, write_bytes), or None (logged once) when the process is left out."""
        try:
            counters = parse_proc_io(data)
        except MalformedIo as error:
            malformed.add(pid)
            if pid not in self._malformed:  # once per process, not every scan
                self._log.debug(f"process_io: pid {pid}: /proc/{pid}/io: {error}; left out")
            return None
        if counters is None:
            self._log_unparsed()
        return counters

    def _winners(self, candidates: list[Candidate], time_ns: int) -> list[Metric]:
        # One point per (process, user): two busy processes of one name in one batch would
        # be one series at one timestamp, and the database would keep only one of them.
        # Their rates add up; pid and cmdline stay the busiest one's (candidates are sorted).
        resolved: list[tuple[Candidate, Details]] = []
        for candidate in candidates:
            details = process_details(
                self._roots, candidate.pid, candidate.started, self.config.cmdline
            )
            if details is None:  # exited, or the PID was reused since the last scan
                self._previous.pop(candidate.pid, None)
                self._raw.pop(str(candidate.pid), None)  # next scan: new, its start time read again
                continue
            resolved.append((candidate, details))
        config = self.config
        chosen = chosen_series([(c, (d.name, d.user)) for c, d in resolved], config.top,
                               float(config.min_bytes_per_sec), config.min_wait_ratio)  # fmt: skip
        series: dict[tuple[str, str], Metric] = {}
        for candidate, details in resolved:
            key = (details.name, details.user)
            if key not in chosen:
                continue
            same = series.get(key)
            if same is not None:
                _add(same.fields, candidate)
            else:
                series[key] = self._metric(candidate, details, time_ns)
        # Busiest first by the points' own (summed) rates, not their busiest process's.
        return sorted(series.values(), key=_bytes_rate, reverse=True)

    @staticmethod
    def _metric(candidate: Candidate, details: Details, time_ns: int) -> Metric:
        fields: dict[str, FieldValue] = {
            "pid": candidate.pid,
            "read_bytes_per_sec": candidate.read_rate,
            "write_bytes_per_sec": candidate.write_rate,
            "processes": 1,
        }
        if candidate.wait is not None:
            fields["blkio_wait_ratio"] = candidate.wait
        if details.cmdline is not None:
            fields["cmdline"] = details.cmdline
        if details.cgroup is not None:
            fields["cgroup"] = details.cgroup
        tags = {"process": details.name, "user": details.user}
        return Metric(MEASUREMENT, tags, fields, time_ns)

    def _log_unreadable(self, scan: Scan) -> None:
        if scan.denied and self._log.first_time("process_io-denied"):
            self._log.info(
                f"process_io: {scan.denied} of {scan.denied + len(scan.raw)} processes "
                f"are unreadable (permission denied on /proc/<pid>/io: {ptrace_read_advice()}); "
                "they are left out"
            )

    def _log_unparsed(self) -> None:
        if self._log.first_time("process_io-unparsed"):
            self._log.info(
                "process_io: /proc/<pid>/io has no read_bytes (kernel without "
                "CONFIG_TASK_IO_ACCOUNTING?); such processes are left out"
            )


def _wait(before: tuple[int, int] | None, after: tuple[int, int] | None,
          elapsed: float) -> float | None:  # fmt: skip
    """Seconds blocked per second: never below 0 (a thread that exited takes its count along),
    nor above its threads (a wait is counted when it ends: a long one all in its last
    interval; a count that began before delay accounting was on is the uptime)."""
    if before is None or after is None:
        return None
    (ticks_before, _), (ticks, threads) = before, after
    return min(float(threads), max(0, ticks - ticks_before) / TICKS_PER_SEC / elapsed)


def _bytes_rate(metric: Metric) -> float:
    return float(metric.fields["read_bytes_per_sec"]) + float(metric.fields["write_bytes_per_sec"])


def _add(fields: dict[str, FieldValue], candidate: Candidate) -> None:
    fields["read_bytes_per_sec"] = float(fields["read_bytes_per_sec"]) + candidate.read_rate
    fields["write_bytes_per_sec"] = float(fields["write_bytes_per_sec"]) + candidate.write_rate
    fields["processes"] = int(fields["processes"]) + 1
    if candidate.wait is not None:  # the sum of its processes' waits, as their bytes
        fields["blkio_wait_ratio"] = float(fields.get("blkio_wait_ratio", 0.0)) + candidate.wait
