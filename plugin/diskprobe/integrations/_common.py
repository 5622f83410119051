"""What the framework callbacks share: action names and logging of guard transitions."""

from __future__ import annotations

import logging

from diskprobe.guard import GuardStatus

ACTIONS = ("stop", "skip_checkpoints", "warn")
logger = logging.getLogger("diskprobe.guard")


def check_action(action: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    return action


class Transitions:
    """Logs once when space runs low (with the reasons) and once when it recovers."""

    def __init__(self) -> None:
        self.low = False

    def note(self, status: GuardStatus, action: str, where: str) -> None:
        if not status.ok and not self.low:
            what = {"stop": "stopping training", "skip_checkpoints": "skipping checkpoints",
                    "warn": "continuing"}[action]  # fmt: skip
            logger.warning("diskprobe: low disk space at %s (%s); %s",
                           where, "; ".join(status.reasons), what)  # fmt: skip
        elif status.ok and self.low:
            logger.warning("diskprobe: disk space is sufficient again at %s", where)
        self.low = not status.ok
