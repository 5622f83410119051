"""Which part of a training job each of its threads is: the loop, its input, or its runtime.

Frameworks run the step in thread pools of the training process while its Python main thread
waits on them: TensorFlow's intra-op Eigen pool (threads left named "python"), XLA's
("tf_XLAEigen"), oneDNN and OpenMP teams under any framework, the threads that launch an
accelerator's kernels. Their input pipelines run either in other processes (PyTorch
DataLoader workers, multiprocessing) or in threads of the same process (tf.data's parallel
map, threaded loaders). Names are a hint at best (TensorFlow leaves its pools unnamed), so the
roles rest on what a thread does, which every runtime shares:

  the main thread (tid == the job's pid)                       -> main
  any thread of another process of the job                      -> worker (a loader)
  a thread of the main process that read files in the window:   -> worker (a loader)
    seen waiting on a file, or its rchar (/proc/<pid>/task/<tid>/io: bytes read through
    read(2) and friends) grew by INPUT_READ_BYTES or more; or named as an input pool
  any other thread of the main process                          -> runtime (the step's pool)

A thread of a runtime these rules were not written for is placed the same way: if it reads
files it feeds the loop, if it only computes while the loop waits on it, it runs the step.
Wherever a thread blocks in an accelerator's ioctl, that time is the step's (compute), even in
a worker process. Pure: the sampler (collectors/job_process.py) supplies the counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe.compute.bottleneck import Counts

# Bytes a thread must read (rchar) in the window to count as the input pipeline: tf.data's map
# threads read hundreds of MB/s; TensorFlow's and XLA's pool threads read 4 bytes (an eventfd)
# in a minute. 64 KiB is one small image file.
INPUT_READ_BYTES = 64 * 1024
# Names frameworks give their input pools, where they name them (TensorFlow's tf.data private
# pool, "tf_data_private_threadpool" cut to 15 characters): a hint besides the reads.
INPUT_POOL_PREFIXES = ("tf_data",)
MAIN, WORKER, RUNTIME = "main", "worker", "runtime"


@dataclass(frozen=True)
class ThreadFacts:
    """What the sampler knows of one thread over the window."""

    counts: Counts
    main_process: bool  # a thread of the job's main process
    main_thread: bool  # the main process's main thread: the training loop
    read_bytes: int | None  # rchar's growth over the window; None when unreadable
    name: str = ""


def thread_role(facts: ThreadFacts) -> str:
    if facts.main_thread:
        return MAIN
    if not facts.main_process:
        return WORKER
    reads = facts.read_bytes is not None and facts.read_bytes >= INPUT_READ_BYTES
    if facts.counts.io or reads or facts.name.startswith(INPUT_POOL_PREFIXES):
        return WORKER
    return RUNTIME


@dataclass
class Groups:
    """The job's samples by role: the verdict's three inputs (compute/bottleneck.decide)."""

    main: Counts
    workers: Counts
    runtime: Counts


def group_threads(threads: list[ThreadFacts]) -> Groups:
    """Counts by role; accelerator samples go to the runtime wherever they were seen."""
    groups = Groups(Counts(), Counts(), Counts())
    for facts in threads:
        role = thread_role(facts)
        target = groups.main if role == MAIN else groups.runtime if role == RUNTIME \
            else groups.workers  # fmt: skip
        if role == WORKER and facts.counts.accelerator:
            groups.runtime.accelerator += facts.counts.accelerator
            groups.runtime.samples += facts.counts.accelerator
            moved = Counts()
            moved.add(facts.counts)
            moved.samples -= moved.accelerator
            moved.accelerator = 0
            target.add(moved)
        else:
            target.add(facts.counts)
    return groups
