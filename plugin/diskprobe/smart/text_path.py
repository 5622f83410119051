"""Text path (smartctl < 7.0, or JSON that failed): one `smartctl --all`, parsed twice.

One process per drive, through CommandRunner, with the spec's path and -d passed verbatim:
text_parser reads every field; pySMART, answered from that same output (OneReadSmartctl: its
probes start no process), fills only model, firmware, capacity or temperature where the text
parse found none. Why, and what pySMART gets wrong: docs/smart-text-path.md.
"""

from __future__ import annotations

from typing import Any

from pySMART import Device

from diskprobe.smart import text_parser
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.pysmart_adapter import RunnerSmartctl, capacity_bytes, pysmart_reply
from diskprobe.smart.reader import (
    DriveRead,
    failure,
    has_drive_data,
    problem_from_text,
    text_args,
)
from diskprobe.smart.runner import CommandRunner, ExecResult

# pySMART accepts no "auto" and rejects most -d types ("Unknown interface"), so it gets a
# parse hint for what the output turned out to be, not the spec's type: sat for ATA, sas for
# SCSI (no phy probes), nvme (accepted by its smartctl_isvalid_type, no probe calls).
PYSMART_INTERFACE = {"nvme": "nvme", "scsi": "sas", "ata": "sat"}


class OneReadSmartctl(RunnerSmartctl):
    """pySMART's smartctl, answered from one `--all` read of the spec as configured."""

    def __init__(self, spec: DriveSpec, runner: CommandRunner, nocheck: str) -> None:
        super().__init__(runner, ["-n", nocheck])
        self.args = text_args(spec, nocheck)

    def read(self) -> ExecResult:
        """The one smartctl call: made at the first request, then remembered."""
        return self.last if self.last is not None else self.run(self.args)

    def answer(self, params: list[str]) -> tuple[list[str], int]:
        if "--all" not in params:  # a pySMART probe: answered "failed" without a process
            return [], 1
        return pysmart_reply(self.read())


def read_text(spec: DriveSpec, runner: CommandRunner, nocheck: str) -> DriveRead:
    """As read_json: a failed read counts as an exec failure, whatever the exit status."""
    smartctl = OneReadSmartctl(spec, runner, nocheck)
    read = _text_read(spec, smartctl, runner.timeout)
    if read.problem and smartctl.last is not None:
        runner.count_failure(smartctl.last)
    return read


def _text_read(spec: DriveSpec, smartctl: OneReadSmartctl, timeout: float) -> DriveRead:
    result = smartctl.read()
    failed = failure(spec, result, timeout)
    if failed is not None:
        return failed
    health = text_parser.parse(result.stdout, spec.tag)
    health.exit_status = result.exit_status or 0
    if health.power_mode != "active":
        return DriveRead(spec, health)
    # As read_json: no drive in the output, whatever the exit bits, is a failed read.
    if not has_drive_data(health):
        return problem_from_text(spec, health, result)
    if lacks_pysmart_fields(health):
        fill_from_pysmart(health, pysmart_device(spec, smartctl, health.protocol))
    return DriveRead(spec, health)


def lacks_pysmart_fields(health: DriveHealth) -> bool:
    """Is one of the fields pySMART may fill missing (model, firmware, capacity, temperature)?"""
    values = (health.model, health.firmware, health.capacity_bytes, health.temperature_c)
    return any(value is None or value == "" for value in values)


def pysmart_device(spec: DriveSpec, smartctl: OneReadSmartctl, protocol: str) -> Any:
    """pySMART's parse of the read, or None where pySMART raised (brief attribute flags,
    locale digit groups: see docs/smart-text-path.md)."""
    try:
        interface = PYSMART_INTERFACE.get(protocol, "sat")
        return Device(spec.path, interface=interface, smartctl=smartctl)
    except Exception:  # any pySMART surprise costs its fallback values, never the read
        return None


def fill_from_pysmart(health: DriveHealth, device: Any) -> None:
    """model, firmware, capacity_bytes, temperature_c where the text parse found none.
    Never the serial (a masked "--", dropped by the text parse, would come back) nor
    health_ok (pySMART's assessment folds attribute states in: not smartctl's verdict)."""
    if device is None:
        return
    try:
        health.model = health.model or str(device.model or "").strip()
        health.firmware = health.firmware or str(device.firmware or "").strip()
        if health.capacity_bytes is None:
            health.capacity_bytes = capacity_bytes(device)
        if health.temperature_c is None and isinstance(device.temperature, int):
            health.temperature_c = device.temperature
    except Exception:  # a pySMART property that raises
        return
