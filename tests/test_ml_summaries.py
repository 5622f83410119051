"""action="skip_summaries" in real fits, and DiskGuard.allows(): summaries pause while space is
low and resume once it is freed, each change logged once.

As in test_ml_callbacks.py: a 64 MiB ext4 image is loop-mounted and a "filler" callback, placed
before the guard callback, writes and fsyncs WRITE bytes into it at each epoch end, so the
guard's check at the end of epoch K+1 (1-based) is the first to find space low. The filler
writes through epoch K+2 and, at the end of epoch FREED, deletes its files: the check then
finds space sufficient again. So the summaries of epochs K+1 and K+2 must be missing, and
every other epoch's present. The fits write real TensorBoard event files into the same
filesystem (Keras' TensorBoard callback through TensorFlow's summary writer; Lightning's
TensorBoardLogger through torch.utils.tensorboard), which are read back with tensorboard.

Needs tensorflow-cpu and tensorboard besides torch/keras/lightning: Keras 3's TensorBoard
callback imports tensorflow.summary on any backend, and tf.summary.scalar needs tensorboard.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diskprobe.guard import DiskGuard, format_size
from diskprobe.sources.statfs import StatfsProber, ThreadStatfs
from test_guard import BLOCK, FakeFs
from test_ml_callbacks import IMAGE_BYTES, K, _import_keras, _threshold, _write_epoch_file

from ci import skip_or_fail
from helpers import EVERY_CALL, loop_ext4

pytestmark = pytest.mark.xdist_group("ml")  # with test_ml_callbacks.py: see there

FREED = K + 3  # the epoch (1-based) at whose end the filler deletes its files
EPOCHS = K + 4
SKIPPED = {K + 1, K + 2}  # the epochs (1-based) whose summaries must be missing


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A fresh 64 MiB ext4 on a loop device, mounted; unmounted and detached even on failure."""
    with loop_ext4(IMAGE_BYTES, "diskprobe-summaries-", skip_or_fail) as mount_point:
        yield mount_point


def _fill_or_free(directory: Path, epoch: int) -> None:
    """At the end of `epoch` (1-based): one more WRITE through K+2, all of it deleted at FREED."""
    if epoch <= K + 2:
        _write_epoch_file(directory, epoch)
    elif epoch == FREED:
        for path in directory.iterdir():
            path.unlink()  # ext4 counts the blocks free at once (no fsync needed)


def _event_bytes(log_dir: Path) -> int:
    return sum(path.stat().st_size for path in log_dir.rglob("events.out.tfevents.*"))


def _scalars(log_dir: Path, subdir: str = "") -> dict[str, list[tuple[int, float]]]:
    """Each tag's (step, value) in the event files under log_dir/subdir, as written."""
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        from tensorboard.util.tensor_util import make_ndarray
    except ImportError as error:
        skip_or_fail(f"{error.name} not installed (pip install tensorboard)")
    found: dict[str, list[tuple[int, float]]] = {}
    for path in sorted((log_dir / subdir).glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.tag != "keras":  # Keras' model graph: not a scalar
                    found.setdefault(value.tag, []).append(
                        (event.step, float(make_ndarray(value.tensor)))
                    )
    return found


def _expect_flat(after: dict[int, int], flat: set[int]) -> None:
    """Event bytes after each epoch (0: before the first) grew in every epoch but `flat`."""
    grew = {epoch for epoch in range(1, EPOCHS + 1) if after[epoch] > after[epoch - 1]}
    assert grew == set(range(1, EPOCHS + 1)) - flat, after


def _expect_two_warnings(caplog: pytest.LogCaptureFixture) -> None:
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "diskprobe.guard" and r.levelno == logging.WARNING]  # fmt: skip
    assert len(warnings) == 2, warnings
    assert f"at end of epoch {K + 1} (" in warnings[0], warnings
    assert warnings[0].endswith("; skipping summaries"), warnings
    assert warnings[1] == (
        f"diskprobe: disk space is sufficient again at end of epoch {FREED}; "
        "writing summaries again"
    )


