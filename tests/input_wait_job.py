"""Real training runs measured from inside by diskprobe's input-wait integrations, for
tests/test_input_wait.py: `python input_wait_job.py FRAMEWORK DATA_DIR STEPS`.

FRAMEWORK: torch (a plain loop over a DataLoader, wrapped by measure_input), lightning (a
Trainer with InputWaitCallback), keras (Keras 3 on the torch backend, a PyDataset, with
InputWaitCallback), keras-tf (the same on the TensorFlow backend), keras-tf-data (TensorFlow
backend, a tf.data pipeline over the files: from_generator, batch, prefetch), keras-tf-arrays
(TensorFlow backend, NumPy arrays read from the files before the fit: always in memory).
The dataset: every file of DATA_DIR, each read whole and evicted from the page cache first
(posix_fadvise DONTNEED on that file only); loading in the training process; the model is
tiny, so a slow disk shows as waiting for input. Prints the meter's summary as JSON.
With INFLUX_URL (and INFLUX_BUCKET) set, the windows also go there (TrainingOutput).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

FRAMEWORK, DATA, STEPS = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
os.environ["KERAS_BACKEND"] = "tensorflow" if FRAMEWORK.startswith("keras-tf") else "torch"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

import numpy as np  # noqa: E402

FILES = sorted(DATA.iterdir())
BATCH = 4
WEIGHT = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)


def burn(x: Any) -> Any:
    """The step's compute: a few ms of matrix products, more than reading from memory costs."""
    import torch

    torch.set_num_threads(1)  # one core for the step: the loaders and other tests have the rest
    weight = torch.from_numpy(WEIGHT)
    product = weight
    for _ in range(16):
        product = torch.mm(product, weight) / 256
    return x + 0 * product.sum()


def keras_burn(x: Any) -> Any:
    """burn() in keras.ops, for every backend (compiled into the step on TensorFlow), a
    quarter as long: Keras loads ahead of the step (PyDataset's thread, tf.data's prefetch),
    so the wait is the load's time less the step's, and on a loaded machine a longer step
    would hide the slow disk that this job is there to show (0.22 once, under the suite)."""
    from keras import ops

    weight = ops.convert_to_tensor(WEIGHT)
    product = weight + ops.mean(x) * 1e-9  # of the batch: not folded into a constant (TF)
    for _ in range(4):
        product = ops.matmul(product, weight) / 256
    return x + 0 * ops.sum(product)


def output() -> Any:
    if not os.environ.get("INFLUX_URL"):
        return None
    from diskprobe.integrations.training_output import TrainingOutput

    return TrainingOutput(os.environ["INFLUX_URL"], os.environ["INFLUX_BUCKET"], job="input-wait")


def sample(index: int) -> np.ndarray:
    path = FILES[index % len(FILES)]
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        data = os.read(fd, 1 << 22)
    finally:
        os.close(fd)
    return np.frombuffer(data[:64], dtype=np.uint8).astype(np.float32)


def loader() -> Any:
    import torch

    class Files(torch.utils.data.Dataset):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return STEPS * BATCH

        def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.from_numpy(sample(index))
            return x, x.sum(0, keepdim=True)

    return torch.utils.data.DataLoader(Files(), batch_size=BATCH, num_workers=0)


def run_torch() -> Any:
    import torch

    from diskprobe.integrations.input_wait import InputWaitMeter, measure_input

    model = torch.nn.Linear(64, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    meter = InputWaitMeter(data_paths=[str(DATA)], window_steps=10, output=output())
    for x, y in measure_input(loader(), meter):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(burn(model(x)), y).backward()
        optimizer.step()
    return meter.close()


def run_lightning() -> Any:
    import lightning.pytorch as pl
    import torch

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

    callback = InputWaitCallback([str(DATA)], window_steps=10, output=output())
    trainer = pl.Trainer(max_epochs=1, callbacks=[callback], logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu")  # fmt: skip
    trainer.fit(Module(), loader())
    return callback.summary


def batch_arrays(index: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.stack([sample(index * BATCH + i) for i in range(BATCH)])
    return x, x.sum(axis=1, keepdims=True)


def keras_inputs(keras: Any) -> Any:
    """What the fit reads: a PyDataset, a tf.data pipeline or arrays, by FRAMEWORK."""
    if FRAMEWORK == "keras-tf-data":
        import tensorflow as tf

        def batches() -> Any:
            for index in range(STEPS):
                yield batch_arrays(index)

        spec = (tf.TensorSpec((BATCH, 64), tf.float32), tf.TensorSpec((BATCH, 1), tf.float32))
        return tf.data.Dataset.from_generator(batches, output_signature=spec).prefetch(2)
    if FRAMEWORK == "keras-tf-arrays":
        pairs = [batch_arrays(index) for index in range(STEPS)]
        return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])

    class Batches(keras.utils.PyDataset):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(workers=1, use_multiprocessing=False)

        def __len__(self) -> int:
            return STEPS

        def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
            return batch_arrays(index)

    return Batches()


def run_keras() -> Any:
    import keras

    if keras.backend.backend() == "torch":
        import torch

        torch.set_num_threads(1)  # as burn(): one core for the step

    from diskprobe.integrations.keras import InputWaitCallback

    class Burn(keras.layers.Layer):  # type: ignore[misc]
        def call(self, x: Any) -> Any:
            return keras_burn(x)

    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(1), Burn()])
    model.compile(optimizer=keras.optimizers.SGD(1e-6), loss="mse")
    callback = InputWaitCallback([str(DATA)], window_steps=10, output=output())
    inputs = keras_inputs(keras)
    if isinstance(inputs, tuple):
        model.fit(*inputs, batch_size=BATCH, epochs=1, verbose=0, callbacks=[callback])
    else:
        model.fit(inputs, epochs=1, verbose=0, callbacks=[callback])
    return callback.summary


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
    runs = {"torch": run_torch, "lightning": run_lightning}
    summary = run_keras() if FRAMEWORK.startswith("keras") else runs[FRAMEWORK]()
    print(json.dumps(summary), flush=True)
