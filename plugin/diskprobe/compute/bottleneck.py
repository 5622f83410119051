"""What a job is bound by, from the states its tasks were seen in (`diskprobe diagnose`).

Pure: the watch (diagnose/watch.py) samples every task of the job every `period` and counts,
per task, what it was doing; here those counts become shares of time and one verdict.

The rule, in the order it is applied (docs/diagnose.md says the same for users):
1. the job's process ended during the watch: `unknown`;
2. the main thread (the training loop's) is placed by the largest of its shares: on a CPU
   or an accelerator (`compute`), waiting on a file (an I/O verdict), or waiting on another
   task (futex, pipe, poll: the loop waits for its input);
3. when it waits on other tasks, the other threads decide (compute/thread_roles.py sorts them):
   the runtime's own threads (the step's pool in the main process: TensorFlow's and XLA's
   Eigen pools, oneDNN/OpenMP, a runtime blocked in an accelerator's ioctl) running at least
   as much as the loaders run and wait gives `compute`; else the loaders (worker processes,
   and the main process's threads that read files) decide: waiting on files more than
   running gives an I/O verdict, running more gives `input_cpu`; when neither they nor the
   main thread do much: `idle`;
4. an I/O verdict is the kind holding most of the file waits: `remote_fs` (no local block
   device under the file), `throttled` (the job's cgroup limit on that device is what it
   reaches), `checkpoint` (writes and syncs), else `disk`.
Every threshold is a share (a ratio), never a measured time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from diskprobe.compute.job_input import JobInput
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
    thread_waits: int = 0  # of those, in futex(): on a thread of its own process, a lock
    blocked: int = 0  # uninterruptible, on nothing diagnose can name
    faults: int = 0  # blocked in a page fault: placed on a device once the watch knows which
    file_waits: Counter[tuple[str, Place]] = field(default_factory=Counter)  # (read|write, place)

    def add(self, other: Counts) -> None:
        self.samples += other.samples
        self.running += other.running
        self.accelerator += other.accelerator
        self.sleeping += other.sleeping
        self.thread_waits += other.thread_waits
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
           ended: str | None = None, runtime: Counts | None = None) -> Verdict:  # fmt: skip
    """The verdict from the main thread's counts, the loaders' (`workers`) and the runtime's
    compute threads' (`runtime`) over `ticks` samples."""
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
    return _main_waits(own, main, workers, runtime or Counts(), ticks, throttled)


def _main_waits(own: Shares, main: Counts, workers: Counts, runtime: Counts, ticks: int,
                throttled: set[Place]) -> Verdict:  # fmt: skip
    others, pool = Shares.of(workers, ticks), Shares.of(runtime, ticks)
    waiting = f"the main thread waits on other tasks {own.sleeping + own.blocked:.0%} of the time"
    if _runtime_runs_the_step(main, pool, others):
        return Verdict("compute", [waiting, f"the runtime's own threads run the step: "
                                   f"{pool.running:.2f} thread-equivalents busy, while the "
                                   f"loaders run {others.running:.2f} and wait on files "
                                   f"{others.io_wait:.2f}"])  # fmt: skip
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


def _runtime_runs_the_step(main: Counts, pool: Shares, loaders: Shares) -> bool:
    """The main thread waits on its own process's threads (futex, not a loader's pipe or
    socket) and those that compute (the runtime's pool) are at least as busy as the loaders:
    the step runs there. A pool that spins after its step (OpenMP's KMP_BLOCKTIME) while the
    loop waits on its DataLoader's pipe is not mistaken for the step."""
    on_threads = main.thread_waits * 2 >= main.sleeping + main.blocked
    return on_threads and pool.running >= max(ACTIVE_MIN, loaders.running + loaders.io_wait)


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
# The job's own reads waited on the data's device at least a quarter as long as the loop
# waited for input: a share of the wait as large as the one that makes a job input-bound.
JOB_READ_WAIT = 0.25


def training_verdict(input_wait: float, checkpoint: float, place: Place | None,
                     in_memory: bool, util_percent: float | None,
                     job: JobInput | None = None) -> Verdict:  # fmt: skip
    """What a training loop measured from inside is bound by: the share of step time waiting
    for the next batch (`input_wait`) and in checkpoint saves, where its data lives and, for
    data on a local block device, what the job's own input did (`job`). In order:
    `checkpoint` (saves take a quarter of the step time, more than the input wait);
    `compute` (waiting under a quarter); `input_cpu` (the data is in memory); `unknown`
    (no data_paths); `remote_fs` (no local block device under the data); then, with `job`,
    `_local_input` decides (the meter always gives it); without it (a caller that knows only
    the device), `disk` when the device was at least DEVICE_BUSY % busy, else `input_cpu`: a
    device busy with another process's reads then looks like the job's own wait."""
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
    if job is not None:
        return _local_input(waiting, place, job)
    if util_percent is not None and util_percent >= DEVICE_BUSY:
        return Verdict("disk", [waiting, f"{place.device} is {util_percent:.0f} % busy"], place,
                       "read")  # fmt: skip
    return Verdict("input_cpu", [waiting, f"{place.device} is {util_percent or 0:.0f} % busy: "
                                 "the loaders, not the device"])  # fmt: skip


def _local_input(waiting: str, place: Place, job: JobInput) -> Verdict:
    """An input-bound loop with its data on a local block device, by what its own input did:
    `unknown` when its reads could not be measured; `disk` when they waited on the device at
    least JOB_READ_WAIT of the loop's input wait (however busy the device, only the job's own
    reads are blamed on it); else `input_cpu` when its loaders ran at least ACTIVE_MIN
    thread-equivalents; else `idle`: the loader waits on something that is not a file (the
    network, a lock, another process)."""
    if job.read_wait_share is None:
        return Verdict("unknown", [waiting, "the job's own reads could not be measured "
                                   "(/proc/<pid>/io, or the device's counters)"])  # fmt: skip
    reads = (f"the job's reads ({(job.read_bytes_per_sec or 0) / 1e6:.1f} MB/s) waited on "
             f"{place.device} {job.read_wait_share:.0%} as long as it waited for input")
    if job.read_wait_share >= JOB_READ_WAIT:
        return Verdict("disk", [waiting, reads], place, "read")
    loaders = f"its loaders ran {job.loader_cpu_cores:.2f} thread-equivalents"
    if job.loader_cpu_cores >= ACTIVE_MIN:
        return Verdict("input_cpu", [waiting, reads, loaders])
    return Verdict("idle", [waiting, reads, loaders, "the loader waits on something that is "
                            "not a file"])  # fmt: skip
