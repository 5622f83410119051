"""The job collector (collectors/jobs.py) in this process, on a fake host's HOST_PROC and
HOST_SYS (tests/jobs_host.py): a Kubernetes pod's job waiting on its disk, a systemd unit's
TensorFlow-shaped job whose runtime threads run the step, a torchrun launcher and its rank;
then what jobs do between two points (exit, fork, exec, a new name), the cap, and every
output format with names that are not UTF-8. Windows end when the test calls collect(); the
test waits on the sampler's own counts (samples taken), never on a duration."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.jobs import JobsCollector
from diskprobe.config import JobsConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.serializers import FORMATS, make_serializer
from jobs_host import FUTEX, RUNNING, FakeJobsHost, read_on

from ci import guarded, wait_until
from helpers import assert_schema, installed_command
from lineproto import parse_line

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

    def exit_seen() -> bool:
        with collector.sampler.lock:
            return all(job.gone for job in collector.sampler.jobs.values() if job.root.main == 300)

    wait_until(exit_seen, "the exit is seen")  # the window it ends in gives no point for it
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


def test_the_installed_command_on_the_fake_host_escapes_the_jobs_names(tmp_path: Path) -> None:
    """The same hostile host through the installed daemon: its diskprobe_job lines are valid
    UTF-8 line protocol, the job's name escaped, and nothing goes to stderr but I! lines."""
    host = build_host(tmp_path / "host")
    config = tmp_path / "diskprobe.toml"
    off = "".join(f"[{name}]\nenabled = false\n" for name in
                  ("io", "filesystems", "smart", "pressure", "process_io", "cgroup_io"))
    config.write_text(f'interval = "1s"\nstate_file = "{tmp_path / "state.json"}"\n{off}'
                      '[jobs]\nmatch = ["train\\\\.py"]\nsample_interval = "50ms"\n')  # fmt: skip
    agent = subprocess.Popen([*installed_command(), "--config", str(config)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, **host.env})  # fmt: skip
    assert agent.stdout is not None
    try:
        line = guarded(lambda: next(raw for raw in agent.stdout  # type: ignore[union-attr]
                                    if b",job=r%FF" in raw), "a job line")
    finally:
        agent.terminate()
        _, err = agent.communicate(timeout=30)
    point = parse_line(line.decode("utf-8").rstrip("\n"))  # strict UTF-8
    assert point.tags["job"] == 'r%FFsum\u00e9 ,="x' and point.fields["bottleneck"] == "disk"
    assert all(raw.startswith(b"I! ") for raw in err.splitlines()), err


def test_broken_proc_files_leave_out_only_what_they_break(tmp_path: Path) -> None:
    """Hostile or half-written files of one job (a cut stat, a garbage syscall and schedstat,
    an io file of words, a command line of binary, an environment without `=`): that job's
    broken threads are left out, nothing raises, and the other jobs keep their verdicts."""
    host, log = build_host(tmp_path), io.StringIO()
    host.process(500, 1, ["python3", "train.py", "\udcff\x00\x01"], {"RANK": "2"})
    (host.proc / "500" / "environ").write_bytes(b"RANK\x00=\x00" + b"\xff" * 70000)
    host.thread(500, 501, "R", RUNNING)
    task = host.proc / "500" / "task"
    (task / "500" / "stat").write_bytes(b"500 (x) S 1 2 3\n")  # cut short
    (task / "501" / "syscall").write_text("garbage\n")
    (task / "501" / "schedstat").write_text("x y z\n")
    (task / "501" / "io").write_bytes(b"rchar: \xd9\xa1\nwchar\n")
    (host.proc / "500" / "io").write_text("read_bytes: 1e400\n")
    collector = make_collector(host, log)
    try:
        collector.collect()
        next_window(collector, 3)
        points = by_pid(next_window(collector, 3))
    finally:
        collector.close()
    assert {100, 300, 401} <= set(points)
    assert points[300].fields["bottleneck"] == "compute"
    assert_schema(list(points.values()))
    assert "E! " not in log.getvalue() and "Traceback" not in log.getvalue()


def test_a_failure_in_the_sampling_thread_is_reported_and_sampling_goes_on(running) -> None:  # type: ignore[no-untyped-def]
    """An exception inside a tick (a bug, a kernel file of a shape never seen) is one W! line
    and diskprobe_agent errors; the thread lives on and the next windows have their points."""
    _, collector, log = running
    original, failed = collector.sampler.sampler.sample, []

    def failing_once(*args: object) -> None:
        if not failed:
            failed.append(True)
            raise RuntimeError("a tick that breaks")
        original(*args)  # type: ignore[arg-type]

    collector.sampler.sampler.sample = failing_once  # type: ignore[method-assign]
    wait_until(lambda: bool(failed), "the failing tick")
    collection = collector.collect()
    assert collection.errors == 1
    assert "W! jobs: sampling: RuntimeError: a tick that breaks" in log.getvalue()
    assert {100, 300, 401} <= set(by_pid(next_window(collector, 3)))
