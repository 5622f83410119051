"""How long each training step waited for its next batch, measured inside the job.

    from diskprobe.integrations.input_wait import InputWaitMeter, measure_input

    for batch in measure_input(loader, data_paths=["/mnt/data"]):   # one line, one epoch
        step(batch)

    meter = InputWaitMeter(data_paths=["/mnt/data"])                # several epochs
    for epoch in range(epochs):
        for batch in measure_input(loader, meter):
            step(batch)
        with meter.checkpoint():
            torch.save(model.state_dict(), "/ckpt/model.pt")
    meter.close()                                                     # logs the summary

Per window of `window_steps` steps: the step time (from one step's end to the next's; the
first step of each pass is left out: its wait is the loader starting),
`input_wait_ratio` (time waiting for the next batch / step time), `checkpoint_ratio`, and
with `data_paths` the device under the data and its iostat over the same window
(`device_util_percent`: its %util, capped at 100); the verdict uses the vocabulary of
`diskprobe diagnose`: on a local device `disk` only when the job's own reads (loader
processes and threads included) waited on it, else `input_cpu` or `idle`, with the evidence
(job_reads.py, compute/bottleneck.py's training_verdict). Logged on the `diskprobe` logger
when the verdict changes, and summarised by close(). No thread, no sampling: two clock reads
a step, and a few /proc reads at each window's close. The Keras and Lightning callbacks
(InputWaitCallback) use the same meter.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, TypeVar

from diskprobe.collectors.job_evidence import counter_figures
from diskprobe.compute.bottleneck import Verdict, training_verdict
from diskprobe.integrations.job_reads import JobReads
from diskprobe.outputs.base import OutputFailed
from diskprobe.roots import HostRoots
from diskprobe.sources.diskstats import read_device_counters
from diskprobe.sources.file_places import FilePlaces, Place
from diskprobe.sources.tasks import OpenFile

if TYPE_CHECKING:  # imported by whoever makes one: it brings the InfluxDB client along
    from diskprobe.integrations.training_output import TrainingOutput

Batch = TypeVar("Batch")
LOG = logging.getLogger("diskprobe")


@dataclass
class Window:
    steps: int = 0
    step_sec: float = 0.0
    wait_sec: float = 0.0
    checkpoint_sec: float = 0.0

    def add(self, other: Window) -> None:
        self.steps += other.steps
        self.step_sec += other.step_sec
        self.wait_sec += other.wait_sec
        self.checkpoint_sec += other.checkpoint_sec

    def ratios(self) -> tuple[float, float]:
        if self.step_sec <= 0:
            return 0.0, 0.0
        wait, checkpoint = self.wait_sec / self.step_sec, self.checkpoint_sec / self.step_sec
        return min(1.0, wait), min(1.0, checkpoint)


class InputWaitMeter:
    def __init__(self, data_paths: Sequence[str] = (), window_steps: int = 50,
                 clock: Callable[[], float] = time.monotonic,
                 output: TrainingOutput | None = None) -> None:  # fmt: skip
        if window_steps < 1:
            raise ValueError("window_steps must be at least 1")
        self.window_steps, self.clock, self.output = window_steps, clock, output
        self._roots = HostRoots.from_env(os.environ)
        self.place, self.in_memory = self._locate(data_paths)
        self._window, self.total = Window(), Window()
        self._last_end: float | None = None
        self._counters = self._device_counters()
        local = self.place is not None and not self.place.remote  # where `disk` can be said
        self._job = JobReads(self._roots) if local else None
        self.last: dict[str, Any] | None = None  # the last window's report
        self.windows: list[dict[str, Any]] = []

    @property
    def verdict(self) -> Verdict | None:
        """The last window's verdict (None before the first window closed)."""
        return self.last["verdict"] if self.last else None

    def _device_counters(self) -> tuple[int, ...] | None:
        """The data's device's counters: its one sysfs file, never the whole /proc/diskstats
        (thousands of lines on some hosts, at every window of the training loop)."""
        device = self.place.device if self.place else None
        return read_device_counters(self._roots, device) if device else None

    def _locate(self, paths: Sequence[str]) -> tuple[Place | None, bool]:
        places = FilePlaces(self._roots)
        for path in paths:
            try:
                info = os.stat(path)
            except OSError as error:
                LOG.warning("diskprobe input wait: data path %s: %s", path, error)
                continue
            file = OpenFile(os.path.realpath(path), (os.major(info.st_dev), os.minor(info.st_dev)),
                            info.st_ino, True, False)  # fmt: skip
            located = places.locate(os.getpid(), file)
            if located is None:  # tmpfs, ramfs: the data is in memory
                return None, True
            return located.place, False
        return None, False

    def start(self) -> None:
        """A pass (an epoch) begins. Its first step is not counted: its wait is the loader's
        start (worker processes, the first prefetch), paid once a pass, not the steady wait."""
        self._last_end = None

    def batch_wait(self, seconds: float) -> None:
        if self._last_end is not None:
            self._window.wait_sec += max(0.0, seconds)

    @contextlib.contextmanager
    def checkpoint(self) -> Iterator[None]:
        started = self.clock()
        try:
            yield
        finally:
            self._window.checkpoint_sec += self.clock() - started

    def step_end(self) -> None:
        now = self.clock()
        if self._last_end is not None:
            self._window.step_sec += now - self._last_end
            self._window.steps += 1
        self._last_end = now
        if self._window.steps >= self.window_steps:
            self._close_window()

    def _close_window(self) -> None:
        window, self._window = self._window, Window()
        if window.steps == 0:
            return
        self.total.add(window)
        before, self._counters = self._counters, self._device_counters()
        report = self._report(window, before, self._counters, window.step_sec)
        previous = self.verdict
        self.last = report
        self.windows.append(report)
        self._send(report)
        if previous is None or report["bottleneck"] != previous.bottleneck:
            LOG.info("diskprobe input wait: %s", report["sentence"])

    def _send(self, report: dict[str, Any]) -> None:
        """To the output, if any; one that cannot be opened is said once and dropped: the
        training goes on, and so does the logging."""
        if self.output is None:
            return
        try:
            self.output.write(report)
        except (OutputFailed, OSError) as error:
            LOG.warning("diskprobe input wait: no more points sent: %s", error)
            self.output = None

    def _report(self, window: Window, before: tuple[int, ...] | None,
                after: tuple[int, ...] | None, seconds: float) -> dict[str, Any]:  # fmt: skip
        wait, checkpoint = window.ratios()
        device = self.place.device if self.place else None
        figures = counter_figures(before, after, seconds) if before and after else None
        # %util over the window, at most 100: io_ticks can run ahead of a short window's clock
        util = min(100.0, float(figures["util_percent"])) if figures else None
        job = self._job.window(window.step_sec, window.wait_sec, figures) if self._job else None
        verdict = training_verdict(wait, checkpoint, self.place, self.in_memory, util, job)
        return {"steps": window.steps, "step_time_sec": window.step_sec / window.steps,
                "input_wait_ratio": wait, "checkpoint_ratio": checkpoint,
                "bottleneck": verdict.bottleneck, "reasons": verdict.reasons,
                "reason": "; ".join(verdict.reasons[1:] or verdict.reasons),
                "device": device, "mount_point": self.place.mount_point if self.place else None,
                "device_iostat": figures, "device_util_percent": util, "verdict": verdict,
                "job_read_bytes_per_sec": job.read_bytes_per_sec if job else None,
                "job_read_wait_share": job.read_wait_share if job else None,
                "loader_cpu_cores": job.loader_cpu_cores if job else None,
                "sentence": sentence(wait, verdict, self.place, util, figures)}  # fmt: skip

    def close(self) -> dict[str, Any] | None:
        """Ends the last window and logs the summary of the whole run (None: no step)."""
        self._close_window()
        if self.output is not None:
            self.output.close()
        if not self.windows:
            return None
        wait, checkpoint = self.total.ratios()
        kinds = [window["bottleneck"] for window in self.windows]
        verdict = max(set(kinds), key=kinds.count)  # the verdict of most windows
        summary = {"steps": self.total.steps, "input_wait_ratio": wait,
                   "checkpoint_ratio": checkpoint, "bottleneck": verdict,
                   "device": self.windows[-1]["device"],
                   "mount_point": self.windows[-1]["mount_point"],
                   "windows": [window["bottleneck"] for window in self.windows]}  # fmt: skip
        LOG.info("diskprobe input wait, whole run: %.0f %% of step time waiting for input, "
                 "%.0f %% in checkpoints over %d steps; %s", wait * 100, checkpoint * 100,
                 self.total.steps, f"most windows: {verdict}")  # fmt: skip
        return summary


