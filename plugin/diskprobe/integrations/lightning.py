"""DiskGuardCallback for PyTorch Lightning 2.x: stop the fit (trainer.should_stop), skip the
loggers' summaries, or warn.

    guard = DiskGuard("/data/ckpt", min_free_bytes="20GB")
    trainer = lightning.pytorch.Trainer(callbacks=[DiskGuardCallback(guard)], ...)

Importing this module imports lightning.pytorch (or the standalone pytorch_lightning).
"""

from __future__ import annotations

import importlib
from typing import Any

from diskprobe.guard import DiskGuard, GuardStatus
from diskprobe.integrations._common import InputWaitHooks, Transitions, check_action


def _import_lightning() -> Any:
    try:
        return importlib.import_module("lightning.pytorch")
    except ImportError:
        return importlib.import_module("pytorch_lightning")


_Callback: Any = _import_lightning().Callback

# The Logger methods that write (finalize, which closes the event file, is not one of them).
_WRITING_METHODS = ("log_metrics", "log_hyperparams", "log_graph", "save")


def _skip(*_args: Any, **_kwargs: Any) -> None:
    """What a paused logger's writing methods do."""


class DiskGuardCallback(_Callback):  # type: ignore[misc]
    """Checks `guard` at each training epoch end (and every `every_n_batches` batches).

    action="stop": trainer.should_stop = True (Lightning stops after the current step or
    epoch, honouring min_epochs/min_steps). action="warn": only logs (once per change).
    action="skip_summaries": while space is low, every logger in trainer.loggers (TensorBoard,
    CSV, any Logger) skips log_metrics, log_hyperparams, log_graph and save; the check comes
    before Lightning logs that epoch's (or batch's) metrics. Only those methods are shadowed,
    on the logger objects: trainer.logger, `self.logger.experiment` and finalize stay as they
    are, and the shadows are removed when space recovers, and when the fit ends or fails.
    For skipping checkpoints, put the guard in the checkpoint's hands instead: Lightning's
    ModelCheckpoint is found by type by the Trainer, so it cannot be wrapped transparently.
    """

    def __init__(
        self, guard: DiskGuard, action: str = "stop", *, every_n_batches: int | None = None
    ) -> None:
        super().__init__()
        if check_action(action) == "skip_checkpoints":
            raise ValueError('Lightning supports action="stop", "skip_summaries" or "warn"')
        self.guard = guard
        self.action = action
        self.every_n_batches = every_n_batches
        self.skipped = 0  # log_metrics calls skipped so far (action="skip_summaries")
        self.last_status: GuardStatus | None = None
        self._transitions = Transitions()
        # Each paused logger, with the writing methods it had set on itself (restored as such).
        self._paused: list[tuple[Any, dict[str, Any]]] = []

    def _check(self, trainer: Any, where: str) -> None:
        status = self.guard.check()
        self.last_status = status
        self._transitions.note(status, self.action, where)
        if not status.ok and self.action == "stop":
            trainer.should_stop = True
        if self.action == "skip_summaries" and not status.ok:
            self._pause(trainer.loggers)
        elif self.action == "skip_summaries":
            self._resume()

    def _pause(self, loggers: Any) -> None:
        if self._paused:
            return
        for logger in loggers:
            own = {name: vars(logger)[name] for name in _WRITING_METHODS if name in vars(logger)}
            self._paused.append((logger, own))
            for name in _WRITING_METHODS:
                setattr(logger, name, self._skip_metrics if name == "log_metrics" else _skip)

    def _resume(self) -> None:
        for logger, own in self._paused:
            for name in _WRITING_METHODS:
                if name in own:
                    setattr(logger, name, own[name])
                else:
                    delattr(logger, name)  # the class's method shows through again
        self._paused = []

    def _skip_metrics(self, *_args: Any, **_kwargs: Any) -> None:
        self.skipped += 1

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._check(trainer, f"end of epoch {trainer.current_epoch + 1}")

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.every_n_batches and (batch_idx + 1) % self.every_n_batches == 0:
            self._check(trainer, f"batch {batch_idx + 1}")

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._resume()  # before Lightning's logger.finalize("success"), which closes the file

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._resume()


class InputWaitCallback(InputWaitHooks, _Callback):  # type: ignore[misc]
    """The share of step time a fit waits for its next batch (diskprobe.integrations.
    input_wait): Lightning fetches a batch before on_train_batch_start, so the time from one
    batch's end to the next batch's start is the wait. `meter.windows` and the log say it.

        trainer = lightning.pytorch.Trainer(callbacks=[InputWaitCallback(["/mnt/data"])])

    With output=TrainingOutput(...) each window also goes to InfluxDB, tagged with the
    trainer's global_rank.
    """

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if self.meter.output is not None:
            self.meter.output.set_rank(int(getattr(trainer, "global_rank", 0)))

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._epoch_started()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                             batch_idx: int) -> None:  # fmt: skip
        self._batch_fetched()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:  # fmt: skip
        self._step_ended()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.summary = self.meter.close()
