"""The input wait measured inside a training job (diskprobe.integrations.input_wait): the
meter's arithmetic on a clock the test drives, the verdict, and real runs of a plain PyTorch
loop, a Lightning fit and a Keras 3 fit (torch backend) whose data sits on a really slow disk
(ext4 on a loop device over a FUSE file, 20 ms a request) or in memory (/dev/shm)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose_host import DatasetHost, dataset_host, in_memory_dataset
from diskprobe.compute.bottleneck import training_verdict
from diskprobe.integrations.input_wait import InputWaitMeter, measure_input
from diskprobe.integrations.training_output import TrainingOutput, training_metric
from diskprobe.sources.file_places import Place
from victoria_server import VictoriaMetrics

from ci import skip_or_fail
from helpers import assert_schema
from lineproto import parse_lines

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


def run_job(framework: str, data: Path,
            env: dict[str, str] | None = None) -> tuple[dict[str, object], str]:  # fmt: skip
    done = subprocess.run([sys.executable, str(JOB), framework, str(data), str(STEPS)],
                          capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


# keras: the torch backend; keras-tf*: the TensorFlow backend, whose batches are fetched inside
# its compiled step (InputWaitCallback takes them out to time them), from a PyDataset, a
# tf.data pipeline, or arrays (in memory by nature: not read from the slow disk during the fit)
FRAMEWORKS = ["torch", "lightning", "keras", "keras-tf", "keras-tf-data"]


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
@pytest.mark.parametrize("framework", [*FRAMEWORKS, "keras-tf-arrays"])
def test_a_dataset_in_memory_waits_little(framework: str, in_memory: Path) -> None:
    summary, _ = run_job(framework, in_memory)
    assert summary["input_wait_ratio"] < LOW, summary  # type: ignore[operator]
    assert summary["bottleneck"] == "compute", summary


def training_series(server: VictoriaMetrics) -> dict[tuple[tuple[str, str], ...], list[float]]:
    """input_wait_ratio values per label set, as VictoriaMetrics stored diskprobe_training."""
    urllib.request.urlopen(server.url + "/internal/force_flush", timeout=10).read()
    query = urllib.parse.urlencode({"match[]": "diskprobe_training_input_wait_ratio"})
    with urllib.request.urlopen(f"{server.url}/api/v1/export?{query}", timeout=30) as reply:
        rows = [json.loads(line) for line in reply.read().decode().splitlines() if line]
    found = {}
    for row in rows:
        labels = {k: v for k, v in row["metric"].items() if k not in ("__name__", "db")}
        found[tuple(sorted(labels.items()))] = [float(value) for value in row["values"]]
    return found


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.xdist_group("test_input_wait")
def test_two_ranks_send_their_windows_to_victoriametrics_tagged_and_apart(
    host: DatasetHost, victoria: VictoriaMetrics, tmp_path: Path
) -> None:
    # Two ranks of one job on one node, started by torchrun: one spool each, one series each;
    # host is the node's name (NODE_NAME, as the agent's DaemonSet names it), pod the job's
    # own hostname.
    env = {**os.environ, "INFLUX_URL": victoria.url, "INFLUX_BUCKET": "training",
           "XDG_STATE_HOME": str(tmp_path / "state"), "NODE_NAME": "node-a"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node=2", str(JOB), "torch", str(host.data), str(STEPS)],
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(summaries) == 2, done.stdout
    windows = len(summaries[0]["windows"])
    deadline = time.monotonic() + 30
    while True:  # VictoriaMetrics makes fresh samples searchable a few seconds late
        series = training_series(victoria)
        if sum(map(len, series.values())) >= 2 * windows or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    base = {"host": "node-a", "job": "input-wait", "pod": socket.gethostname(),
            "device": host.device}  # fmt: skip
    expected = {tuple(sorted({**base, "rank": rank}.items())) for rank in ("0", "1")}
    assert set(series) == expected, series
    for values in series.values():
        assert len(values) == windows and sum(values) / len(values) > HIGH, values
    spools = tmp_path / "state" / "diskprobe" / "training"
    assert sorted(p.name for p in spools.iterdir()) == ["input-wait-rank0", "input-wait-rank1"]
    assert not list(spools.glob("*/*.lp"))  # all delivered, none left behind


def test_the_meter_sends_each_window_as_a_diskprobe_training_point(
    victoria: VictoriaMetrics, tmp_path: Path
) -> None:
    # In this process: the meter, its output, the spool and the sender, to a real server.
    clock = Clock()
    env = {"NODE_NAME": "node-b", "RANK": "3", "DISKPROBE_JOB": "unit test"}
    output = TrainingOutput(victoria.url, "training", spool_dir=str(tmp_path / "spool"), env=env)
    meter = InputWaitMeter([str(tmp_path)], window_steps=2, clock=clock, output=output)
    meter.start()
    for _ in range(5):  # the first step is left out: two windows of two steps
        meter.batch_wait(0.03)
        clock.now += 0.04
        meter.step_end()
    meter.close()
    assert [window["steps"] for window in meter.windows] == [2, 2]
    sent = [training_metric(window, output.tags, 1) for window in meter.windows]
    assert_schema(sent)
    expected_tags = {"host": "node-b", "job": "unit test", "rank": "3",
                     "pod": socket.gethostname(), "device": meter.windows[0]["device"]}  # fmt: skip
    assert sent[0].tags == expected_tags and sent[0].tags["device"]
    assert {"device_util_percent", "device_read_await_ms", "mount_point"} <= set(sent[0].fields)
    assert output.spool_dir == tmp_path / "spool" / "unit_test-rank3"
    deadline = time.monotonic() + 30
    while sum(map(len, training_series(victoria).values())) < 2:
        assert time.monotonic() < deadline, training_series(victoria)
        time.sleep(0.2)
    ((labels, values),) = training_series(victoria).items()
    assert dict(labels) == expected_tags
    assert values == pytest.approx([0.75, 0.75])  # 30 ms of each 40 ms step


def test_hostile_job_names_and_ranks_stay_inside_the_spool_base(tmp_path: Path) -> None:
    report = {"steps": 3, "step_time_sec": 0.1, "input_wait_ratio": 0.5, "checkpoint_ratio": 0.0,
              "bottleneck": "unknown"}  # fmt: skip
    env = {"RANK": "-1", "NODE_NAME": "node\udcff\n", "INFLUX_TOKEN": "t"}
    output = TrainingOutput("http://127.0.0.1:9", "b", job="../../etc/x y", env=env,
                            spool_dir=str(tmp_path / "base"), timeout=0.2)  # fmt: skip
    output.write(report)
    output.close()
    assert output.tags["rank"] == "0"  # not a rank: the single process's
    for rank in ("²", "9" * 5000, "0x1", " 1"):  # isdigit() alone takes "²"; int() no 5,000 digits
        made = TrainingOutput("http://x", "b", env={"RANK": rank}, spool_dir=str(tmp_path))
        assert made.tags["rank"] == "0", rank
    assert output.spool_dir == tmp_path / "base" / ".._.._etc_x_y-rank0"
    (batch,) = (tmp_path / "base" / ".._.._etc_x_y-rank0").glob("*.lp")  # kept: server down
    (point,) = parse_lines(batch.read_text())
    assert point.tags["host"] == "node%FF%0A" and point.tags["job"] == "../../etc/x y"
