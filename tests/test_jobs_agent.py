"""The agent names every job's bottleneck by itself (issue 35's acceptance): the installed
command with `interval = "5s"`, `[smart] enabled = false` and `[jobs]` holding only `match`,
started at the same moment as three real jobs, each a main process and 2 loader processes
forked by multiprocessing with the same command line (tests/diagnose_job.py, copied under a
name of this test's own, which `match` names):

- compute: the loaders hand over batches from memory, the main process spins;
- input_cpu: the loaders read files on tmpfs and hash them;
- disk: the loaders read 256 KiB files from ext4 on a loop device whose backing file sits on
  a FUSE filesystem that sleeps 8 ms per request (each file evicted from the page cache first).

Within 40 s each job's last three diskprobe_job points (found by `pid`) carry its verdict;
the disk job's name its loop device and mount point.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose_host import DatasetHost, dataset_host, in_memory_dataset
from diskprobe.schema.job import BOTTLENECK_CODES

from ci import skip_or_fail
from helpers import installed_command
from lineproto import Point, parse_line

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.xdist_group("test_jobs_agent")]

JOB = Path(__file__).with_name("diagnose_job.py")
DELAY_MS = 8.0
WITHIN_SEC = 40.0
LAST = 3


@pytest.fixture(scope="module")
def host() -> Iterator[DatasetHost]:
    with dataset_host(skip_or_fail, delay_ms=DELAY_MS) as slow:
        yield slow


class Agent:
    """The installed command on its own config; its stdout read by a thread, line by line."""

    def __init__(self, config: Path) -> None:
        self.process = subprocess.Popen(
            [*installed_command(), "--config", str(config)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        self.points: list[Point] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("diskprobe_job,"):
                self.points.append(parse_line(line.rstrip("\n")))

    def stop(self) -> str:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        _, err = self.process.communicate(timeout=30)
        return err

    def of(self, pid: int) -> list[Point]:
        return [point for point in list(self.points) if point.fields.get("pid") == pid]


@contextlib.contextmanager
def jobs(script: Path, *argvs: tuple[str, ...]) -> Iterator[list[subprocess.Popen[str]]]:
    started = [subprocess.Popen([sys.executable, str(script), *argv], stdout=subprocess.PIPE,
                                text=True, start_new_session=True) for argv in argvs]  # fmt: skip
    try:
        yield started
    finally:
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def test_three_jobs_started_with_the_agent_each_get_their_verdict(host: DatasetHost,
                                                                  tmp_path: Path) -> None:
    script = tmp_path / f"trainjob_{os.getpid()}.py"
    shutil.copy(JOB, script)
    config = tmp_path / "diskprobe.toml"
    config.write_text('interval = "5s"\nstate_file = "' + str(tmp_path / "state.json") + '"\n'
                      '[smart]\nenabled = false\n'
                      f'[jobs]\nmatch = ["{script.name}"]\n')  # fmt: skip
    with in_memory_dataset("jobs-agent") as memory:
        agent = Agent(config)
        try:
            with jobs(script, ("spin", "compute", "2"), ("cpu", str(memory), "2"),
                      ("files", str(host.small), "2")) as (compute, input_cpu, disk):
                time.sleep(WITHIN_SEC)
                found = {"compute": agent.of(compute.pid), "input_cpu": agent.of(input_cpu.pid),
                         "disk": agent.of(disk.pid)}  # fmt: skip
        finally:
            err = agent.stop()
    for verdict, points in found.items():
        seen = [(p.fields["bottleneck"], p.fields.get("device")) for p in points]
        assert len(points) >= LAST, f"{verdict}: {seen}\n{err}"
        for point in points[-LAST:]:
            assert point.fields["bottleneck"] == verdict, f"{verdict}: {seen}"
            assert point.fields["bottleneck_code"] == BOTTLENECK_CODES[verdict]
            assert point.tags["job"] == script.stem and point.tags["rank"] == "0"
            assert point.fields["processes"] == 3, point  # the main one and its 2 loaders
    for point in found["disk"][-LAST:]:
        assert point.fields["device"] == host.device, point
        assert point.fields["mount_point"] == str(host.mountpoint), point
        assert float(point.fields["workers_io_wait_threads"]) > float(
            point.fields["workers_running_threads"])
    for point in found["compute"][-LAST:]:
        assert "device" not in point.fields
        assert float(point.fields["main_running_ratio"]) > 0.5
    assert "E! " not in err and "W! " not in err, err
