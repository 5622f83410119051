"""Text path (smartctl < 7.0, or JSON that failed): one `smartctl --all`, parsed twice.

One process per drive: `smartctl --all -n NOCHECK [-d TYPE] -- PATH` through CommandRunner
(timeout, process-group kill, sudo, counts), with the spec's path and -d passed verbatim.
pySMART's Device runs on that same output: its injectable Smartctl answers every call pySMART
makes from the one read, so none of its extra calls starts a process (measured on 1.4.3:
`-d test` without an interface; for ata, scsi and megaraid types `-l sataphy`/`-l sasphy`, twice,
and for scsi/megaraid `--all` again, up to 8 calls per drive; `-l background` for SCSI output),
and its rewriting of the path ("/dev/" and "nvd" replaced anywhere) never reaches smartctl.
pySMART accepts no "auto" and rejects most -d types (usbjmicron, areca, cciss, sat,12:
"Unknown interface"), so it gets a parse hint instead of the spec's type, chosen from what the
output turned out to be: nvme, sas for SCSI (no phy probes), sat for ATA.

Which parse each DriveHealth field comes from, and why:
- The text parse (text_parser), always: protocol, media, serial, health_ok, power_mode,
  power_on_hours, power_cycles, temperature_warning_c, every counter and attribute;
  exit_status is the process's. pySMART raises on the brief attribute flags (`PO--CK`) that
  `-x` and `--format=brief` print, and on locale digit groups in NVMe counters ("10\ufffd779",
  the Windows-locale capture); it skips the first four output lines (model and serial of a
  capture without the banner), cuts serials at the first space, takes "Add. Product Id:" for
  the model, misses "Warning  Comp. Temperature Time" (two spaces), int()s fixed columns of
  SCSI error-counter rows (an odd row raises and loses the whole parse) and looks for
  "non-medium error count" in a case smartctl never prints. Its `assessment` folds attribute
  states into the overall result, so it is not smartctl's self-assessment: never health_ok.
  A serial never comes from pySMART: a masked one ("--"), dropped by the text parse, would
  come back.
  SCSI model is "VENDOR PRODUCT" as in smartctl's JSON `scsi_model_name` (pySMART: product
  only), so a drive keeps its model tag whichever path read it.
- The text parse first, pySMART where it found nothing: model, firmware, capacity_bytes,
  temperature_c: single, plainly labelled values pySMART reads on its own (its capacity
  pattern, its 190/194 temperature), a better guess than none for a layout not seen yet. On
  every corpus capture the text parse already has them; pySMART adds nothing there. So pySMART
  parses only when one of the four is missing: it costs more CPU than the text parse.
"""

from __future__ import annotations

from typing import Any

from pySMART import Device

from diskprobe.smart import text_parser
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.pysmart_adapter import RunnerSmartctl
from diskprobe.smart.reader import (
    DriveRead,
    failure,
    has_identity,
    problem_from_text,
    text_args,
)
from diskprobe.smart.runner import CMDLINE_ERROR, OPEN_FAILED, CommandRunner, ExecResult

# pySMART parse hints (accepted by pySMART's smartctl_isvalid_type, no probe calls).
PYSMART_INTERFACE = {"nvme": "nvme", "scsi": "sas", "ata": "sat"}


class OneReadSmartctl(RunnerSmartctl):
    """pySMART's smartctl, answered from one `--all` read of the spec as configured."""

    def __init__(self, spec: DriveSpec, runner: CommandRunner, nocheck: str) -> None:
        super().__init__(runner, ["-n", nocheck])
        self.args = text_args(spec, nocheck)

    def read(self) -> ExecResult:
        """The one smartctl call: made at the first request, then remembered."""
        if self.last is None:
            super()._exec([self.smartctl_path, *self.args])
        return self.last or ExecResult("", "", None, error="did not run")

    def _exec(self, cmd: list[str]) -> tuple[list[str], int]:
        if "--all" not in cmd:  # a pySMART probe: answered "failed" without a process
            return [], 1
        result = self.read()
        return result.stdout.splitlines(), 1 if result.exit_status is None else result.exit_status


def read_text(spec: DriveSpec, runner: CommandRunner, nocheck: str) -> DriveRead:
    smartctl = OneReadSmartctl(spec, runner, nocheck)
    result = smartctl.read()
    failed = failure(spec, result, runner.timeout)
    if failed is not None:
        return failed
    health = text_parser.parse(result.stdout, spec.tag)
    health.exit_status = result.exit_status or 0
    if health.power_mode != "active":
        return DriveRead(spec, health)
    # As read_json: the open failed, or nothing readable came back, and no drive is in it.
    failed_open = health.exit_status & (CMDLINE_ERROR | OPEN_FAILED)
    if (failed_open or health.health_ok is None) and not has_identity(health):
        return problem_from_text(spec, health, result)
    if lacks_pysmart_fields(health):
        fill_from_pysmart(health, pysmart_device(spec, smartctl, health.protocol))
    return DriveRead(spec, health)


def lacks_pysmart_fields(health: DriveHealth) -> bool:
    """Is one of the fields pySMART may fill missing (model, firmware, capacity, temperature)?"""
    values = (health.model, health.firmware, health.capacity_bytes, health.temperature_c)
    return any(value is None or value == "" for value in values)


def pysmart_device(spec: DriveSpec, smartctl: OneReadSmartctl, protocol: str) -> Any:
    """pySMART's parse of the read, or None where pySMART raised (it does, see above)."""
    try:
        interface = PYSMART_INTERFACE.get(protocol, "sat")
        return Device(spec.path, interface=interface, smartctl=smartctl)
    except Exception:  # any pySMART surprise costs its fallback values, never the read
        return None


def fill_from_pysmart(health: DriveHealth, device: Any) -> None:
    """model, firmware, capacity_bytes, temperature_c where the text parse found none."""
    if device is None:
        return
    try:
        health.model = health.model or str(device.model or "").strip()
        health.firmware = health.firmware or str(device.firmware or "").strip()
        if health.capacity_bytes is None and isinstance(device._capacity, int):
            health.capacity_bytes = device._capacity or None
        if health.temperature_c is None and isinstance(device.temperature, int):
            health.temperature_c = device.temperature
    except Exception:  # a pySMART property that raises
        return
