"""One drive read: one smartctl process, parsed by the JSON path or the pySMART text path."""

from __future__ import annotations

import re
from dataclasses import dataclass

from diskprobe.smart import json_parser
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.runner import CommandRunner, ExecResult

_VERSION = re.compile(r"smartctl (\d+)\.(\d+)")
_PERMISSION = re.compile(
    r"Permission denied|Operation not permitted|a password is required|"
    r"a terminal is required|is not allowed to execute|not in the sudoers",
    re.IGNORECASE,
)
_NO_DEVICE = re.compile(r"No such device|No such file or directory", re.IGNORECASE)
# sudo's own refusal (not smartctl's): the command line is not in the sudoers file.
_SUDO_REFUSED = re.compile(
    r"^sudo: .*(a password is required|not allowed to execute|a terminal is required)",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass
class DriveRead:
    """The outcome of one read: the health record, and what went wrong if anything did."""

    spec: DriveSpec
    health: DriveHealth
    problem: str = ""  # empty when the read worked (a drive left asleep is not a problem)
    permission: bool = False  # the problem is a missing privilege: the W! says what to do
    vanished: bool = False  # the device is gone: rediscover
    sudo_refused: bool = False  # sudo refused this command line: sudoers lacks this drive


def smartctl_version(runner: CommandRunner) -> tuple[int, int] | None:
    result = runner.run(["--version"])
    match = _VERSION.search(result.stdout)
    return (int(match.group(1)), int(match.group(2))) if match else None


def json_args(spec: DriveSpec, nocheck: str) -> list[str]:
    return ["--json=c", "--all", "-n", nocheck, *spec.smartctl_args()]


def text_args(spec: DriveSpec, nocheck: str) -> list[str]:
    """The text path's one call (smart/text_path.py), here so that `diskprobe sudoers` can
    build it without loading pySMART."""
    return ["--all", "-n", nocheck, *spec.smartctl_args()]


def read_json(spec: DriveSpec, runner: CommandRunner, nocheck: str) -> DriveRead:
    """smartctl >= 7.0: `--json=c --all`; raises NotSmartctlJson when no JSON came back.
    A failed read counts as an exec failure, whatever smartctl's exit status said."""
    result = runner.run(json_args(spec, nocheck))
    try:
        read = _json_read(spec, result, runner.timeout)
    except json_parser.NotSmartctlJson:
        runner.count_failure(result)
        raise
    if read.problem:
        runner.count_failure(result)
    return read


def _json_read(spec: DriveSpec, result: ExecResult, timeout: float) -> DriveRead:
    failed = failure(spec, result, timeout)
    if failed is not None:
        return failed
    data = json_parser.load(result.stdout)
    health = json_parser.parse(data, spec.tag)
    # No drive data, whatever the exit bits (bit 2 is a failed command too, smartctl(8)); a
    # drive left asleep by -n is no failure.
    if not health.standby and not has_drive_data(health):
        said = "; ".join(json_parser.messages(data))
        return _problem(spec, health, result, said or no_data(result))
    return DriveRead(spec, health)


def no_data(result: ExecResult) -> str:
    return f"no drive data in smartctl's output (exit status {result.exit_status})"


def has_identity(health: DriveHealth) -> bool:
    return bool(health.model or health.serial or health.counters or health.attributes)


def has_drive_data(health: DriveHealth) -> bool:
    """Anything the drive said: identity, a counter, an attribute or the health verdict."""
    return has_identity(health) or health.health_ok is not None


def failure(spec: DriveSpec, result: ExecResult, timeout: float) -> DriveRead | None:
    """A read that produced no output worth parsing: timeout, missing binary, killed, or
    refused by sudo (checked first: sudo's refusal is no smartctl output to parse)."""
    health = DriveHealth(device=spec.tag, exit_status=-1)
    refusal = _SUDO_REFUSED.search(result.stderr)
    if result.exit_status is not None and refusal is not None:
        line = result.stderr[refusal.start() :].splitlines()[0]
        health.exit_status = result.exit_status  # sudo's: smartctl never ran
        return _problem(spec, health, result, f"{line} (not in the sudoers file)")
    if result.exit_status is not None:
        return None
    if result.timed_out:
        return DriveRead(spec, health, f"timed out after {timeout:g}s; process group killed")
    if result.overflow:
        return DriveRead(spec, health, result.error)
    return DriveRead(spec, health, result.error or "did not run")


def _problem(spec: DriveSpec, health: DriveHealth, result: ExecResult, text: str) -> DriveRead:
    combined = f"{text}\n{result.stdout}\n{result.stderr}"
    return DriveRead(
        spec,
        health,
        problem=text.strip().splitlines()[0] if text.strip() else "smartctl failed",
        permission=bool(_PERMISSION.search(combined)),
        vanished=bool(_NO_DEVICE.search(combined)),
        sudo_refused=bool(_SUDO_REFUSED.search(result.stderr)),
    )


def sudo_refused(result: ExecResult) -> bool:
    """Did sudo itself refuse the command line (as opposed to smartctl failing)?"""
    return result.exit_status is not None and bool(_SUDO_REFUSED.search(result.stderr))


def problem_from_text(spec: DriveSpec, health: DriveHealth, result: ExecResult) -> DriveRead:
    """For the text and nvme-cli paths: classify a failed call the same way."""
    errors = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    output = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    # The telling line: a permission or no-device message; else the first thing on stderr
    # (usage text often follows it); else the last line of output.
    telling = next((line for line in errors + output if _PERMISSION.search(line)
                    or _NO_DEVICE.search(line)), None)  # fmt: skip
    text = telling or (errors[0] if errors else output[-1] if output else "command failed")
    return _problem(spec, health, result, text)
