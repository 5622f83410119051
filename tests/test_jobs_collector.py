"""The job collector (collectors/jobs.py) in this process, on a fake host's HOST_PROC and
HOST_SYS (tests/jobs_host.py): a Kubernetes pod's job waiting on its disk, a systemd unit's
TensorFlow-shaped job whose runtime threads run the step, a torchrun launcher and its rank;
then what jobs do between two points (exit, fork, exec, a new name), the cap, and every
output format with names that are not UTF-8. Windows end when the test calls collect(); the
test waits on the sampler's own counts (samples taken), never on a duration."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.jobs import JobsCollector
from diskprobe.config import JobsConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.serializers import FORMATS, make_serializer

from ci import wait_until
from helpers import assert_schema
from jobs_host import FUTEX, RUNNING, FakeJobsHost, read_on

POD = ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_"
       "8a9b_0c1d2e3f4a5b.slice/cri-containerd-" + "ab12" * 16 + ".scope")  # fmt: skip
HOSTILE = "r\udcffsum\u00e9 ,=\"x"  # a byte that is not UTF-8, and line protocol's specials
SAMPLES = 4  # samples per window before the test ends it


def build_host(tmp_path: Path) -> FakeJobsHost:
    host = FakeJobsHost(tmp_path)
    # A pod's job: the loop (100) waits in poll() on its loader (200), blocked in read().
    host.process(100, 1, ["python3", "-u", "/work/train.py"], {"RANK": "1",
                 "DISKPROBE_JOB": HOSTILE, "SECRET_TOKEN": "never kept"}, POD)  # fmt: skip
    host.thread(100, 101, "S", FUTEX)  # the step's pool, idle
    host.process(200, 100, ["python3", "-u", "/work/train.py"], {"RANK": "1"}, POD)
    host.open_file(200, 3, host.data_file)
    host.thread(200, 200, "D", read_on(3))
    # A systemd unit's TensorFlow-shaped job: the loop waits in futex, two pool threads run.
    host.process(300, 1, ["python3", "fit.py"], cgroup="/system.slice/trainer.service")
    host.thread(300, 300, "S", FUTEX)
    for tid in (301, 302):
        host.thread(300, tid, "R", RUNNING)
    host.thread(300, 303, "S", FUTEX, comm="tf_Compute")
    # torchrun (no rank, matched by its train.py argument) and the rank it started.
    host.process(400, 1, ["/usr/bin/python3", "/usr/local/bin/torchrun", "train.py"])
    host.process(401, 400, ["/usr/bin/python3", "-u", "train.py"], {"RANK": "0"})
    host.thread(401, 401, "R", RUNNING)
    return host


def make_collector(host: FakeJobsHost, log: io.StringIO, **options: object) -> JobsCollector:
    config = JobsConfig(match=[r"train\.py", r"fit\.py"], sample_interval=0.05,
                        discovery_interval=1.0, **options)  # fmt: skip
    context = CollectorContext(roots=HostRoots.from_env(host.env), log=Logger(log))
    return JobsCollector(config, context)


def next_window(collector: JobsCollector, jobs: int) -> list[Metric]:
    """End the window once `jobs` jobs are watched and each took SAMPLES samples in it."""
    def ready() -> bool:
        with collector.sampler.lock:
            watched = [job for job in collector.sampler.jobs.values() if not job.gone]
            return len(watched) >= jobs and all(job.ticks >= SAMPLES for job in watched)

    wait_until(ready, f"{jobs} jobs sampled")
    return collector.collect().metrics


def by_pid(metrics: list[Metric]) -> dict[int, Metric]:
    return {int(metric.fields["pid"]): metric for metric in metrics}


@pytest.fixture
def running(tmp_path: Path):  # type: ignore[no-untyped-def]
    host, log = build_host(tmp_path), io.StringIO()
    collector = make_collector(host, log)
    collector.collect()  # starts the threads: this window began before the jobs were found
    next_window(collector, 3)  # the jobs' first full window begins
    yield host, collector, log
    collector.close()


def test_each_job_gets_its_verdict_and_its_tags(running) -> None:  # type: ignore[no-untyped-def]
    host, collector, log = running
    points = by_pid(next_window(collector, 3))
    assert_schema(list(points.values()))
    assert set(points) == {100, 300, 401}  # torchrun (400) is a launcher: no point
    pod, unit, rank = points[100], points[300], points[401]
    assert (pod.fields["bottleneck"], pod.fields["device"]) == ("disk", "fakedisk")
    assert pod.fields["mount_point"] == str(host.data) and pod.fields["processes"] == 2
    assert pod.tags == {"job": HOSTILE, "rank": "1", "job_pid": "100", "cgroup": POD,
                        "pod_uid": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
                        "container_id": "ab12" * 16, "qos": "burstable"}  # fmt: skip
    assert unit.fields["bottleneck"] == "compute" and "device" not in unit.fields
    assert unit.fields["runtime_running_threads"] == pytest.approx(2.0, abs=0.3)
    assert unit.fields["main_waiting_ratio"] == 1.0 and unit.tags["unit"] == "trainer.service"
    assert (unit.tags["job"], rank.tags["job"], rank.tags["rank"]) == ("fit", "train", "0")
    assert "never kept" not in repr(collector.sampler.discovery.known)  # only tags' variables
    assert "E! " not in log.getvalue()


def test_a_job_that_exits_forks_execs_or_renames_between_points(running) -> None:  # type: ignore[no-untyped-def]
    host, collector, _ = running
    host.process(201, 100, ["python3", "-u", "/work/train.py"], {"RANK": "1"}, POD)  # forks
    host.thread(401, 401, "R", RUNNING, comm="renamed")  # prctl(PR_SET_NAME)
    host.remove(300)  # the unit's job exits
    window = by_pid(next_window(collector, 2))
    assert set(window) == {100, 401} and window[401].tags["job"] == "train"
    wait_until(lambda: by_pid(next_window(collector, 2))[100].fields["processes"] == 3,
               "the forked loader joins its job")  # fmt: skip
    host.execs(401, ["python3", "train.py", "--eval"], {"RANK": "0", "DISKPROBE_JOB": "evaluate"})

    def exec_seen() -> bool:
        with collector.sampler.lock:
            return all(job.gone or job.identity.name != "train"
                       for job in collector.sampler.jobs.values())  # fmt: skip

    wait_until(exec_seen, "the rank's exec is seen")

    def evaluated() -> bool:  # until the new program is a job of its own: never a mixed point
        points = by_pid(next_window(collector, 1))
        assert 401 not in points or points[401].tags["job"] == "evaluate", points[401]
        return 401 in points

    wait_until(evaluated, "the exec'ed program watched as a job of its own")


def test_jobs_beyond_the_cap_are_counted_and_said_once(tmp_path: Path) -> None:
    host, log = build_host(tmp_path), io.StringIO()
    collector = make_collector(host, log, max_jobs=1)
    try:
        collector.collect()
        next_window(collector, 1)
        for _ in range(2):
            collection = collector.collect()
            assert collection.agent_fields["jobs_over_cap"] == 2 and collection.items == 1
    finally:
        collector.close()
    assert log.getvalue().count("W! jobs: more jobs than max_jobs = 1") == 1, log.getvalue()


@pytest.mark.parametrize("output_format", FORMATS)
def test_every_format_escapes_the_jobs_names(running, output_format: str) -> None:  # type: ignore[no-untyped-def]
    _, collector, _ = running
    metrics = next_window(collector, 3)
    text = make_serializer(output_format, {"COLLECTD_HOSTNAME": "node1"}, 5.0).serialize(metrics)
    text.encode("utf-8")  # strict: every byte that is not UTF-8 became %XX
    assert "%FF" in text and "\udcff" not in text
    if output_format == "prometheus":
        assert 'training_job="r%FFsum\u00e9 ,=\\"x"' in text and ' job="' not in text
        assert 'diskprobe_job_bottleneck_code{' in text
    if output_format == "influx":
        assert 'job=r%FFsumé\\ \\,\\="x,' in text and 'bottleneck="disk"' in text
    if output_format == "collectd":
        assert "bottleneck_code" in text and 'bottleneck"' not in text