def sentence(wait: float, verdict: Verdict, place: Place | None, util: float | None,
             figures: dict[str, Any] | None) -> str:  # fmt: skip
    text = f"{wait:.0%} of step time waiting for input"
    if place is not None and place.device:
        text += f"; dataset on {place.device} ({place.mount_point})"
        if figures:
            text += f", util {util or 0:.0f} %, r_await {float(figures['read_await_ms']):.2f} ms"
        if len(verdict.reasons) > 1:  # what the job's own input did
            text += f"; {'; '.join(verdict.reasons[1:])}"
    elif place is not None:
        text += f"; dataset on {place.mount_point} ({place.fstype})"
    return f"{text}: {verdict.bottleneck}"


def measure_input(
    iterable: Iterable[Batch], meter: InputWaitMeter | None = None, *,
    data_paths: Sequence[str] = (), window_steps: int = 50,
) -> Iterator[Batch]:  # fmt: skip
    """Yields `iterable`'s batches, timing each wait for one. Without a meter, one is made for
    this pass and its summary logged at the end; with one, it keeps counting across passes."""
    own = meter is None
    meter = meter or InputWaitMeter(data_paths, window_steps)
    iterator = iter(iterable)
    meter.start()
    clock = meter.clock
    try:
        while True:
            started = clock()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            meter.batch_wait(clock() - started)
            yield batch
            meter.step_end()  # the loop asks for the next batch: its step is done
    finally:
        if own:
            meter.close()
