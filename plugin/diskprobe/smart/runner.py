"""Running smartctl (or nvme-cli): timeout with process-group kill, optional `sudo -n`, counts.

Every drive read is one process; a hung one is killed with its whole process group (sudo and
smartctl together) when `timeout` expires, so one wedged controller cannot stall the rest.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass

# smartctl's exit status is a bitmask (smartctl(8) "RETURN VALUES"):
CMDLINE_ERROR = 1 << 0  # command line did not parse
OPEN_FAILED = 1 << 1  # device open failed, or it is in a low-power mode (-n)
SMART_COMMAND_FAILED = 1 << 2  # a SMART or ATA command failed, or a checksum error: parse on
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
    error: str = ""  # why it did not run (missing binary, exec failure)

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

    def take(self) -> tuple[int, int]:
        """Counts since the last take()."""
        with self._lock:
            counts = (self.calls, self.failures)
            self.calls = self.failures = 0
            return counts


class CommandRunner:
    """Runs one configured program ("smartctl", "nvme") with a timeout, maybe through sudo."""

    def __init__(self, program: str, timeout: float, use_sudo: bool = False) -> None:
        self.program = program
        self.timeout = timeout
        self.use_sudo = use_sudo
        self.stats = ExecStats()

    def resolved(self) -> str | None:
        """The program's full path, or None when it is not installed."""
        return shutil.which(self.program)

    def command(self, args: list[str]) -> list[str]:
        path = self.resolved() or self.program
        # -n: never prompt; fail at once when sudoers does not allow it.
        return (["sudo", "-n", path] if self.use_sudo else [path]) + args

    def run(self, args: list[str]) -> ExecResult:
        if self.resolved() is None:
            self.stats.record(failed=True)
            return ExecResult("", "", None, error=f"{self.program}: not found on PATH")
        try:
            process = subprocess.Popen(
                self.command(args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, killed as a whole
                env={**os.environ, "LC_ALL": "C"},  # stable, parseable numbers and messages
            )
        except OSError as error:
            self.stats.record(failed=True)
            return ExecResult("", "", None, error=f"{self.program}: {error.strerror or error}")
        try:
            stdout, stderr = process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            stdout, stderr = process.communicate()
            self.stats.record(failed=True)
            return ExecResult(_text(stdout), _text(stderr), None, timed_out=True)
        result = ExecResult(_text(stdout), _text(stderr), process.returncode)
        self.stats.record(failed=result.command_failed)
        return result


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _text(data: bytes) -> str:
    # smartctl prints ASCII, but vendor strings can hold anything: never fail on decoding.
    return data.decode("utf-8", errors="replace")