def _keras_callbacks(keras: Any, small_fs: Path, after: dict[str, dict[int, int]]) -> Any:
    from diskprobe.integrations.keras import DiskGuardCallback

    data, logs = small_fs / "data", small_fs / "logs"
    data.mkdir()

    class Filler(keras.callbacks.Callback):  # type: ignore[misc]
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            _fill_or_free(data, epoch + 1)

    class Probe(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_begin(self, logs: Any = None) -> None:
            self.on_epoch_end(-1)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            for subdir, sizes in after.items():
                sizes[epoch + 1] = _event_bytes(small_fs / "logs" / subdir)

    guard = DiskGuard(small_fs, min_free_bytes=_threshold(small_fs), check_every=EVERY_CALL)
    board = keras.callbacks.TensorBoard(str(logs))
    callback = DiskGuardCallback(guard, action="skip_summaries", tensorboard=board)
    return [Filler(), callback, Probe()], callback


@pytest.mark.root
@pytest.mark.slow
def test_keras_tensorboard_pauses_and_resumes(
    small_fs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keras = _import_keras()
    try:
        import tensorflow  # noqa: F401  (Keras' TensorBoard writes through tf.summary)
    except ImportError as error:
        skip_or_fail(f"{error.name} not installed (pip install tensorflow-cpu tensorboard)")
    import numpy as np

    after: dict[str, dict[int, int]] = {"train": {}, "validation": {}}
    callbacks, callback = _keras_callbacks(keras, small_fs, after)
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 8), dtype="float32"), rng.random((64, 1), dtype="float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    with caplog.at_level("INFO", logger="diskprobe.guard"):
        history = model.fit(x, y, epochs=EPOCHS, batch_size=16, verbose=0,
                            validation_data=(x[:16], y[:16]), callbacks=callbacks)  # fmt: skip
    assert len(history.history["loss"]) == EPOCHS  # training went on throughout
    # Epoch-end summaries follow that epoch end's check. A validation pass runs before it and
    # follows the previous epoch end's check: it pauses, and resumes, one epoch later.
    validated_low = {epoch + 1 for epoch in SKIPPED}
    _expect_flat(after["train"], SKIPPED)
    _expect_flat(after["validation"], SKIPPED & validated_low)
    ended = [epoch - 1 for epoch in range(1, EPOCHS + 1) if epoch not in SKIPPED]  # 0-based
    validated = [epoch - 1 for epoch in range(1, EPOCHS + 1) if epoch not in validated_low]
    logs = small_fs / "logs"
    for subdir in ("train", "validation"):
        steps = [step for step, _value in _scalars(logs, subdir)["epoch_loss"]]
        assert steps == ended, (subdir, steps)
    evaluations = _scalars(logs, "validation")["evaluation_loss_vs_iterations"]
    assert [step for step, _ in evaluations] == [4 * (epoch + 1) for epoch in validated]
    train_losses = dict(_scalars(logs, "train")["epoch_loss"])
    assert [train_losses[epoch] for epoch in ended] == pytest.approx(
        [history.history["loss"][epoch] for epoch in ended], rel=1e-5
    )
    assert callback.skipped == len(SKIPPED)
    _expect_two_warnings(caplog)
    # e.g. "diskprobe: summaries of epoch 6 skipped: /tmp/x/mnt: 33.3 MB free, below 35.4 MB"
    skips = [r.getMessage() for r in caplog.records
             if r.name == "diskprobe.guard" and r.levelno == logging.INFO]  # fmt: skip
    assert [m.split(" skipped: ")[0] for m in skips] == [
        f"diskprobe: summaries of epoch {epoch}" for epoch in sorted(SKIPPED)
    ]
    callback.guard.close()


def _lightning() -> tuple[Any, Any]:
    try:
        import lightning.pytorch as pl
        import tensorboard  # noqa: F401  (TensorBoardLogger writes through torch.utils.tensorboard)
        import torch  # noqa: F401
    except ImportError as error:
        skip_or_fail(f"{error.name} not installed (pip install lightning tensorboard)")
    from lightning.pytorch.loggers import TensorBoardLogger

    return pl, TensorBoardLogger


def _lightning_fit(pl: Any, logger: Any, callbacks: list[Any], epochs: int) -> Any:
    """A tiny fit that logs its loss once per epoch (on_epoch: at each epoch's end)."""
    import torch

    class Tiny(pl.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss, on_step=False, on_epoch=True)
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    trainer = pl.Trainer(
        max_epochs=epochs, accelerator="cpu", logger=logger, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, log_every_n_steps=1,
        callbacks=callbacks,
    )  # fmt: skip
    dataset = torch.utils.data.TensorDataset(torch.rand(64, 8), torch.rand(64, 1))
    trainer.fit(Tiny(), torch.utils.data.DataLoader(dataset, batch_size=16))
    return trainer


def _logged_epochs(logger: Any) -> list[int]:
    return [int(value) for _step, value in _scalars(Path(logger.log_dir)).get("epoch", [])]


@pytest.mark.root
@pytest.mark.slow
def test_lightning_logger_pauses_and_resumes(
    small_fs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pl, TensorBoardLogger = _lightning()
    from diskprobe.integrations.lightning import DiskGuardCallback

    class FillerAndProbe(pl.Callback):  # type: ignore[misc]
        # Lightning logs an epoch's metrics after every on_train_epoch_end: the next epoch's
        # start (or the train end) sees them written.
        def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
            after[trainer.current_epoch] = _event_bytes(logs)

        def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
            _fill_or_free(data, trainer.current_epoch + 1)

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            after[trainer.current_epoch] = _event_bytes(logs)

    data, logs = small_fs / "data", small_fs / "logs"
    data.mkdir()
    after: dict[int, int] = {}
    guard = DiskGuard(small_fs, min_free_bytes=_threshold(small_fs), check_every=EVERY_CALL)
    callback = DiskGuardCallback(guard, action="skip_summaries")
    logger = TensorBoardLogger(str(logs), name="tiny", default_hp_metric=False)
    with caplog.at_level("INFO", logger="diskprobe.guard"):
        trainer = _lightning_fit(pl, logger, [FillerAndProbe(), callback], EPOCHS)
    assert trainer.current_epoch == EPOCHS  # training went on throughout
    _expect_flat(after, SKIPPED)
    assert _logged_epochs(logger) == [e for e in range(EPOCHS) if e + 1 not in SKIPPED]
    assert callback.skipped == len(SKIPPED)  # one log_metrics call per epoch end
    _expect_two_warnings(caplog)
    # The logger is itself again: its class's methods, not shadows.
    assert not {"log_metrics", "save", "log_hyperparams", "log_graph"} & set(vars(logger))
    guard.close()


@pytest.mark.slow
def test_lightning_logger_restored_when_the_fit_ends_low(tmp_path: Path) -> None:
    """Low from the first check to the end: nothing logged after it, and at the end the
    logger gets back exactly what it had (a method set on the object itself included) and
    closes its event file."""
    pl, TensorBoardLogger = _lightning()
    from diskprobe.integrations.lightning import DiskGuardCallback

    # never that much free
    guard = DiskGuard(tmp_path, min_free_bytes="1PB", check_every=EVERY_CALL)
    callback = DiskGuardCallback(guard, action="skip_summaries")
    logger = TensorBoardLogger(str(tmp_path / "logs"), name="tiny", default_hp_metric=False)
    saves: list[bool] = []  # for each save that reached the logger: whether before any check

    def own_save() -> None:  # a method set on the object itself, not its class's
        saves.append(callback.last_status is None)

    logger.save = own_save
    trainer = _lightning_fit(pl, logger, [callback], 3)
    assert trainer.current_epoch == 3
    assert _logged_epochs(logger) == []
    assert callback.skipped == 3
    assert vars(logger)["save"] is own_save and "log_metrics" not in vars(logger)
    # Lightning saves after logging the hyperparameters at the start (before the first check)
    # and in finalize; the epoch ends' saves were skipped.
    assert saves == [True, False]
    assert logger.experiment.file_writer is None  # closed by finalize (SummaryWriter.close)
    guard.close()


def test_allows_logs_each_change_once(caplog: pytest.LogCaptureFixture) -> None:
    """The one-call decision for a plain loop, on a statvfs whose avail the test sets."""
    fs = FakeFs(total=1000 * BLOCK, avail=500 * BLOCK)
    prober = StatfsProber(5.0, ThreadStatfs(fs))
    guard = DiskGuard("/", min_free_bytes=400 * BLOCK, check_every=EVERY_CALL, prober=prober)
    answers = []
    with caplog.at_level("WARNING", logger="diskprobe.guard"):
        for avail in (500, 399, 300, 450, 460, 100):
            fs.avail = avail * BLOCK
            answers.append(guard.allows("the disk cache"))
        assert guard.allows("summaries") is False  # its own state: its own first warning
    assert answers == [True, False, False, True, True, False]
    assert fs.calls == 7  # check_every=EVERY_CALL: each call measured afresh
    messages = [r.getMessage() for r in caplog.records if r.name == "diskprobe.guard"]
    low = "diskprobe: low disk space at / (/: {} free, below {}); pausing {}"
    limit = format_size(400 * BLOCK)
    assert messages == [
        low.format(format_size(399 * BLOCK), limit, "the disk cache"),
        "diskprobe: disk space is sufficient again at /; resuming the disk cache",
        low.format(format_size(100 * BLOCK), limit, "the disk cache"),
        low.format(format_size(100 * BLOCK), limit, "summaries"),
    ]
    guard.close()
