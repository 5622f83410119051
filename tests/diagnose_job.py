"""Small real training-like jobs for tests/test_diagnose.py: `python diagnose_job.py MODE ...`.

Each job is what a data loader and a training loop do, without a framework: worker processes
(multiprocessing, as a PyTorch DataLoader's) read samples and put them on a queue; the main
process takes a batch from the queue and runs a "step". Modes:

  files DIR N      workers read DIR's files (1 MiB each) whole, each evicted from the page
                   cache first (posix_fadvise DONTNEED on that file only: dropping every
                   cache is host-wide); the step is short
  mmap FILE N      workers read FILE through mmap, 2 MiB windows at random, each window
                   evicted first (madvise DONTNEED + posix_fadvise DONTNEED): page faults
  cpu DIR N        workers read DIR's files (tmpfs) and run a costly transform on each
  remote FILE N    workers pread 64 KiB at random from FILE (a FUSE file: no block device)
  compute          no workers: batches in memory, the step busy on the CPU
  spin TOKEN N     workers hand over batches from memory; the step busy on the CPU (TOKEN:
                   anything, to tell the job's command line apart)
  checkpoint DIR   the step writes 4 MiB to DIR, fsyncing each MiB, then computes briefly
  third FILE       one process: reads 1/3 of the time (evicted first), computes 2/3
  idle             sleeps
  exit SECONDS     computes, then exits after SECONDS
Runs until killed (but `exit`). Prints "ready" on stdout once its workers run.
"""

from __future__ import annotations

import ctypes
import hashlib
import mmap
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

CHUNK = 64 * 1024
WINDOW = 2 << 20  # and aligned: the page cache may hold a file in folios up to 2 MiB large


def evicted_read(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        total = 0
        while True:
            data = os.read(fd, 1 << 20)
            if not data:
                return total
            total += len(data)
    finally:
        os.close(fd)


def busy(seconds: float) -> int:
    end, count = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        count += sum(range(200))
    return count


def worker(mode: str, target: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    files = sorted(Path(target).iterdir()) if mode in ("files", "cpu") else []
    batch = bytes(4096)
    handle = open(target, "rb") if mode in ("mmap", "remote") else None  # noqa: SIM115
    mapped = None
    if mode == "mmap" and handle is not None:
        mapped = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
    while True:
        if mode == "files":
            queue.put(evicted_read(random.choice(files)))
        elif mode == "cpu":
            data = random.choice(files).read_bytes()
            for _ in range(20):
                data = hashlib.sha256(data).digest() * 64
            queue.put(len(data) + busy(0.02))  # decoding, augmenting: 20 ms of CPU a sample
        elif mode == "mmap" and mapped is not None and handle is not None:
            start = random.randrange(0, len(mapped) // WINDOW) * WINDOW
            mapped.madvise(mmap.MADV_DONTNEED, start, WINDOW)
            os.posix_fadvise(handle.fileno(), start, WINDOW, os.POSIX_FADV_DONTNEED)
            total = sum(mapped[offset] for offset in range(start, start + WINDOW, 4096))
            mapped.madvise(mmap.MADV_DONTNEED, start, WINDOW)  # else the pages stay mapped
            queue.put(total)  # here, and the other worker's eviction cannot drop them
        elif mode == "spin":
            queue.put(batch)  # waits while the queue is full: the step is what is slow
        elif mode == "remote" and handle is not None:
            size = os.fstat(handle.fileno()).st_size
            queue.put(len(os.pread(handle.fileno(), CHUNK, random.randrange(0, size - CHUNK))))


def main(argv: list[str]) -> None:
    mode = argv[1]
    name = os.environ.get("DIAGNOSE_JOB_COMM")  # a comm with bytes that are not UTF-8
    if name:
        ctypes.CDLL(None).prctl(15, os.fsencode(name), 0, 0, 0)  # PR_SET_NAME
    if mode in ("files", "mmap", "cpu", "remote", "spin"):
        queue: multiprocessing.Queue = multiprocessing.Queue(maxsize=8)  # type: ignore[type-arg]
        for _ in range(int(argv[3])):
            multiprocessing.Process(target=worker, args=(mode, argv[2], queue), daemon=True).start()
        print("ready", flush=True)
        step = 0.05 if mode == "spin" else 0.0005  # spin: the step is what limits the job
        while True:
            queue.get()  # waits for the next batch
            busy(step)  # a short step: the input is what limits this job
    print("ready", flush=True)
    if mode == "compute":
        batches = [bytes(1024) for _ in range(64)]
        while True:
            busy(0.05 + 0 * len(batches))
    elif mode == "checkpoint":
        # Sharded, in place: 1 MiB written then fsynced, four times a step. One 4 MiB write
        # into a truncated file took 4.7 ms of CPU against a 15 ms fsync; under load the job
        # then looked half running (seen in CI: 60 % running, 40 % on files: compute). Here
        # each step is ~2 ms of CPU against ~55 ms of fsyncs.
        payload = memoryview(os.urandom(4 << 20))
        fd = os.open(Path(argv[2]) / "ckpt.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        while True:
            for offset in range(0, len(payload), 1 << 20):
                os.pwrite(fd, payload[offset : offset + (1 << 20)], offset)
                os.fsync(fd)
            busy(0.002)
    elif mode == "third":
        while True:
            started = time.monotonic()
            evicted_read(Path(argv[2]))
            busy(2 * (time.monotonic() - started))  # compute twice as long as the read took
    elif mode == "idle":
        time.sleep(3600)
    elif mode == "exit":
        busy(float(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
