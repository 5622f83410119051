"""The training callbacks in real fits, against a small ext4 filesystem that the fit itself fills.

A 64 MiB ext4 image is loop-mounted; a "writer" callback, placed before the guard callback,
writes and fsyncs a WRITE-byte file into it at every epoch end, so the guard's check at that
epoch end sees avail fall by exactly WRITE per epoch (ext4 with delalloc counts the blocks at
write() time; fsync makes it real; the tiny model's checkpoints are a few KiB each). The
threshold is set half a WRITE below the avail after K writes, so the expected epoch is known:
the guard must fire at the end of epoch K+1 (1-based), not one epoch early or late.

Keras 3 runs on its PyTorch backend (KERAS_BACKEND=torch, CPU torch). Skipped with the reason
when torch/keras/lightning or root/loop tools are missing, unless CI is set: then it fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diskprobe.guard import DiskGuard

from ci import skip_or_fail
from helpers import EVERY_CALL, loop_ext4

# One worker runs every training-job test (here and in test_ml_summaries.py) under xdist: it
# imports torch, Keras, Lightning and TensorFlow once, not each worker (seconds of CPU each).
pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.xdist_group("ml")]

IMAGE_BYTES = 64 * 1024 * 1024
WRITE = 4 * 1024 * 1024  # bytes written per epoch
K = 5  # writes that still leave avail above the threshold
EPOCHS = 12  # asked for; a working guard stops (stop) well before


def _import_keras() -> Any:
    os.environ.setdefault("KERAS_BACKEND", "torch")
    if os.environ["KERAS_BACKEND"] != "torch":
        skip_or_fail(f"KERAS_BACKEND={os.environ['KERAS_BACKEND']}; the test uses torch")
    try:
        import keras
        import torch  # noqa: F401
    except ImportError as error:
        skip_or_fail(f"{error.name} not installed (pip install torch==2.13.0 keras)")
    return keras


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A fresh 64 MiB ext4 on a loop device, mounted; unmounted and detached even on failure."""
    with loop_ext4(IMAGE_BYTES, "diskprobe-guard-", skip_or_fail) as mount_point:
        yield mount_point


def _avail(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _write_epoch_file(directory: Path, epoch: int) -> None:
    fd = os.open(directory / f"data-{epoch:03d}.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"\xa5" * WRITE)
        os.fsync(fd)
    finally:
        os.close(fd)


def _threshold(mount: Path) -> int:
    """Half a write below the avail after K writes: crossed by write K+1 and not before."""
    avail = _avail(mount)
    assert avail > (K + 3) * WRITE, f"test fs too small: {avail} bytes avail"
    return avail - K * WRITE - WRITE // 2


def _keras_fit(keras: Any, callbacks: list[Any], epochs: int) -> int:
    import numpy as np

    rng = np.random.default_rng(0)
    x, y = rng.random((64, 8), dtype="float32"), rng.random((64, 1), dtype="float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, epochs=epochs, batch_size=16, verbose=0, callbacks=callbacks)
    return len(history.history["loss"])


def _keras_writer(keras: Any, directory: Path) -> Any:
    class Writer(keras.callbacks.Callback):  # type: ignore[misc]
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            _write_epoch_file(directory, epoch)

    return Writer()


def test_keras_stop_at_threshold(small_fs: Path) -> None:
    keras = _import_keras()
    from diskprobe.integrations.keras import DiskGuardCallback

    data = small_fs / "data"
    data.mkdir()
    guard = DiskGuard(small_fs, min_free_bytes=_threshold(small_fs), check_every=EVERY_CALL)
    callback = DiskGuardCallback(guard, action="stop")
    epochs_run = _keras_fit(keras, [_keras_writer(keras, data), callback], EPOCHS)
    assert epochs_run == K + 1, f"stopped after epoch {epochs_run}, expected {K + 1}"
    assert len(list(data.iterdir())) == K + 1
    assert callback.last_status is not None and not callback.last_status.ok
    assert callback.last_status.reasons[0].startswith(f"{small_fs}: ")
    guard.close()


def test_keras_skip_checkpoints_below_threshold(small_fs: Path) -> None:
    keras = _import_keras()
    from diskprobe.integrations.keras import DiskGuardCallback

    data, saved = small_fs / "data", small_fs / "ckpt"
    data.mkdir()
    saved.mkdir()
    guard = DiskGuard(small_fs, min_free_bytes=_threshold(small_fs), check_every=EVERY_CALL)
    checkpoint = keras.callbacks.ModelCheckpoint(
        str(saved / "epoch-{epoch:03d}.weights.h5"), save_weights_only=True
    )
    callback = DiskGuardCallback(guard, action="skip_checkpoints", checkpoint=checkpoint)
    epochs = K + 3
    assert _keras_fit(keras, [_keras_writer(keras, data), callback], epochs) == epochs
    names = sorted(path.name for path in saved.iterdir())
    assert names == [f"epoch-{epoch:03d}.weights.h5" for epoch in range(1, K + 1)]
    assert callback.skipped == epochs - K
    guard.close()


def test_keras_warn_only_logs(small_fs: Path, caplog: pytest.LogCaptureFixture) -> None:
    keras = _import_keras()
    from diskprobe.integrations.keras import DiskGuardCallback

    data = small_fs / "data"
    data.mkdir()
    guard = DiskGuard(small_fs, min_free_bytes=_threshold(small_fs), check_every=EVERY_CALL)
    callback = DiskGuardCallback(guard, action="warn")
    with caplog.at_level("WARNING", logger="diskprobe.guard"):
        assert _keras_fit(keras, [_keras_writer(keras, data), callback], K + 2) == K + 2
    warnings = [r.getMessage() for r in caplog.records if r.name == "diskprobe.guard"]
    assert len(warnings) == 1 and f"end of epoch {K + 1}" in warnings[0], warnings
    guard.close()


def test_lightning_stop_at_threshold(small_fs: Path) -> None:
    try:
        import lightning.pytorch as pl
        import torch
    except ImportError as error:
        skip_or_fail(f"{error.name} not installed (pip install lightning -c torch==2.13.0)")
    from diskprobe.integrations.lightning import DiskGuardCallback

    class Tiny(pl.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    class Writer(pl.Callback):  # type: ignore[misc]
        epochs = 0

        def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
            _write_epoch_file(data, trainer.current_epoch)
            self.epochs += 1

    data = small_fs / "data"
    data.mkdir()
    guard = DiskGuard(small_fs, min_free_bytes=_threshold(small_fs), check_every=EVERY_CALL)
    writer = Writer()
    dataset = torch.utils.data.TensorDataset(torch.rand(64, 8), torch.rand(64, 1))
    trainer = pl.Trainer(
        max_epochs=EPOCHS, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
        callbacks=[writer, DiskGuardCallback(guard, action="stop")],
    )  # fmt: skip
    trainer.fit(Tiny(), torch.utils.data.DataLoader(dataset, batch_size=16))
    assert writer.epochs == K + 1, f"stopped after epoch {writer.epochs}, expected {K + 1}"
    guard.close()
