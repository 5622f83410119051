"""The one long-lived bpftrace child behind [latency], and its supervisor thread.

- Started as smartctl is (smart/child.py): its own process group, PR_SET_PDEATHSIG when no
  sudo is in between. Through sudo that signal does not reach bpftrace (a set-user-ID exec
  clears it): bpftrace prints every second, so once the agent is gone its next write fails
  (EPIPE, SIGPIPE) and it exits within a second.
- Its stdout is read line by line, each line at most MAX_LINE bytes (more is dropped and
  counted), into one-second dumps (sources/latency_parse.py); each complete dump is handed
  to `on_dump` (the collector's window, under its lock: a collection never waits on the
  child). A dump the child did not finish (it died) is dropped: no partial second, no stale one.
- A child that exits is started again after 1, 2, 4 ... 300 s, restarts counted; one whose
  stderr says it cannot run here (no tool, no root, no BTF, no tracepoint, lockdown) is not:
  `fatal` says what is missing, once.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
from dataclasses import dataclass, field
from typing import IO, Callable

from diskprobe.smart.child import kill_group, load_prctl, spawn
from diskprobe.sources.latency_parse import Dump, DumpReader

MAX_LINE = 4 * 1024 * 1024  # a dump's map line: 4,096 keys (bpftrace's default cap) of ~60 B
MAX_STDERR = 4096
BACKOFF_MAX_SEC = 300.0
# What bpftrace (or sudo) says when it cannot run here, and what the operator is told.
FATAL = (
    ("only supports running as the root user", "bpftrace runs only as root: run diskprobe "
     "as root or set [latency] use_sudo = true with the `diskprobe sudoers` file"),
    ("a password is required", "sudo refused bpftrace (no rule): install the file "
     "`diskprobe sudoers` prints"),
    ("not allowed to execute", "sudo refused bpftrace (no rule for this script): install the "
     "file `diskprobe sudoers` prints"),
    ("tracepoint not found", "the kernel has no block:block_io_start tracepoint (Linux 6.5 or "
     "later has it)"),
    ("lockdown", "the kernel's lockdown forbids BPF tracing"),
    ("BTF", "the kernel has no BTF (CONFIG_DEBUG_INFO_BTF)"),
    ("tracefs", "tracefs is not mounted at /sys/kernel/tracing"),
)  # fmt: skip


@dataclass
class ChildState:
    restarts: int = 0
    fatal: str | None = None  # why it cannot run here; set once, the supervisor then stops
    garbage: int = 0
    running: bool = False
    stderr: list[str] = field(default_factory=list)


class LatencyChild:
    def __init__(self, argv: list[str], env: dict[str, str],
                 on_dump: Callable[[Dump], None]) -> None:  # fmt: skip
        self._argv, self._env, self._on_dump = argv, env, on_dump
        self.state = ChildState()
        self._stop = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._supervise, name="latency", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Never waits: the group is killed, the daemon thread ends when its read does."""
        self._stop.set()
        process = self._process
        if process is not None:
            kill_group(process)

    def _supervise(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            ran_long = self._run_once()
            if self.state.fatal or self._stop.is_set():
                return
            self.state.restarts += 1
            backoff = 1.0 if ran_long else min(backoff * 2, BACKOFF_MAX_SEC)
            self._stop.wait(backoff)

    def _run_once(self) -> bool:
        """One child's life; True when it delivered at least one dump (it ran, then died)."""
        try:
            process = self._process = spawn(self._argv, self._env, load_prctl())
        except OSError as error:
            self.state.fatal = f"cannot start {self._argv[0]}: {error.strerror}"
            return False
        self.state.running = True
        try:
            delivered = self._read(process)
        finally:
            self.state.running = False
            kill_group(process)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            with contextlib.suppress(subprocess.TimeoutExpired):  # stuck: reaped later
                process.wait(timeout=1.0)
        if not delivered:
            self.state.fatal = self.state.fatal or _fatal("\n".join(self.state.stderr))
        return delivered

    def _read(self, process: subprocess.Popen[bytes]) -> bool:
        reader, delivered = DumpReader(), False
        streams: dict[int, tuple[IO[bytes], bytearray]] = {
            stream.fileno(): (stream, bytearray())
            for stream in (process.stdout, process.stderr) if stream is not None
        }  # fmt: skip
        stderr_fd = process.stderr.fileno() if process.stderr else -1
        with selectors.DefaultSelector() as selector:
            for fd in streams:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map() and not self._stop.is_set():
                for key, _ in selector.select(1.0):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    pending = streams[key.fd][1]
                    pending += chunk
                    for line in _lines(pending, self.state):
                        if key.fd == stderr_fd:
                            self._note_stderr(line)
                        elif (dump := reader.feed(line)) is not None:
                            delivered = True
                            self._on_dump(dump)
        self.state.garbage += reader.garbage
        return delivered

    def _note_stderr(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if text and sum(map(len, self.state.stderr)) < MAX_STDERR:
            self.state.stderr.append(text[:500])


def _lines(pending: bytearray, state: ChildState) -> list[bytes]:
    """Complete lines taken off `pending`; a line past MAX_LINE is dropped and counted."""
    lines = []
    while (end := pending.find(b"\n")) >= 0:
        lines.append(bytes(pending[:end]))
        del pending[: end + 1]
    if len(pending) > MAX_LINE:
        state.garbage += 1
        pending.clear()
    return lines


def _fatal(stderr: str) -> str | None:
    """What is missing, when the child's own words say it cannot run here."""
    lowered = stderr.lower()
    for marker, meaning in FATAL:
        if marker.lower() in lowered:
            return meaning
    return None
