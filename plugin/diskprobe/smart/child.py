"""One child process (smartctl, nvme-cli, sudo): started in its own process group, dying with
diskprobe where the kernel allows it, read with a byte cap and a deadline, never waited on
past its exit.

- Process group: a kill reaches sudo and smartctl together, and strays it left behind.
- PR_SET_PDEATHSIG(SIGKILL), set in the child before exec: when diskprobe dies, even by
  SIGKILL, the kernel kills the child. It does not carry through sudo (setuid: the kernel
  clears it on a set-user-ID exec, and sudo's own child never had it), nor to a grandchild
  (it is cleared on fork). The signal comes when the *thread* that started the child ends:
  the reading thread waits for its child, so that thread outlives it.
- Cap: at most `limit` bytes of stdout and stderr together are kept; past that the group is
  killed and the read fails (50 MB of output must not cost 50 MB of memory, or more).
- Exit: once the child has exited, pipes a grandchild still holds are drained for at most
  EXIT_GRACE, then closed; EOF is never awaited.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import IO, Callable

MiB = 1024 * 1024
MAX_OUTPUT = 4 * MiB  # the largest real `smartctl -x --json` in the corpus is 45 KiB
EXIT_GRACE = 0.2  # seconds to drain pipes after the child exited (a grandchild may hold them)
POLL = 0.1  # seconds between checks of the child's exit, the deadline and a stop
CHUNK = 64 * 1024
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass
class Captured:
    stdout: bytes
    stderr: bytes
    status: int | None  # None: killed by us (timeout, cap, stop) or not reaped yet
    outcome: str = ""  # "", "timeout", "overflow" or "stopped"


def load_prctl() -> Callable[..., int] | None:
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux, or no libc symbol
        return None
    return prctl


def death_signal(prctl: Callable[..., int] | None) -> Callable[[], None] | None:
    """A preexec function: SIGKILL the child when diskprobe (this thread) ends."""
    if prctl is None:
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        # Runs in the forked child before exec: no allocation-heavy work, no locks.
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # diskprobe died before prctl took effect: the race
            os.kill(os.getpid(), signal.SIGKILL)

    return set_death_signal


def spawn(argv: list[str], env: dict[str, str],
          prctl: Callable[..., int] | None) -> subprocess.Popen[bytes]:  # fmt: skip
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, killed as a whole
        preexec_fn=death_signal(prctl),
        env=env,
    )


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group; call before reaping (the zombie pins the group id)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:  # members run as root under sudo: kill what we may
        with contextlib.suppress(OSError):
            process.kill()


def _exited(pid: int) -> bool:
    """Has the child exited? Without reaping it, so its group id stays valid for killpg."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:  # reaped elsewhere
        return True


def capture(process: subprocess.Popen[bytes], deadline: float, stopping: Callable[[], bool],
            limit: int = MAX_OUTPUT) -> Captured:  # fmt: skip
    """Read the child's output until it exited (plus grace), the deadline, the cap or a stop;
    then kill its group and close the pipes. The caller reaps (see reap)."""
    streams: list[IO[bytes]] = [s for s in (process.stdout, process.stderr) if s is not None]
    data = {stream.fileno(): bytearray() for stream in streams}
    with selectors.DefaultSelector() as selector:
        for fd in data:
            selector.register(fd, selectors.EVENT_READ)
        outcome = _pump(process, selector, data, deadline, stopping, limit)
    kill_group(process)  # the hung or flooding child, or strays a finished one left
    out, err = (bytes(data[s.fileno()]) if s else b"" for s in (process.stdout, process.stderr))
    for stream in streams:
        stream.close()
    return Captured(out, err, None, outcome)


def _pump(process: subprocess.Popen[bytes], selector: selectors.BaseSelector,
          data: dict[int, bytearray], deadline: float, stopping: Callable[[], bool],
          limit: int) -> str:  # fmt: skip
    """The read loop of capture(): "" when the child exited, else why it stopped."""
    exited_at: float | None = None
    total, idle = 0, 0.0005
    while True:
        now = time.monotonic()
        if exited_at is None and _exited(process.pid):
            exited_at = now
        if exited_at is not None and (not selector.get_map() or now - exited_at > EXIT_GRACE):
            return ""
        if stopping():
            return "stopped"
        if now >= deadline:
            return "timeout"
        if not selector.get_map():  # pipes at EOF, the child not gone yet: it soon will be
            idle = min(idle * 2, POLL, deadline - now)
            time.sleep(idle)
            continue
        for key, _ in selector.select(min(POLL, deadline - now)):
            chunk = os.read(key.fd, CHUNK)
            if not chunk:
                selector.unregister(key.fd)
                continue
            total += len(chunk)
            if total > limit:
                return "overflow"
            data[key.fd] += chunk


def reap(process: subprocess.Popen[bytes], captured: Captured) -> Captured:
    """The exit status, without blocking: a child stuck in the kernel (D state) ignores even
    SIGKILL for a while; subprocess reaps it later (its Popen joins subprocess._active)."""
    try:
        status = process.wait(timeout=EXIT_GRACE)
    except subprocess.TimeoutExpired:
        status = None
    captured.status = None if captured.outcome else status
    return captured
