"""DiskGuardCallback for PyTorch Lightning 2.x: stop the fit (trainer.should_stop) or warn.

    guard = DiskGuard("/data/ckpt", min_free_bytes="20GB")
    trainer = lightning.pytorch.Trainer(callbacks=[DiskGuardCallback(guard)], ...)

Importing this module imports lightning.pytorch (or the standalone pytorch_lightning).
"""

from __future__ import annotations

import importlib
from typing import Any

from diskprobe.guard import DiskGuard, GuardStatus
from diskprobe.integrations._common import Transitions, check_action


def _import_lightning() -> Any:
    try:
        return importlib.import_module("lightning.pytorch")
    except ImportError:
        return importlib.import_module("pytorch_lightning")


_Callback: Any = _import_lightning().Callback


class DiskGuardCallback(_Callback):  # type: ignore[misc]
    """Checks `guard` at each training epoch end (and every `every_n_batches` batches).

    action="stop": trainer.should_stop = True (Lightning stops after the current step or
    epoch, honouring min_epochs/min_steps). action="warn": only logs (once per change).
    For skipping checkpoints, put the guard in the checkpoint's hands instead: Lightning's
    ModelCheckpoint is found by type by the Trainer, so it cannot be wrapped transparently.
    """

    def __init__(
        self, guard: DiskGuard, action: str = "stop", *, every_n_batches: int | None = None
    ) -> None:
        super().__init__()
        if check_action(action) == "skip_checkpoints":
            raise ValueError('Lightning supports action="stop" or "warn"')
        self.guard = guard
        self.action = action
        self.every_n_batches = every_n_batches
        self.last_status: GuardStatus | None = None
        self._transitions = Transitions()

    def _check(self, trainer: Any, where: str) -> None:
        status = self.guard.check()
        self.last_status = status
        self._transitions.note(status, self.action, where)
        if not status.ok and self.action == "stop":
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._check(trainer, f"end of epoch {trainer.current_epoch + 1}")

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.every_n_batches and (batch_idx + 1) % self.every_n_batches == 0:
            self._check(trainer, f"batch {batch_idx + 1}")
