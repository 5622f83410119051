"""pySMART on our exec layer: the one module that touches pySMART's internals.

pySMART's own `_exec` runs Popen without a timeout and decodes through chardet (about 0.1 s
of CPU per drive); ours goes through CommandRunner (timeout, process-group kill, sudo,
counts) and decodes UTF-8 directly. Subclasses decide what pySMART gets for each call by
overriding `answer` (ours, public), never pySMART's `_exec`.

Checked against pySMART 1.4.3 (PYSMART_CHECKED; tests/test_smart_text_parser.py pins both
internals, so an upgrade that changes them fails there):
- `Smartctl._exec(cmd)`: every smartctl call pySMART makes (generic_call, try_generic_call)
  ends in it with cmd = [smartctl_path, *params] and expects (output lines, exit status);
- `Device._capacity`: the exact byte count of "User Capacity" / "Total NVM Capacity". The
  public `size` falls back to humanfriendly's parse of the rounded "[120 GB]", which is no
  byte count, and `capacity` is that rounded text.
"""

from __future__ import annotations

from typing import Any

from pySMART.smartctl import Smartctl

from diskprobe.smart.runner import CommandRunner, ExecResult

PYSMART_CHECKED = "1.4"  # the pySMART release series the internals below were checked on


def pysmart_reply(result: ExecResult) -> tuple[list[str], int]:
    """An ExecResult as pySMART's `_exec` returns it: lines and a status (1: did not run)."""
    return result.stdout.splitlines(), 1 if result.exit_status is None else result.exit_status


class RunnerSmartctl(Smartctl):  # type: ignore[misc]
    """pySMART's injectable Smartctl, its calls run by our CommandRunner."""

    def __init__(self, runner: CommandRunner, options: list[str]) -> None:
        super().__init__(smartctl_path=runner.program, options=options)
        self._runner = runner
        self.calls: list[list[str]] = []
        self.last: ExecResult | None = None

    def run(self, params: list[str]) -> ExecResult:
        """One real smartctl call, remembered in `calls` and `last`."""
        self.calls.append(list(params))
        result = self._runner.run(params)
        self.last = result
        return result

    def answer(self, params: list[str]) -> tuple[list[str], int]:
        """What pySMART gets for a call with these params: by default, a real run."""
        return pysmart_reply(self.run(params))

    def _exec(self, cmd: list[str]) -> tuple[list[str], int]:
        # pySMART 1.4.x's hook: cmd is [smartctl_path, *params] (its own sudo stays off: ours
        # applies), and it wants (lines, status).
        return self.answer(list(cmd[1:]))


def capacity_bytes(device: Any) -> int | None:
    """The exact capacity pySMART read (pySMART 1.4.x: `Device._capacity`), None if none."""
    capacity = getattr(device, "_capacity", None)
    return capacity if isinstance(capacity, int) and capacity else None
