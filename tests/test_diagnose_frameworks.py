"""`diskprobe diagnose` on real framework jobs (tests/framework_jobs.py), through the installed
command: issue 35, section 2, "compute in the framework's threads is compute".

Why these exist beside tests/test_diagnose.py: a framework does its work in threads of its
own. TensorFlow runs a Keras step in its intra-op (Eigen) pool, threads named "python", while
the Python thread waits in futex; XLA runs a jitted JAX step in its "tf_XLAEigen" pool; tf.data
reads and maps in threads of the training process, not in worker processes. A rule that takes
every thread but the main one for a loader calls a compute-bound Keras fit `input_cpu`. Here
the compute cases must come out `compute` with the main thread mostly waiting (the point of
each case), and the loaders that are threads (tf.data) must still be the loaders: `disk` with
the slow device named, `input_cpu` when their map is what is costly.

The slow disk is tests/diagnose_host.py's (ext4 on a loop device over a FUSE file that delays
every request 4 ms), the in-memory one its tmpfs dataset; the jobs evict what they read from
the page cache themselves. Each case asserts the verdict and the shares of samples that
decided it, never a measured time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from diagnose_host import DatasetHost, dataset_host
from test_diagnose import diagnose, explain
from test_diagnose import tmpfs_data as tmpfs_data  # the same module fixture: tmpfs data

from ci import HANG_GUARD_SEC, skip_or_fail, wait_until
from helpers import installed_command
from lineproto import parse_line

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.xdist_group("test_diagnose_frameworks")]  # fmt: skip

JOBS = Path(__file__).with_name("framework_jobs.py")
SETTLE_SEC = 2.0  # after "ready": the first steps' tracing and compiling are behind the watch
# test_diagnose.py's slow disk answers in 4 ms; here 8: a checkpoint-each-step job's fsyncs
# then outweigh its step also when the suite's other workers slow the step (52 % running
# against 48 % on files was seen at 4 ms).
DELAY_MS = 8.0
START_GUARD_SEC = 300.0  # a job that never says "ready" (TensorFlow starts in 5-25 s here)
WAITING = 0.5  # "mostly": a share above half
TENSORFLOW = {"KERAS_BACKEND": "tensorflow"}  # the suite's is torch (tests/run.sh)
AGENT_INTERVAL, AGENT_POINTS = "5s", 2


@pytest.fixture(scope="module")
def host() -> Iterator[DatasetHost]:
    with dataset_host(skip_or_fail, delay_ms=DELAY_MS) as slow:
        yield slow


def needs(*modules: str) -> None:
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        skip_or_fail(f"{', '.join(missing)} not installed (tests/run.sh installs them)")


@contextlib.contextmanager
def running(*argv: str, env: Optional[dict[str, str]] = None, nice: int = 0) -> Iterator[int]:
    """The job in its own session (its workers die with it), its pid once it says "ready"
    and has settled; killed, with every process of its session gone, at the end. `nice`:
    its scheduling priority (nice(1) execs it: the same pid)."""
    process = subprocess.Popen(
        [*(["nice", "-n", str(nice)] if nice else []), sys.executable, str(JOBS), *argv],
        stdout=subprocess.PIPE, text=True,
        start_new_session=True, env={**os.environ, **(env or {})},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            assert selector.select(START_GUARD_SEC), f"{argv[0]}: no 'ready' (a hang)"
        line = process.stdout.readline().strip()
        assert line == "ready", f"{argv[0]} exited ({process.poll()}) before it was ready"
        time.sleep(SETTLE_SEC)
        yield process.pid
    finally:
        _kill_session(process)


def _kill_session(process: subprocess.Popen[str]) -> None:
    """SIGKILL to the session, then until none of it is left but zombies (DataLoader workers
    hold the dataset's files open: the module's umount must not find them)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(HANG_GUARD_SEC)
    wait_until(lambda: not _live_members(process.pid), f"session {process.pid} to end")


def _live_members(session: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):  # bytes: another test's comm is not UTF-8
            state, _parent, group = stat.read_bytes().rsplit(b")", 1)[1].split()[:3]
            if int(group) == session and state != b"Z":
                return True
    return False


def watch(*argv: str, env: Optional[dict[str, str]] = None, nice: int = 0) -> dict[str, Any]:
    with running(*argv, env=env, nice=nice) as pid:
        report: dict[str, Any] = diagnose("--pid", str(pid))
    return report


