"""DiskGuardCallback for Keras 3 (any backend) and tf.keras: stop, skip checkpoints or
summaries, or warn.

    guard = DiskGuard("/data/ckpt", min_free_bytes="20GB")
    checkpoint = keras.callbacks.ModelCheckpoint("/data/ckpt/{epoch:03d}.weights.h5", ...)
    model.fit(..., callbacks=[DiskGuardCallback(guard, "skip_checkpoints", checkpoint=checkpoint)])
    board = keras.callbacks.TensorBoard("/data/logs")
    model.fit(..., callbacks=[DiskGuardCallback(guard, "skip_summaries", tensorboard=board)])

Importing this module imports keras (or tensorflow.keras when Keras 3 is not installed).
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Sequence

from diskprobe.guard import DiskGuard, GuardStatus, logger
from diskprobe.integrations._common import InputWaitHooks, Transitions, check_action
from diskprobe.integrations.training_output import TrainingOutput


def _import_keras() -> Any:
    # Through importlib, so type checking never depends on which framework is installed.
    try:
        return importlib.import_module("keras")
    except ImportError:  # TF 2.x before 2.16 ships Keras 2 as tf.keras only
        return importlib.import_module("tensorflow.keras")


keras = _import_keras()
_Callback: Any = keras.callbacks.Callback

# The hooks in which ModelCheckpoint saves and TensorBoard writes its summaries.
_WRITING_HOOKS = ("on_epoch_end", "on_train_batch_end")


class DiskGuardCallback(_Callback):  # type: ignore[misc]
    """Checks `guard` at each epoch end (and every `every_n_batches` batches if given).

    action="stop": sets model.stop_training (Keras ends the epoch's loop after that batch).
    action="skip_checkpoints" / "skip_summaries": the wrapped `checkpoint` (a ModelCheckpoint)
    or `tensorboard` (a TensorBoard; either may be any callback) gets every event, but its
    writing ones (epoch end, batch end, a validation pass) only while the last check was ok;
    an epoch end's check comes first, and a validation pass (before it) follows the previous
    check. Train begin and end always pass: TensorBoard opens and closes its writers there
    (and writes the model graph when the fit starts, before any check).
    action="warn": only logs (logger "diskprobe.guard", once per change).
    """

    def __init__(
        self,
        guard: DiskGuard,
        action: str = "stop",
        *,
        checkpoint: Any = None,
        tensorboard: Any = None,
        every_n_batches: int | None = None,
    ) -> None:
        super().__init__()
        self.guard = guard
        self.action = check_action(action)
        if checkpoint is not None and tensorboard is not None:
            raise ValueError("pass checkpoint= or tensorboard=: one DiskGuardCallback for each")
        if action == "skip_checkpoints" and checkpoint is None:
            raise ValueError('action="skip_checkpoints" needs checkpoint=ModelCheckpoint(...)')
        if action == "skip_summaries" and tensorboard is None:
            raise ValueError('action="skip_summaries" needs tensorboard=TensorBoard(...)')
        self.checkpoint = checkpoint
        self.tensorboard = tensorboard
        self._wrapped = checkpoint if checkpoint is not None else tensorboard
        self.every_n_batches = every_n_batches
        self.skipped = 0  # epoch ends whose checkpoint or summaries were skipped so far
        self.last_status: GuardStatus | None = None
        self._transitions = Transitions()
        self._skipping_validation = False

    def _check(self, where: str) -> GuardStatus:
        status = self.guard.check()
        self.last_status = status
        self._transitions.note(status, self.action, where)
        if not status.ok and self.action == "stop":
            self.model.stop_training = True
        return status

    def _forward(self, hook: str, *args: Any) -> None:
        if self._wrapped is None:
            return
        low = self.last_status is not None and not self.last_status.ok
        if hook.startswith("on_test_"):
            # A validation pass goes through whole or not at all: TensorBoard pushes its
            # validation writer at the pass's begin and pops it at its end.
            if hook == "on_test_begin":
                self._skipping_validation = low
            if self._skipping_validation:
                return
        elif hook in _WRITING_HOOKS and low:
            if hook == "on_epoch_end":
                self._note_skip(args[0])
            return
        getattr(self._wrapped, hook)(*args)

    def _note_skip(self, epoch: int) -> None:
        self.skipped += 1
        what = "checkpoint" if self._wrapped is self.checkpoint else "summaries"
        reasons = self.last_status.reasons if self.last_status is not None else ()
        logger.info("diskprobe: %s of epoch %s skipped: %s", what, epoch + 1, "; ".join(reasons))

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        if self._wrapped is not None:
            self._wrapped.set_model(model)

    def set_params(self, params: Any) -> None:
        super().set_params(params)
        if self._wrapped is not None:
            self._wrapped.set_params(params)

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

    def on_test_begin(self, logs: Any = None) -> None:
        self._forward("on_test_begin", logs)

    def on_test_end(self, logs: Any = None) -> None:
        self._forward("on_test_end", logs)

    def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._forward("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        self._forward("on_test_batch_end", batch, logs)


class InputWaitCallback(InputWaitHooks, _Callback):  # type: ignore[misc]
    """The share of step time a fit waits for its next batch (diskprobe.integrations.
    input_wait). With the torch and jax backends Keras fetches each batch (arrays, PyDataset,
    tf.data) before on_train_batch_begin, so the time from one batch's end to the next one's
    begin is the wait. The TensorFlow backend fetches inside its compiled train function, where
    no callback sees it: there the callback wraps model.train_function for the fit, takes the
    step's batches from the iterator itself (timed) and hands them to Keras's own per-batch
    path (the one it takes for iterators that are not tf.data's), so each step's compiled
    function runs as before; steps_per_execution > 1 then runs its steps one call each.

        model.fit(..., callbacks=[InputWaitCallback(["/mnt/data"])])
    """

    def __init__(self, data_paths: Sequence[str] = (), window_steps: int = 50,
                 output: TrainingOutput | None = None) -> None:  # fmt: skip
        super().__init__(data_paths, window_steps, output)
        self._wrapped: Any = None  # the TensorFlow backend's train_function, while wrapped
        self._ends: tuple[type[BaseException], ...] = (StopIteration,)

    def on_train_begin(self, logs: Any = None) -> None:
        backend = getattr(getattr(keras, "backend", None), "backend", lambda: "")()
        function = getattr(self.model, "train_function", None)
        # fit() made it just before; a fit that raised never restored it: not wrapped twice
        timed = self._timed_train_function
        if backend == "tensorflow" and callable(function) and function != timed:
            errors = importlib.import_module("tensorflow").errors
            self._ends = (StopIteration, errors.OutOfRangeError)
            self._wrapped = function
            self.model.train_function = timed

    def _timed_train_function(self, iterator: Any) -> Any:
        steps = max(1, int(getattr(self.model, "steps_per_execution", 1) or 1))
        started = time.monotonic()
        batches = []
        for _ in range(steps):
            try:
                batches.append(next(iterator))
            except self._ends as error:
                if not batches:
                    raise error
                break
        self.meter.batch_wait(time.monotonic() - started)
        return self._wrapped(iter(batches))

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch_started()

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if self._wrapped is None:  # else _timed_train_function timed the fetch itself
            self._batch_fetched()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self._step_ended()

    def on_train_end(self, logs: Any = None) -> None:
        if self._wrapped is not None:
            self.model.train_function, self._wrapped = self._wrapped, None
        self.summary = self.meter.close()

