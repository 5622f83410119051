"""DiskGuardCallback for Keras 3 (any backend) and tf.keras: stop, skip checkpoints or warn.

    guard = DiskGuard("/data/ckpt", min_free_bytes="20GB")
    checkpoint = keras.callbacks.ModelCheckpoint("/data/ckpt/{epoch:03d}.weights.h5", ...)
    model.fit(..., callbacks=[DiskGuardCallback(guard, "skip_checkpoints", checkpoint=checkpoint)])

Importing this module imports keras (or tensorflow.keras when Keras 3 is not installed).
"""

from __future__ import annotations

import importlib
from typing import Any

from diskprobe.guard import DiskGuard, GuardStatus
from diskprobe.integrations._common import Transitions, check_action, logger


def _import_keras() -> Any:
    # Through importlib, so type checking never depends on which framework is installed.
    try:
        return importlib.import_module("keras")
    except ImportError:  # TF 2.x before 2.16 ships Keras 2 as tf.keras only
        return importlib.import_module("tensorflow.keras")


keras = _import_keras()
_Callback: Any = keras.callbacks.Callback

_SAVING_HOOKS = ("on_epoch_end", "on_train_batch_end", "on_batch_end")


class DiskGuardCallback(_Callback):  # type: ignore[misc]
    """Checks `guard` at each epoch end (and every `every_n_batches` batches if given).

    action="stop": sets model.stop_training (Keras ends the epoch's loop after that batch).
    action="skip_checkpoints": `checkpoint` (a ModelCheckpoint, or any callback) gets every
    event, but its saving events (epoch end, batch end) only while the guard is ok.
    action="warn": only logs (logger "diskprobe.guard", once per change).
    """

    def __init__(
        self,
        guard: DiskGuard,
        action: str = "stop",
        *,
        checkpoint: Any = None,
        every_n_batches: int | None = None,
    ) -> None:
        super().__init__()
        self.guard = guard
        self.action = check_action(action)
        if action == "skip_checkpoints" and checkpoint is None:
            raise ValueError('action="skip_checkpoints" needs checkpoint=ModelCheckpoint(...)')
        self.checkpoint = checkpoint
        self.every_n_batches = every_n_batches
        self.skipped = 0  # checkpoint saves skipped so far
        self.last_status: GuardStatus | None = None
        self._transitions = Transitions()

    def _check(self, where: str) -> GuardStatus:
        status = self.guard.check()
        self.last_status = status
        self._transitions.note(status, self.action, where)
        if not status.ok and self.action == "stop":
            self.model.stop_training = True
        return status

    def _forward(self, hook: str, *args: Any) -> None:
        if self.checkpoint is None:
            return
        if hook in _SAVING_HOOKS and self.last_status is not None and not self.last_status.ok:
            if hook == "on_epoch_end":
                self.skipped += 1
                logger.info("diskprobe: checkpoint of epoch %s skipped: %s",
                            args[0] + 1, "; ".join(self.last_status.reasons))  # fmt: skip
            return
        getattr(self.checkpoint, hook)(*args)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        if self.checkpoint is not None:
            self.checkpoint.set_model(model)

    def set_params(self, params: Any) -> None:
        super().set_params(params)
        if self.checkpoint is not None:
            self.checkpoint.set_params(params)

    def on_train_begin(self, logs: Any = None) -> None:
        self._forward("on_train_begin", logs)

    def on_train_end(self, logs: Any = None) -> None:
        self._forward("on_train_end", logs)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._forward("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._check(f"end of epoch {epoch + 1}")
        self._forward("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._forward("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self.every_n_batches and (batch + 1) % self.every_n_batches == 0:
            self._check(f"batch {batch + 1}")
        self._forward("on_train_batch_end", batch, logs)
