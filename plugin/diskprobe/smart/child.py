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
- Strays: a grandchild that calls setsid leaves the group. diskprobe is a subreaper, so such
  orphans become its children, not init's; each child has a token of its own in its
  environment (MARK), as has what it starts. When a read ends, the child's descendants and
  the adopted orphans with its token are killed and what diskprobe adopted is reaped; its
  other children (statfs helper, bpftrace) have no token. Root's, under sudo, are out of reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import IO, Callable, Set, Tuple

MiB = 1024 * 1024
MAX_OUTPUT = 4 * MiB  # the largest real `smartctl -x --json` in the corpus is 45 KiB
EXIT_GRACE = 0.2  # seconds to drain pipes after the child exited (a grandchild may hold them)
POLL = 0.1  # seconds between checks of the child's exit, the deadline and a stop
CHUNK = 64 * 1024
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36
MARK = "DISKPROBE_READ"  # the environment variable holding a child's token
Strays = Set[Tuple[int, int]]  # (pid, start time): a pid reused since is another process
_HAS_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
_reaper: list[bool] = []  # [True] once this process is a subreaper


@dataclass
class Captured:
    stdout: bytes
    stderr: bytes
    status: int | None  # None: killed by us (timeout, cap, stop) or not reaped yet
    outcome: str = ""  # "", "timeout", "overflow" or "stopped"
    strays: Strays = field(default_factory=set)  # what the child started: killed, to reap


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


def become_subreaper(prctl: Callable[..., int] | None) -> None:
    """Orphans of what this process starts become its children (once per process)."""
    if prctl is not None and not _reaper:
        _reaper.append(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


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
            limit: int = MAX_OUTPUT, token: str | None = None) -> Captured:  # fmt: skip
    """Read the child's output until it exited (plus grace), the deadline, the cap or a stop;
    then kill its group (and, with its token, its strays) and close the pipes. The caller
    reaps (see reap, and reap_adopted for the strays)."""
    streams: list[IO[bytes]] = [s for s in (process.stdout, process.stderr) if s is not None]
    data = {stream.fileno(): bytearray() for stream in streams}
    with selectors.DefaultSelector() as selector:
        for fd in data:
            selector.register(fd, selectors.EVENT_READ)
        outcome = _pump(process, selector, data, deadline, stopping, limit)
    found = strays(process.pid, token) if token is not None else set()
    kill_group(process)  # the hung or flooding child, or strays a finished one left
    kill_strays(found)
    out, err = (bytes(data[s.fileno()]) if s else b"" for s in (process.stdout, process.stderr))
    for stream in streams:
        stream.close()
    return Captured(out, err, None, outcome, found)


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


# -- strays: what a child started, wherever it went ------------------------------------------


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, parent, session, start time) of `pid`; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    """The children of `pid`, every thread's (an orphan goes to any thread of its reaper)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        if not _HAS_CHILDREN:  # a kernel without CONFIG_PROC_CHILDREN: every process's stat
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
            return [child for child in pids if (_stat(child) or ("", 0))[1] == pid]
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                found += map(int, f.read().split())
    return found


def _marked(pid: int, token: str) -> bool:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as handle:
        return f"{MARK}={token}".encode() in handle.read().split(b"\0")
    return False  # gone, or not ours to read (root's under sudo)


def strays(pid: int, token: str) -> Strays:
    """The child `pid`'s descendants while it lives, and the orphans of its tree this
    process adopted (they carry its token), with theirs."""
    adopted = [c for c in _children(os.getpid()) if c != pid and _marked(c, token)]
    pending, seen, found = [pid, *adopted], {pid, *adopted}, set()
    while pending:
        current = pending.pop()
        info = _stat(current) if current != pid else None
        if info is not None:
            found.add((current, info[3]))
        fresh = [c for c in _children(current) if c not in seen]
        seen.update(fresh)
        pending += fresh
    return found


def kill_strays(found: Strays) -> None:
    for pid, start in found:
        info = _stat(pid)
        if info is not None and info[3] == start:
            with contextlib.suppress(OSError):  # gone, or root's under sudo: out of reach
                os.kill(pid, signal.SIGKILL)


def reap_adopted(found: Strays, wait: float) -> Strays:
    """Reap this process's adopted zombies: those of `found`, and any child whose session is
    neither its own nor ours (a child we forked has one of those two: only an adopted orphan
    has another). Waits up to `wait` for `found` to end; returns those still there."""
    me, session = os.getpid(), os.getsid(0)
    deadline = time.monotonic() + wait
    while True:
        for pid in _children(me):
            state, _, sid, start = _stat(pid) or ("", 0, 0, -1)
            if state == "Z" and ((pid, start) in found or sid not in (pid, session)):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        left = {(pid, start) for pid, start in found if (_stat(pid) or ("", 0, 0, -1))[3] == start}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.01)
