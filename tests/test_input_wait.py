"""The input wait measured inside a training job (diskprobe.integrations.input_wait): the
meter's arithmetic on a clock the test drives, the verdict, and real runs of a plain PyTorch
loop, a Lightning fit and a Keras 3 fit (torch backend) whose data sits on a really slow disk
(ext4 on a loop device over a FUSE file, 20 ms a request) or in memory (/dev/shm)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose_host import DatasetHost, dataset_host, in_memory_dataset
from diskprobe.compute.bottleneck import training_verdict
from diskprobe.integrations.input_wait import InputWaitMeter, measure_input
from diskprobe.sources.file_places import Place

from ci import skip_or_fail

JOB = Path(__file__).with_name("input_wait_job.py")
STEPS = 60
LOW, HIGH = 0.25, 0.5  # in memory the wait is a small share of a step; on the slow disk most


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_wait_ratio_is_wait_over_step_time_and_the_first_step_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    meter = InputWaitMeter(window_steps=4, clock=clock)

    def loader() -> Iterator[int]:
        for index in range(9):
            clock.now += 5.0 if index == 0 else 0.03  # the workers start; then 30 ms a batch
            yield index

    with caplog.at_level(logging.INFO, logger="diskprobe"):
        for _ in measure_input(loader(), meter):
            clock.now += 0.01  # the step: 10 ms
        summary = meter.close()
    assert summary is not None and summary["steps"] == 8  # 9 batches, the first left out
    assert summary["input_wait_ratio"] == pytest.approx(0.75)  # 30 / (30 + 10)
    assert [window["steps"] for window in meter.windows] == [4, 4]
    assert summary["bottleneck"] == "unknown"  # waiting, and no data_paths to say where
    said = [record.getMessage() for record in caplog.records]
    assert len([line for line in said if "75% of step time waiting for input" in line]) == 1
    assert "whole run: 75 % of step time waiting for input" in said[-1]


def test_checkpoint_time_and_a_verdict_change_is_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    meter = InputWaitMeter(window_steps=2, clock=clock)
    meter.start()
    with caplog.at_level(logging.INFO, logger="diskprobe"):
        for step in range(7):
            meter.batch_wait(0.0)
            clock.now += 0.01
            if step >= 3:
                with meter.checkpoint():
                    clock.now += 0.09  # a save of 90 ms after every step from the fourth on
            meter.step_end()
        meter.close()
    kinds = [window["bottleneck"] for window in meter.windows]
    assert kinds == ["compute", "checkpoint", "checkpoint"]
    changes = [r.getMessage() for r in caplog.records if "whole run" not in r.getMessage()]
    assert len(changes) == 2 and changes[1].endswith(": checkpoint")


def test_training_verdict_branches() -> None:
    disk = Place("nvme0n1", "/mnt/data", False, "ext4")
    s3 = Place(None, "/mnt/s3", True, "fuse.s3fs")
    assert training_verdict(0.1, 0.0, disk, False, 99.0).bottleneck == "compute"
    assert training_verdict(0.6, 0.0, disk, False, 95.0).bottleneck == "disk"
    assert training_verdict(0.6, 0.0, disk, False, 10.0).bottleneck == "input_cpu"
    assert training_verdict(0.6, 0.0, None, True, None).bottleneck == "input_cpu"
    assert training_verdict(0.6, 0.0, s3, False, None).bottleneck == "remote_fs"
    assert training_verdict(0.6, 0.0, None, False, None).bottleneck == "unknown"
    assert training_verdict(0.2, 0.4, disk, False, 95.0).bottleneck == "checkpoint"


@pytest.fixture(scope="module")
def host() -> Iterator[DatasetHost]:
    with dataset_host(skip_or_fail, delay_ms=20.0) as slow:
        yield slow


@pytest.fixture(scope="module")
def in_memory() -> Iterator[Path]:
    with in_memory_dataset("input-wait") as directory:
        yield directory


def run_job(framework: str, data: Path) -> tuple[dict[str, object], str]:
    done = subprocess.run([sys.executable, str(JOB), framework, str(data), str(STEPS)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KERAS_BACKEND": "torch"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


FRAMEWORKS = ["torch", "lightning", "keras"]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.xdist_group("test_input_wait")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_dataset_on_the_slow_disk_is_disk_bound(framework: str, host: DatasetHost) -> None:
    summary, log = run_job(framework, host.data)
    assert summary["input_wait_ratio"] > HIGH, summary  # type: ignore[operator]
    assert summary["bottleneck"] == "disk", summary
    assert (summary["device"], summary["mount_point"]) == (host.device, str(host.mountpoint))
    assert "diskprobe diskprobe input wait, whole run:" in log


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.xdist_group("test_input_wait")
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_dataset_in_memory_waits_little(framework: str, in_memory: Path) -> None:
    summary, _ = run_job(framework, in_memory)
    assert summary["input_wait_ratio"] < LOW, summary  # type: ignore[operator]
    assert summary["bottleneck"] == "compute", summary
