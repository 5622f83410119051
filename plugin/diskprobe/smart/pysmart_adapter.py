"""pySMART on our exec layer: its injectable Smartctl with `_exec` replaced.

pySMART's own `_exec` runs Popen without a timeout and decodes through chardet (about 0.1 s
of CPU per drive); ours goes through CommandRunner (timeout, process-group kill, sudo,
counts) and decodes UTF-8 directly. The captured output stays available as `last`, so the
text parser can fill in what pySMART's objects lack.
"""

from __future__ import annotations

from pySMART.smartctl import Smartctl

from diskprobe.smart.runner import CommandRunner, ExecResult


class RunnerSmartctl(Smartctl):  # type: ignore[misc]
    def __init__(self, runner: CommandRunner, options: list[str]) -> None:
        super().__init__(smartctl_path=runner.program, options=options)
        self._runner = runner
        self.calls: list[list[str]] = []
        self.last: ExecResult | None = None

    def _exec(self, cmd: list[str]) -> tuple[list[str], int]:
        # pySMART builds [smartctl_path, *params] (its own sudo stays off: ours applies).
        params = list(cmd[1:])
        self.calls.append(params)
        result = self._runner.run(params)
        self.last = result
        status = result.exit_status if result.exit_status is not None else 1
        return result.stdout.splitlines(), status
