"""Running smartctl (or nvme-cli): timeout with process-group kill, optional `sudo -n`, counts.

Every drive read is one process; a hung one is killed with its whole process group (sudo and
smartctl together) when `timeout` expires, so one wedged controller cannot stall the rest.
The runner knows its live children: close() kills their groups at once, and no call starts
after it (smart/child.py: output cap, death signal, no waiting on pipes after exit). What a
child leaves behind, escaped from its group or not, is killed when its read ends and reaped
by this process, a subreaper (child.py's strays).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

from diskprobe.smart import child

# smartctl's exit status is a bitmask (smartctl(8) "RETURN VALUES"): bits 0-2 say a command
# failed, bits 3-7 what the disk reported. Whatever the bits, a read whose output holds no
# drive data failed (reader.py: one W!, one exec failure).
CMDLINE_ERROR = 1 << 0  # command line did not parse
OPEN_FAILED = 1 << 1  # device open failed, or it is in a low-power mode (-n)
SMART_COMMAND_FAILED = 1 << 2  # a SMART or other ATA command failed, or a checksum error
DISK_FAILING = 1 << 3  # SMART status check returned "DISK FAILING"
PREFAIL_NOW = 1 << 4  # prefail attributes <= threshold
FAILED_IN_PAST = 1 << 5  # some attribute was <= threshold in the past
ERROR_LOG = 1 << 6  # the device error log has records
SELF_TEST_ERRORS = 1 << 7  # the self-test log has errors
# "Device is in STANDBY mode, exit(2)" (text), also inside JSON "messages".
POWER_MODE_MESSAGE = re.compile(r"Device is in (\w+) mode", re.IGNORECASE)


@dataclass
class ExecResult:
    stdout: str
    stderr: str
    exit_status: int | None  # None: did not run or was killed
    timed_out: bool = False
    error: str = ""  # why it did not run (missing binary, exec failure), or was cut off
    overflow: bool = False  # more output than the cap: killed, the read failed
    counted_failed: bool = False  # already counted in ExecStats.failures (never twice)

    @property
    def left_asleep(self) -> bool:
        """smartctl -n found the drive in a low-power mode and did not wake it (exit bit 1)."""
        return bool(self.exit_status and self.exit_status & OPEN_FAILED) and bool(
            POWER_MODE_MESSAGE.search(self.stdout)
        )

    @property
    def command_failed(self) -> bool:
        """Bits 0-1: no usable output; a drive left asleep by -n is not a failure."""
        if self.exit_status is None:
            return True
        return bool(self.exit_status & (CMDLINE_ERROR | OPEN_FAILED)) and not self.left_asleep


class ExecStats:
    """Calls and failures, for diskprobe_agent; shared by worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0

    def record(self, failed: bool) -> None:
        with self._lock:
            self.calls += 1
            self.failures += int(failed)

    def add_failure(self) -> None:
        with self._lock:
            self.failures += 1

    def take(self) -> tuple[int, int]:
        """Counts since the last take()."""
        with self._lock:
            counts = (self.calls, self.failures)
            self.calls = self.failures = 0
            return counts


class CommandRunner:
    """Runs one configured program ("smartctl", "nvme") with a timeout, maybe through sudo."""

    def __init__(self, program: str, timeout: float, use_sudo: bool = False,
                 max_output: int = child.MAX_OUTPUT) -> None:  # fmt: skip
        self.program = program
        self.timeout = timeout
        self.use_sudo = use_sudo
        self.max_output = max_output
        self.stats = ExecStats()
        self._lock = threading.Lock()
        self._live: dict[subprocess.Popen[bytes], str] = {}  # -> its token (child.MARK)
        self._pending: child.Strays = set()  # strays killed but not reaped yet
        self._closed = False
        self._prctl = child.load_prctl()

    def resolved(self) -> str | None:
        """The program's full path, or None when it is not installed."""
        return shutil.which(self.program)

    def command(self, args: list[str]) -> list[str]:
        path = self.resolved() or self.program
        # -n: never prompt; fail at once when sudoers does not allow it.
        return (["sudo", "-n", path] if self.use_sudo else [path]) + args

    def close(self) -> None:
        """Kill every live child's process group and its strays (descendants that left the
        group), and refuse new calls; never blocks."""
        with self._lock:
            self._closed = True
            for process, token in self._live.items():
                found = child.strays(process.pid, token)
                child.kill_group(process)
                child.kill_strays(found)

    def count_failure(self, result: ExecResult) -> None:
        """A call that ran but whose read failed (no drive data, whatever its exit status):
        one failure, unless run() counted it already."""
        if not result.counted_failed:
            result.counted_failed = True
            self.stats.add_failure()

    def _stopping(self) -> bool:
        return self._closed

    def run(self, args: list[str]) -> ExecResult:
        if self.resolved() is None:
            self.stats.record(failed=True)
            return ExecResult("", "", None, error=f"{self.program}: not found on PATH")
        deadline = time.monotonic() + self.timeout
        child.become_subreaper(self._prctl)  # what the child leaves behind comes back to us
        token = secrets.token_hex(8)
        # LC_ALL=C: stable, parseable numbers and messages.
        env = {**os.environ, "LC_ALL": "C", child.MARK: token}
        try:
            process = child.spawn(self.command(args), env, self._prctl)
        except (OSError, subprocess.SubprocessError) as error:
            self.stats.record(failed=True)
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            return ExecResult("", "", None, error=f"{self.program}: {reason}")
        with self._lock:
            self._live[process] = token
            if self._closed:  # close() ran while this one started
                child.kill_group(process)
        captured = child.capture(process, deadline, self._stopping, self.max_output, token)
        with self._lock:  # before reaping: close() must not signal a reused process group
            self._live.pop(process, None)
        result = _result(child.reap(process, captured), self)
        self._reap_strays(captured.strays)
        result.counted_failed = result.command_failed
        self.stats.record(failed=result.command_failed)
        return result

    def _reap_strays(self, found: child.Strays) -> None:
        """Reap what this read left (killed in capture) and what earlier ones still had."""
        with self._lock:
            earlier, self._pending = self._pending, set()
        left = child.reap_adopted(found | earlier, child.EXIT_GRACE if found else 0.0)
        with self._lock:
            self._pending |= left


def _result(captured: child.Captured, runner: CommandRunner) -> ExecResult:
    stdout, stderr = _text(captured.stdout), _text(captured.stderr)
    if captured.outcome == "timeout":
        return ExecResult(stdout, stderr, None, timed_out=True)
    if captured.outcome == "overflow":
        limit = f"{runner.max_output / child.MiB:g} MiB"
        error = f"{runner.program} printed more than {limit}; process group killed"
        return ExecResult("", "", None, error=error, overflow=True)
    if captured.outcome == "stopped":
        return ExecResult(stdout, stderr, None, error="stopped: diskprobe is exiting")
    return ExecResult(stdout, stderr, captured.status)


def _text(data: bytes) -> str:
    # smartctl prints ASCII, but vendor strings can hold anything: never fail on decoding,
    # and keep such bytes (surrogateescape) for the outputs to write as %XX (serializers/text.py).
    return data.decode("utf-8", errors="surrogateescape")