def why(report: dict[str, Any]) -> str:
    """explain()'s fields, and how the main process's threads spent their time."""
    threads = [(process["pid"], process["role"], process["threads_running"],
                process["threads_io_wait"]) for process in report["processes"]]  # fmt: skip
    return f"{explain(report)} runtime={report.get('runtime')} threads={threads}"


def roles(report: dict[str, Any]) -> list[str]:
    return sorted(process["role"] for process in report["processes"])


def waits(report: dict[str, Any]) -> float:
    shares = report["main"]["shares"]
    return float(shares["sleeping"] + shares["blocked"])


def check_runtime(report: dict[str, Any], busy: bool) -> None:
    """The runtime's threads (the main process's threads that are not loaders), where the
    report gives them apart: busy in a compute case, less busy than the loaders otherwise."""
    runtime, workers = report["runtime"], report["workers"]
    if busy:
        assert runtime["running"] > WAITING, why(report)
        assert runtime["running"] > workers["running"] + workers["io_wait"], why(report)
    else:
        assert runtime["running"] < workers["running"] + workers["io_wait"], why(report)
        assert runtime["io_wait"] == 0.0, why(report)  # it reads nothing: those are loaders


def test_a_keras_fit_on_tensorflow_computing_in_its_intra_op_threads_is_compute() -> None:
    """Keras 3, TensorFlow backend, batches in memory, a heavy model: TensorFlow's Eigen
    threads (named "python") run the step; the Python thread waits in futex the whole time."""
    needs("tensorflow", "keras")
    report = watch("keras-tf-heavy", env=TENSORFLOW)
    assert report["bottleneck"] == "compute", why(report)
    assert waits(report) > WAITING, why(report)  # the point: the main thread waits
    assert roles(report) == ["main"], report["processes"]  # no loader process: all threads
    assert report["processes"][0]["threads_running"] > WAITING, report["processes"]
    check_runtime(report, busy=True)


def test_tf_data_threads_reading_a_slow_disk_make_it_disk(host: DatasetHost) -> None:
    """tf.data's parallel map reads with tf.io.read_file in threads of the training process:
    they are the loaders (they wait on reads), and the device is named."""
    needs("tensorflow", "keras")
    report = watch("tf-data-disk", str(host.data), env=TENSORFLOW)
    assert report["bottleneck"] == "disk", why(report)
    assert (report["device"], report["mount_point"]) == (host.device, str(host.mountpoint))
    assert report["waiters"] == "workers" and report["direction"] == "read"
    assert roles(report) == ["main"], report["processes"]  # the readers are threads
    assert report["workers"]["io_wait"] > report["workers"]["running"], why(report)
    assert any(path.startswith(str(host.data)) for path in report["paths"]), report["paths"]
    check_runtime(report, busy=False)


def test_tf_data_threads_busy_on_a_costly_map_make_it_input_cpu(tmpfs_data: Path) -> None:
    """The map's sin/cos rounds run in the tf.data threads that read the (tmpfs) files:
    loaders on the CPU, the main thread waiting for batches."""
    needs("tensorflow", "keras")
    report = watch("tf-data-cpu", str(tmpfs_data), env=TENSORFLOW)
    assert report["bottleneck"] == "input_cpu", why(report)
    assert waits(report) > WAITING, why(report)
    assert roles(report) == ["main"], report["processes"]
    assert report["workers"]["running"] > report["workers"]["io_wait"], why(report)
    assert "device" not in report
    check_runtime(report, busy=False)


def test_a_pytorch_step_on_intra_op_threads_is_compute() -> None:
    """PyTorch's intra-op (OpenMP) team is the main thread and one more: both run the step."""
    needs("torch")
    report = watch("torch-intraop")
    assert report["bottleneck"] == "compute", why(report)
    assert report["main"]["shares"]["running"] > WAITING, why(report)
    assert roles(report) == ["main"], report["processes"]
    process = report["processes"][0]  # a thread besides the main one runs the step too
    assert process["threads_running"] > report["main"]["shares"]["running"], process
    check_runtime(report, busy=True)


