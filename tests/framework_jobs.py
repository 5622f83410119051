"""Small real framework jobs for tests/test_diagnose_frameworks.py: `python framework_jobs.py
MODE [DIR]`.

Where diagnose_job.py imitates a loader and a loop with plain processes, these are the
frameworks themselves, whose own threads do the work: TensorFlow runs a step in its intra-op
(Eigen) pool while the Python thread waits in futex, tf.data reads and maps in threads of the
training process, XLA runs a jitted step in its own pool. Modes:

  keras-tf-heavy         Keras 3 fit on the TensorFlow backend (KERAS_BACKEND=tensorflow, set
                         by the test), batches from an in-memory from_tensor_slices dataset,
                         three Dense(2048) on 512 features: the step is the work
  tf-data-disk DIR       Keras fit (TensorFlow) of one Dense layer fed by tf.data:
                         list_files(DIR/*), repeat, map(load, num_parallel_calls=8), batch,
                         prefetch; load evicts the file from the page cache (posix_fadvise
                         DONTNEED, in a tf.py_function) and reads it with tf.io.read_file, in
                         tf.data's map threads
  tf-data-cpu DIR        the same pipeline over tmpfs files (no eviction), the map costly
                         (ROUNDS of tf.sin/tf.cos on the decoded bytes), one Dense layer
  torch-intraop          PyTorch, 2 intra-op threads, a step of big matmuls on batches in memory
  torch-loader-disk DIR  a PyTorch DataLoader, 2 worker processes reading DIR's files whole,
                         each evicted first (diagnose_job.evicted_read); a tiny step
  jax-step               a jitted JAX step on the CPU (matmuls and tanh), block_until_ready
                         after every step
  torch-checkpoint DIR   PyTorch, a small step, then torch.save of the model's and the
                         optimizer's state (2 MiB each) to DIR, each fsynced, every step (a
                         job that checkpoints too often)
  torch-cached DIR       PyTorch: DIR's files read once (evicted) into memory before the fit,
                         then a DataLoader over them (cached data) and the torch-intraop step

Seen here (TensorFlow 2.21, torch 2.13, jax 0.10.2, 2 cores): the Keras step runs in 2 Eigen
threads named "python", beside idle "tf_Compute" and "tf_graph_runner" ones; tf.data's map
calls run in 2 more "python" threads (one a core, whatever num_parallel_calls or the pool
sizes say), the only ones whose rchar grows; no thread name starts with "tf_data". XLA runs
in 2 "tf_XLAEigen" threads and 2 "python" ones (PjRt's); torch's intra-op team is the main
thread and one "python" thread; a DataLoader's workers are processes named "pt_data_worker".

Every job keeps to 2 intra-op threads (2 cores, and other tests beside it). It prints "ready"
on stdout once READY_STEPS steps have run (tracing, compiling and the first reads behind it),
then runs until killed.

Size: one module for the jobs, one mode a function: the tests start each by its mode.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, cast

from diagnose_job import evicted_read

THREADS = 2
READY_STEPS = 3
FEATURES = 512
ROUNDS = 200  # tf-data-cpu: sin and cos rounds on each sample's decoded bytes
CPU_VALUES = 16384  # of those bytes, the ones the rounds run on (a sample is 256 KiB)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(THREADS))
os.environ.setdefault("TF_NUM_INTEROP_THREADS", str(THREADS))
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true "
                      f"intra_op_parallelism_threads={THREADS}")  # fmt: skip


def ready_after(steps: int) -> Callable[[], None]:
    """A step counter that prints "ready" once, after `steps` steps."""
    done = [0]

    def step() -> None:
        done[0] += 1
        if done[0] == steps:
            print("ready", flush=True)

    return step


def tensorflow() -> Any:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(THREADS)
    tf.config.set_visible_devices([], "GPU")
    return tf


def keras_fit(layers: list[Any], dataset: Any) -> None:
    """A real Keras 3 fit of `layers` on `dataset` (features, target), forever; the backend
    must be TensorFlow (the test sets KERAS_BACKEND: the suite's default is torch)."""
    import keras

    assert keras.backend.backend() == "tensorflow", keras.backend.backend()
    step = ready_after(READY_STEPS)

    class Ready(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            step()

    model = keras.Sequential([keras.Input((FEATURES,)), *layers, keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(dataset, epochs=1_000_000, steps_per_epoch=50, verbose=0, callbacks=[Ready()])


def keras_tf_heavy() -> None:
    import keras
    import numpy as np

    tf = tensorflow()
    rng = np.random.default_rng(1)
    features = rng.standard_normal((4096, FEATURES)).astype(np.float32)
    target = rng.standard_normal((4096, 1)).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((features, target)).batch(256).repeat()
    keras_fit([keras.layers.Dense(2048, activation="relu") for _ in range(3)], dataset)


def tf_data(directory: Path, evict: bool) -> None:
    """tf.data over DIR's files: read in the map's threads; from disk, or costly on the CPU."""
    tf = tensorflow()

    def uncached(path: Any) -> Any:  # eager, in the map thread that calls it
        fd = os.open(path.numpy(), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return path

    def load(path: Any) -> Any:
        if evict:
            path = tf.py_function(uncached, [path], tf.string)
            path.set_shape([])
        data = tf.strings.substr(tf.io.read_file(path), 0, FEATURES if evict else CPU_VALUES)
        values = tf.cast(tf.io.decode_raw(data, tf.uint8), tf.float32) / 255
        for _ in range(0 if evict else ROUNDS):
            values = tf.cos(tf.sin(values))
        features = tf.reshape(values[:FEATURES], [FEATURES])
        return features, tf.reduce_mean(features, keepdims=True)

    dataset = (tf.data.Dataset.list_files(str(directory / "*")).repeat()
               .map(load, num_parallel_calls=8 if evict else THREADS).batch(8)
               .prefetch(2))  # fmt: skip
    keras_fit([], dataset)


def torch_intraop(batches: Any = None) -> None:
    """Batches in memory (`batches`: features only, else made here), a step of matmuls."""
    import torch

    torch.set_num_threads(THREADS)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 1))  # fmt: skip
    torch_fit(model, batches or [torch.randn(256, 1024) for _ in range(8)])


def torch_fit(model: Any, batches: Iterable[Any]) -> None:
    """SGD steps (lr 1e-3) of `model` on `batches` (an iterable of features), over and over."""
    import torch

    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    step = ready_after(READY_STEPS)
    while True:
        for features in batches:
            optimizer.zero_grad()
            model(features).square().mean().backward()
            optimizer.step()
            step()


class Files:
    """A map-style dataset of DIR's files, each read whole from the disk (evicted first)."""

    def __init__(self, directory: Path) -> None:
        self.files = sorted(directory.iterdir())

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> Any:
        import torch

        size = evicted_read(self.files[index])
        return torch.full((FEATURES,), float(size % 251))


def torch_loader_disk(directory: Path) -> None:
    import torch

    torch.set_num_threads(THREADS)
    files = cast("torch.utils.data.Dataset[Any]", Files(directory))  # a map-style dataset
    loader: torch.utils.data.DataLoader[Any] = torch.utils.data.DataLoader(
        files, batch_size=4, shuffle=True, num_workers=2, persistent_workers=True
    )
    torch_fit(torch.nn.Linear(FEATURES, 1), loader)


def torch_checkpoint(directory: Path) -> None:
    import torch

    torch.set_num_threads(THREADS)
    model = torch.nn.Linear(724, 724)  # 2 MiB of float32 state (the slow disk is small)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)  # 2 MiB more
    step, features = ready_after(READY_STEPS), torch.randn(8, 724)
    while True:
        optimizer.zero_grad()
        model(features).sum().backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        # What a checkpoint holds: the model's and the optimizer's state, each fsynced.
        for name, state in (("ckpt.pt", model.state_dict()), ("optim.pt", optimizer.state_dict())):
            with open(directory / name, "wb") as handle:
                torch.save(state, handle)
                handle.flush()
                os.fsync(handle.fileno())
        step()


def torch_cached(directory: Path) -> None:
    import torch

    samples = [torch.full((1024,), float(evicted_read(path) % 251))
               for path in sorted(directory.iterdir())]  # fmt: skip
    loader: torch.utils.data.DataLoader[Any] = torch.utils.data.DataLoader(
        cast("torch.utils.data.Dataset[Any]", samples), batch_size=256)
    torch_intraop(loader)


def jax_step() -> None:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_platforms", "cpu")  # type: ignore[no-untyped-call]
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    weight = jax.random.normal(keys[0], (1024, 1024)) / 32
    batch = jax.random.normal(keys[1], (512, 1024))

    @jax.jit
    def train_step(x: Any) -> Any:
        for _ in range(8):
            x = jnp.tanh(x @ weight)
        return x

    step = ready_after(READY_STEPS)
    while True:
        train_step(batch).block_until_ready()
        step()


def main(argv: list[str]) -> None:
    mode = argv[1]
    directory = Path(argv[2]) if len(argv) > 2 else Path()
    if mode == "keras-tf-heavy":
        keras_tf_heavy()
    elif mode in ("tf-data-disk", "tf-data-cpu"):
        tf_data(directory, evict=mode == "tf-data-disk")
    elif mode == "torch-intraop":
        torch_intraop()
    elif mode == "torch-loader-disk":
        torch_loader_disk(directory)
    elif mode == "jax-step":
        jax_step()
    elif mode == "torch-checkpoint":
        torch_checkpoint(directory)
    elif mode == "torch-cached":
        torch_cached(directory)
    else:
        raise SystemExit(f"framework_jobs.py: unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv)
