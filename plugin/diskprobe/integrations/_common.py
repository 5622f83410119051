"""What the framework callbacks share: action names and logging of guard transitions, and
the input wait meter's hooks."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

from diskprobe.guard import GuardStatus, note_transition
from diskprobe.integrations.input_wait import InputWaitMeter

if TYPE_CHECKING:  # imported by whoever makes one: it brings the InfluxDB client along
    from diskprobe.integrations.training_output import TrainingOutput

# Each action: what the job does while space is low, and what resumes once it recovers.
_WORDING = {
    "stop": ("stopping training", ""),
    "skip_checkpoints": ("skipping checkpoints", "writing checkpoints again"),
    "skip_summaries": ("skipping summaries", "writing summaries again"),
    "warn": ("continuing", ""),
}
ACTIONS = tuple(_WORDING)


def check_action(action: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    return action


class Transitions:
    """Logs once when space runs low (with the reasons) and once when it recovers."""

    def __init__(self) -> None:
        self.low = False

    def note(self, status: GuardStatus, action: str, where: str) -> None:
        doing, resuming = _WORDING[action]
        self.low = note_transition(status, self.low, where, doing, resuming)


class InputWaitHooks:
    """Keras's and Lightning's InputWaitCallback, before the framework's own Callback class
    (which this __init__ calls): the meter, the fit's summary, and the end of the last
    step, from which the next batch's wait is counted. Each calls these from its hooks."""

    def __init__(self, data_paths: Sequence[str] = (), window_steps: int = 50,
                 output: TrainingOutput | None = None) -> None:  # fmt: skip
        super().__init__()
        self.meter = InputWaitMeter(data_paths, window_steps, output=output)
        self.summary: dict[str, Any] | None = None
        self._since: float | None = None

    def _epoch_started(self) -> None:
        self.meter.start()
        self._since = time.monotonic()

    def _batch_fetched(self) -> None:
        if self._since is not None:
            self.meter.batch_wait(time.monotonic() - self._since)

    def _step_ended(self) -> None:
        self.meter.step_end()
        self._since = time.monotonic()
