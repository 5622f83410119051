"""What the agent reads to find training jobs: the processes' list, ages, command lines,
environments and open accelerator nodes, under HOST_PROC. Each reader returns None when the
process is gone or the file refused; bytes that are not UTF-8 are kept as surrogates.

cmdline and environ are read from the process's memory (access_remote_vm): a read can wait
for the process's mmap lock, killably. The agent reads them once per (pid, start time), in
its discovery thread, never in the sampling thread (collectors/job_sampler.py).
"""

from __future__ import annotations

import os
from typing import Iterable

from diskprobe.roots import HostRoots

CMDLINE_MAX = 32 * 1024  # a command line past this is cut: enough for any match
ENVIRON_MAX = 256 * 1024  # a job's environment past this is cut (variables past it: unknown)
FDS_MAX = 4096  # open files looked at per process for an accelerator node
# The device nodes of accelerators, as their drivers name them: NVIDIA, the kernel's accel
# class (Intel Gaudi, ...), a DRM render node (AMD, Intel GPUs), AMD's KFD, AWS Neuron,
# Huawei Ascend.
ACCELERATOR_PREFIXES = ("/dev/nvidia", "/dev/accel/", "/dev/dri/renderD", "/dev/kfd",
                        "/dev/neuron", "/dev/davinci")  # fmt: skip
ACCELERATOR_GLOBS = (("/dev", "nvidia"), ("/dev/accel", ""), ("/dev/dri", "renderD"),
                     ("/dev", "kfd"), ("/dev", "neuron"), ("/dev", "davinci"))  # fmt: skip


def _read(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb", buffering=0) as handle:
            return handle.read(size)
    except OSError:  # gone (ENOENT, ESRCH), refused (EACCES, EPERM)
        return None


def list_pids(roots: HostRoots) -> list[int]:
    try:
        names = os.listdir(roots.proc)
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and name.isascii()]


def read_uptime_ticks(roots: HostRoots) -> int | None:
    """Now, in the clock ticks of /proc/<pid>/stat's start time (field 22)."""
    data = _read(roots.proc_path("uptime"), 128)
    try:
        return int(float(data.split()[0]) * os.sysconf("SC_CLK_TCK")) if data else None
    except (ValueError, IndexError, OverflowError):
        return None


# /proc/<pid>/cmdline: the arguments, each ended by a NUL: b"python\x00-u\x00train.py\x00".
# A process that rewrote its title (setproctitle) may leave one string with spaces.
def parse_cmdline(data: bytes) -> list[str]:
    words = data.split(b"\x00")
    if words and words[-1] == b"":
        words.pop()
    return [word.decode("utf-8", "surrogateescape") for word in words]


def read_cmdline(roots: HostRoots, pid: int) -> list[str] | None:
    data = _read(roots.proc_path(str(pid), "cmdline"), CMDLINE_MAX)
    return parse_cmdline(data) if data is not None else None


# /proc/<pid>/environ: b"HOME=/root\x00RANK=1\x00": the environment the process started with.
def parse_environ(data: bytes, keys: Iterable[str]) -> dict[str, str]:
    """Only `keys`: a job's environment may hold secrets, which are never kept."""
    wanted = {key.encode(): key for key in keys}
    found: dict[str, str] = {}
    for entry in data.split(b"\x00"):
        name, equals, value = entry.partition(b"=")
        if equals and name in wanted:
            found[wanted[name]] = value.decode("utf-8", "surrogateescape")
    return found


def read_environ(roots: HostRoots, pid: int, keys: Iterable[str]) -> dict[str, str] | None:
    data = _read(roots.proc_path(str(pid), "environ"), ENVIRON_MAX)
    return parse_environ(data, keys) if data is not None else None


def holds_accelerator(roots: HostRoots, pid: int) -> bool | None:
    """Whether one of the process's open files is an accelerator's node, by the fd links'
    text only (readlink: nothing the job opened is stat()ed); None when they are refused."""
    fd_dir = roots.proc_path(str(pid), "fd")
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    for name in names[:FDS_MAX]:
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.startswith(ACCELERATOR_PREFIXES):
            return True
    return False


def accelerator_nodes_present(dev: str = "/dev") -> bool:
    """Whether any accelerator's device node exists (no GPU, no driver: no scan at all)."""
    for directory, prefix in ACCELERATOR_GLOBS:
        try:
            names = os.listdir(directory.replace("/dev", dev, 1))
        except OSError:
            continue
        if any(name.startswith(prefix) for name in names):
            return True
    return False