def test_dataloader_worker_processes_reading_a_slow_disk_make_it_disk(host: DatasetHost) -> None:
    """A real DataLoader: 2 worker processes read the files (evicted first); a tiny step."""
    needs("torch")
    report = watch("torch-loader-disk", str(host.data))
    assert report["bottleneck"] == "disk", why(report)
    assert (report["device"], report["mount_point"]) == (host.device, str(host.mountpoint))
    assert report["waiters"] == "workers" and report["direction"] == "read"
    assert roles(report) == ["main", "worker", "worker"], report["processes"]
    assert report["workers"]["io_wait"] > report["workers"]["running"], why(report)
    assert any(path.startswith(str(host.data)) for path in report["paths"]), report["paths"]
    check_runtime(report, busy=False)


def test_a_jitted_jax_step_in_xla_threads_is_compute() -> None:
    """XLA runs the jitted step in its own pool ("tf_XLAEigen", and PjRt's "python"
    threads); the Python thread waits in block_until_ready."""
    needs("jax")
    report = watch("jax-step")
    assert report["bottleneck"] == "compute", why(report)
    assert waits(report) > WAITING, why(report)
    assert roles(report) == ["main"], report["processes"]
    assert report["processes"][0]["threads_running"] > WAITING, report["processes"]
    check_runtime(report, busy=True)


def test_the_agent_calls_tensorflow_and_jax_steps_compute_too(tmp_path: Path) -> None:
    """The same rule in the agent's own watch ([jobs] match, diskprobe_job): a Keras fit on
    TensorFlow and a jitted JAX step, watched together, each `compute` in its last points."""
    needs("tensorflow", "keras", "jax")
    config = tmp_path / "diskprobe.toml"
    off = "".join(f"[{name}]\nenabled = false\n" for name in
                  ("io", "filesystems", "smart", "pressure", "process_io", "cgroup_io"))
    config.write_text(f'interval = "{AGENT_INTERVAL}"\nstate_file = "{tmp_path / "s.json"}"\n'
                      f'{off}[jobs]\nmatch = ["framework_jobs\\\\.py (keras-tf-heavy|jax-step)"]\n')
    with running("keras-tf-heavy", env=TENSORFLOW) as keras, running("jax-step") as jax:
        agent = subprocess.Popen([*installed_command(), "--config", str(config)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        points: dict[int, list[dict[str, Any]]] = {keras: [], jax: []}
        try:
            assert agent.stdout is not None
            for line in agent.stdout:  # the agent's own cadence: a hang is the guard's
                if line.startswith("diskprobe_job,"):
                    point = parse_line(line.rstrip("\n"))
                    points.setdefault(int(point.fields["pid"]), []).append(point.fields)
                if all(len(points[pid]) >= AGENT_POINTS for pid in (keras, jax)):
                    break
        finally:
            agent.terminate()
            agent.wait(HANG_GUARD_SEC)
    for pid in (keras, jax):
        last = points[pid][-AGENT_POINTS:]
        assert [fields["bottleneck"] for fields in last] == ["compute"] * AGENT_POINTS, last
        assert all(float(fields["main_waiting_ratio"]) > WAITING for fields in last), last
        assert all(float(fields["runtime_running_threads"]) > WAITING for fields in last), last


@pytest.mark.serial  # nice -10 and an 8 ms disk were not enough beside busy workers
def test_pytorch_checkpoints_fsynced_to_the_slow_disk_each_step_are_checkpoint(
    host: DatasetHost,
) -> None:
    """torch.save of the state and fsync, every step, to the slow loop device. At nice -10
    and alone: with the suite's other workers busy on both CPUs its step took about as long
    as its fsyncs (seen: 55 % running against 32 % on files, then 52 against 48 at nice -10),
    and the verdict would rightly become compute."""
    needs("torch")
    report = watch("torch-checkpoint", str(host.checkpoints), nice=-10)
    assert report["bottleneck"] == "checkpoint", why(report)
    assert (report["device"], report["direction"]) == (host.device, "write"), why(report)
    assert str(host.checkpoints / "ckpt.pt") in report["paths"], report["paths"]


def test_a_dataset_cached_in_memory_before_the_fit_is_compute(host: DatasetHost) -> None:
    """The files read once from the slow disk into memory, then a DataLoader over them:
    nothing waits on the disk any more, the step's intra-op threads work."""
    needs("torch")
    report = watch("torch-cached", str(host.small))
    assert report["bottleneck"] == "compute", why(report)
    assert "device" not in report
    check_runtime(report, busy=True)
