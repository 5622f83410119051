"""What the framework callbacks share: action names and logging of guard transitions."""

from __future__ import annotations

from diskprobe.guard import GuardStatus, note_transition

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
