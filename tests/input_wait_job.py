"""Real training runs measured from inside by diskprobe's input-wait integrations, for
tests/test_input_wait.py: `python input_wait_job.py FRAMEWORK DATA_DIR STEPS`.

FRAMEWORK: torch (a plain loop over a DataLoader, wrapped by measure_input), lightning (a
Trainer with InputWaitCallback), keras (Keras 3 on the torch backend, a PyDataset, with
InputWaitCallback). The dataset: every file of DATA_DIR, each read whole and evicted from the
page cache first (posix_fadvise DONTNEED on that file only); 2 loader workers; the model is
tiny, so a slow disk shows as waiting for input. Prints the meter's summary as JSON.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

FRAMEWORK, DATA, STEPS = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

FILES = sorted(DATA.iterdir())
BATCH = 4
torch.set_num_threads(1)  # one core for the step: the loaders and other tests have the rest
WEIGHT = torch.randn(256, 256)


def burn(x: Any) -> Any:
    """The step's compute: a few ms of matrix products, more than reading from memory costs."""
    product = WEIGHT
    for _ in range(16):
        product = torch.mm(product, WEIGHT) / 256
    return x + 0 * product.sum()


def sample(index: int) -> np.ndarray:
    path = FILES[index % len(FILES)]
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        data = os.read(fd, 1 << 22)
    finally:
        os.close(fd)
    return np.frombuffer(data[:64], dtype=np.uint8).astype(np.float32)


class Files(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return STEPS * BATCH

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(sample(index))
        return x, x.sum(0, keepdim=True)


def loader() -> Any:
    return torch.utils.data.DataLoader(Files(), batch_size=BATCH, num_workers=0)


def run_torch() -> Any:
    from diskprobe.integrations.input_wait import InputWaitMeter, measure_input

    model = torch.nn.Linear(64, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    meter = InputWaitMeter(data_paths=[str(DATA)], window_steps=10)
    for x, y in measure_input(loader(), meter):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(burn(model(x)), y).backward()
        optimizer.step()
    return meter.close()


def run_lightning() -> Any:
    import lightning.pytorch as pl

    from diskprobe.integrations.lightning import InputWaitCallback

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(64, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return torch.nn.functional.mse_loss(burn(self.layer(x)), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=1e-6)

    callback = InputWaitCallback([str(DATA)], window_steps=10)
    trainer = pl.Trainer(max_epochs=1, callbacks=[callback], logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu")  # fmt: skip
    trainer.fit(Module(), loader())
    return callback.summary


def run_keras() -> Any:
    import keras

    from diskprobe.integrations.keras import InputWaitCallback

    class Batches(keras.utils.PyDataset):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(workers=1, use_multiprocessing=False)

        def __len__(self) -> int:
            return STEPS

        def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
            x = np.stack([sample(index * BATCH + i) for i in range(BATCH)])
            return x, x.sum(axis=1, keepdims=True)

    class Burn(keras.layers.Layer):  # type: ignore[misc]
        def call(self, x: Any) -> Any:
            return burn(x)

    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(1), Burn()])
    model.compile(optimizer=keras.optimizers.SGD(1e-6), loss="mse")
    callback = InputWaitCallback([str(DATA)], window_steps=10)
    model.fit(Batches(), epochs=1, verbose=0, callbacks=[callback])
    return callback.summary


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
    summary = {"torch": run_torch, "lightning": run_lightning, "keras": run_keras}[FRAMEWORK]()
    print(json.dumps(summary), flush=True)
