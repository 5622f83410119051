"""What a job is bound by, from the states its tasks were seen in (`diskprobe diagnose`).

Pure: the watch (diagnose/watch.py) samples every task of the job every `period` and counts,
per task, what it was doing; here those counts become shares of time and one verdict.

The rule, in the order it is applied (docs/diagnose.md says the same for users):
1. the job's process ended during the watch: `unknown`;
2. the main thread (the training loop's) is placed by the largest of its shares: on a CPU
   or an accelerator (`compute`), waiting on a file (an I/O verdict), or waiting on another
   task (futex, pipe, poll: the loop waits for its input);
3. when it waits on other tasks, the workers (every other thread of the job, loader processes
   included) decide: waiting on files more than running gives an I/O verdict, running more
   gives `input_cpu`; when neither the workers nor the main thread do much: `idle`;
4. an I/O verdict is the kind holding most of the file waits: `remote_fs` (no local block
   device under the file), `throttled` (the job's cgroup limit on that device is what it
   reaches), `checkpoint` (writes and syncs), else `disk`.
Every threshold is a share (a ratio), never a measured time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from diskprobe.sources.file_places import Place

BOTTLENECKS = ("disk", "input_cpu", "compute", "checkpoint", "throttled", "remote_fs", "idle",
               "unknown")  # fmt: skip
ACTIVE_MIN = 0.10  # below a tenth of one thread busy or waiting on files: nothing to blame


@dataclass
class Counts:
    """Samples of one task or one group of tasks, by what they were doing."""

    samples: int = 0
    running: int = 0
    accelerator: int = 0  # in ioctl() on an accelerator's device node
    sleeping: int = 0  # waiting on another task, a lock, a pipe, a timer
    blocked: int = 0  # uninterruptible, on nothing diagnose can name
    faults: int = 0  # blocked in a page fault: placed on a device once the watch knows which
    file_waits: Counter[tuple[str, Place]] = field(default_factory=Counter)  # (read|write, place)

    def add(self, other: Counts) -> None:
        self.samples += other.samples
        self.running += other.running
        self.accelerator += other.accelerator
        self.sleeping += other.sleeping
        self.blocked += other.blocked
        self.faults += other.faults
        self.file_waits.update(other.file_waits)

    @property
    def io(self) -> int:
        return sum(self.file_waits.values()) + self.faults

    def place_faults(self, place: Place) -> None:
        """Page-fault waits are reads of a mapped file: on `place`, once it is known."""
        if self.faults:
            self.file_waits[("read", place)] += self.faults
            self.faults = 0


@dataclass(frozen=True)
class Shares:
    """Counts over a number of sampling ticks: for one task, fractions of its time; for a
    group, thread-equivalents (2.0: two threads doing it the whole time)."""

    running: float
    io_wait: float
    sleeping: float
    blocked: float

    @classmethod
    def of(cls, counts: Counts, ticks: int) -> Shares:
        scale = 1.0 / ticks if ticks else 0.0
        busy = counts.running + counts.accelerator
        return cls(busy * scale, counts.io * scale, counts.sleeping * scale,
                   counts.blocked * scale)  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    bottleneck: str
    reasons: list[str]
    place: Place | None = None  # for the I/O verdicts: where most waits went
    direction: str | None = None  # "read" or "write"
    waiters: str | None = None  # "main" or "workers": whose waits decided


def decide(main: Counts, workers: Counts, ticks: int, throttled: set[Place],
           ended: str | None = None) -> Verdict:  # fmt: skip
    """The verdict from the main thread's counts and the other tasks' over `ticks` samples."""
    if ended:
        return Verdict("unknown", [ended])
    if main.samples == 0:
        return Verdict("unknown", ["the main thread was never seen"])
    own = Shares.of(main, main.samples)
    largest = max(own.running, own.io_wait, own.sleeping + own.blocked)
    if own.io_wait == largest and own.io_wait > own.running:
        return _io_verdict(main, throttled, "main", f"the main thread waits on files "
                           f"{own.io_wait:.0%} of the time")  # fmt: skip
    if own.running == largest:
        return Verdict("compute", [f"the main thread runs {own.running:.0%} of the time "
                                   f"(on a CPU or an accelerator); it waits on files "
                                   f"{own.io_wait:.0%}"])  # fmt: skip
    return _main_waits(own, main, workers, ticks, throttled)


def _main_waits(own: Shares, main: Counts, workers: Counts, ticks: int,
                throttled: set[Place]) -> Verdict:  # fmt: skip
    others = Shares.of(workers, ticks)
    waiting = f"the main thread waits on other tasks {own.sleeping + own.blocked:.0%} of the time"
    if others.running + others.io_wait < ACTIVE_MIN:
        if own.running >= ACTIVE_MIN and own.running >= own.io_wait:
            return Verdict("compute", [waiting, f"it runs {own.running:.0%} of the time; "
                                       "its workers are idle"])  # fmt: skip
        if own.io_wait >= ACTIVE_MIN:
            return _io_verdict(main, throttled, "main", waiting)
        return Verdict("idle", [waiting, f"its other threads run {others.running:.2f} and wait "
                                f"on files {others.io_wait:.2f} thread-equivalents"])  # fmt: skip
    busy = (f"the workers run {others.running:.2f} and wait on files {others.io_wait:.2f} "
            "thread-equivalents")  # fmt: skip
    if others.io_wait >= others.running:
        return _io_verdict(workers, throttled, "workers", waiting, busy)
    return Verdict("input_cpu", [waiting, busy])


def _io_verdict(counts: Counts, throttled: set[Place], waiters: str, *reasons: str) -> Verdict:
    by_kind: Counter[str] = Counter()
    by_place: dict[str, Counter[tuple[str, Place]]] = {}
    for (direction, place), samples in counts.file_waits.items():
        kind = io_kind(direction, place, throttled)
        by_kind[kind] += samples
        by_place.setdefault(kind, Counter())[(direction, place)] += samples
    if not by_kind:
        return Verdict("unknown", [*reasons, "but on no file diagnose could name"])
    kind = max(BOTTLENECKS, key=lambda name: by_kind.get(name, 0))  # ties: BOTTLENECKS' order
    (direction, place), _ = by_place[kind].most_common(1)[0]
    share = by_kind[kind] / sum(by_kind.values())
    reasons = (*reasons, f"{share:.0%} of those waits are {KIND_WORDS[kind]}")
    return Verdict(kind, list(reasons), place, direction, waiters)


KIND_WORDS = {
    "disk": "reads from a local block device",
    "checkpoint": "writes and syncs to a local block device",
    "throttled": "I/O held back by the cgroup's I/O limit",
    "remote_fs": "on a filesystem with no local block device",
}


def io_kind(direction: str, place: Place, throttled: set[Place]) -> str:
    if place.remote:
        return "remote_fs"
    if place in throttled:
        return "throttled"
    return "checkpoint" if direction == "write" else "disk"


INPUT_BOUND = 0.25  # a job waiting for its next batch a quarter of its step time or more
DEVICE_BUSY = 50.0  # %util of the data's device from which its waits are the device's


def training_verdict(input_wait: float, checkpoint: float, place: Place | None,
                     in_memory: bool, util_percent: float | None) -> Verdict:  # fmt: skip
    """What a training loop measured from inside is bound by: the share of step time waiting
    for the next batch (`input_wait`) and in checkpoint saves, and where its data lives."""
    waiting = f"{input_wait:.0%} of step time waiting for input"
    if checkpoint >= INPUT_BOUND and checkpoint >= input_wait:
        return Verdict("checkpoint", [f"{checkpoint:.0%} of step time in checkpoint saves"])
    if input_wait < INPUT_BOUND:
        return Verdict("compute", [waiting])
    if in_memory:
        return Verdict("input_cpu", [waiting, "the data is in memory (tmpfs, ramfs)"])
    if place is None:
        return Verdict("unknown", [waiting, "give data_paths= to tell disk from input_cpu"])
    if place.remote:
        return Verdict("remote_fs", [waiting, f"the data is on {place.fstype}"], place, "read")
    if util_percent is not None and util_percent >= DEVICE_BUSY:
        return Verdict("disk", [waiting, f"{place.device} is {util_percent:.0f} % busy"], place,
                       "read")  # fmt: skip
    return Verdict("input_cpu", [waiting, f"{place.device} is {util_percent or 0:.0f} % busy: "
                                 "the loaders, not the device"])  # fmt: skip
