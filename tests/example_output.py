"""The README's Example Output: real lines of `.venv/bin/diskprobe --once` on this machine.

Real /proc and /sys for io, fs, pressure, process_io and cgroup_io, with a `dd oflag=direct`
writer in a child cgroup of its own (throttled to 50 MiB/s: it gives the disk, the process
and the cgroup something to report, and on cgroup v1 with Linux 6.10+ blkio counts nothing
on a disk without a limit). SMART comes from tests/fake_smartctl/smartctl replaying one
golden case, as this VM's virtio disk has no SMART. `--once` watches no training job and
times no request (a verdict needs a whole interval, bpftrace seconds to start): the
diskprobe_job and latency lines come from the agent's own interval mode watching two real
jobs of tests/diagnose_job.py for a few intervals (one spinning on the CPU, one whose loaders
read files on this machine's disk) with [latency] on. Needs root (the cgroup, the jobs'
blocked calls, bpftrace). Run through tests/update_generated.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from diskprobe.roots import HostRoots
from diskprobe.schema import MEASUREMENTS, TRAINING
from diskprobe.sources.cgroups import find_hierarchy

from lineproto import Point, parse_line

TESTS = Path(__file__).resolve().parent
DISKPROBE = Path(sys.executable).parent / "diskprobe"
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
GOLDEN_CASE = TESTS / "golden" / "smart-json" / "ata-hdd-seagate-st16000nm001g-exos-x16"
WRITER_CGROUP = "diskprobe-example-writer"
WRITER_BYTES_PER_SEC = 50 * 2**20
INTERVAL = "2s"
# Lines kept per measurement, and which first: the highest rank.
SMART_ATTR_IDS = ("5", "9", "194", "197")
AGENT_COLLECTORS = ("io", "filesystems", "smart")
KEEP: dict[str, tuple[int, Callable[[Point], float]]] = {
    "diskprobe_io": (2, lambda p: _bytes_per_sec(p)),
    "diskprobe_fs": (2, lambda p: _root_first(p)),
    "diskprobe_smart": (1, lambda p: 0.0),
    "diskprobe_smart_attr": (3, lambda p: float(p.tags.get("id") in SMART_ATTR_IDS)),
    "diskprobe_pressure": (1, lambda p: 0.0),
    "diskprobe_process_io": (1, lambda p: _bytes_per_sec(p)),
    "diskprobe_cgroup_io": (2, lambda p: _bytes_per_sec(p)),
    # the last interval's fullest buckets of the busiest device-operation
    "diskprobe_latency_bucket": (3, lambda p: p.time_ns // 10**9 * 1e9 + _number(p, "total")),
    "diskprobe_process_latency": (1, lambda p: _number(p, "wait_sec")),
    "diskprobe_cgroup_latency": (1, lambda p: _number(p, "wait_sec")),
    "diskprobe_agent": (3, lambda p: float(p.tags.get("collector") in AGENT_COLLECTORS)),
}


def _number(point: Point, name: str) -> float:
    value = point.fields.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _root_first(point: Point) -> float:
    """The root filesystem, then the largest."""
    return (1e30 if point.tags.get("path") == "/" else 0.0) + _number(point, "total_bytes")


def _bytes_per_sec(point: Point) -> float:
    return _number(point, "read_bytes_per_sec") + _number(point, "write_bytes_per_sec")


def pick_lines(lines: list[str]) -> list[str]:
    """A few representative lines per measurement, in the schema's order; every measurement
    the agent writes must be there (diskprobe_training is the training job's own, with its
    own example in the README)."""
    parsed = [(parse_line(line), line) for line in lines if line.strip()]
    picked: list[str] = []
    missing = []
    for spec in (spec for spec in MEASUREMENTS if spec.name != TRAINING.name):
        count, rank = KEEP.get(spec.name, (2, lambda p: 0.0))
        ours = [(point, line) for point, line in parsed if point.measurement == spec.name]
        if not ours:
            missing.append(spec.name)
        ours.sort(key=lambda pair: rank(pair[0]), reverse=True)  # stable: ties keep order
        picked += [line for _, line in ours[:count]]
    if missing:
        raise SystemExit(f"example output: diskprobe --once printed no {', '.join(missing)}")
    return picked


def _whole_disk(path: Path) -> str:
    """maj:min of the disk holding `path` (throttle limits are set on disks, not partitions)."""
    st_dev = os.stat(path).st_dev
    link = f"/sys/dev/block/{os.major(st_dev)}:{os.minor(st_dev)}"
    if os.path.exists(os.path.join(link, "partition")):
        return Path(os.path.realpath(link)).parent.joinpath("dev").read_text().strip()
    return f"{os.major(st_dev)}:{os.minor(st_dev)}"


@contextlib.contextmanager
def throttled_writer(work: Path) -> Iterator[None]:
    """`dd oflag=direct` into `work`, in a child cgroup limited to WRITER_BYTES_PER_SEC."""
    hierarchy = find_hierarchy(HostRoots())
    if os.geteuid() != 0 or hierarchy is None:
        raise SystemExit("example output: needs root and a cgroup io/blkio hierarchy "
                         "(or run tests/update_generated.py --skip-example-output)")  # fmt: skip
    disk = _whole_disk(work)
    directory = Path(hierarchy.root) / WRITER_CGROUP
    directory.mkdir(exist_ok=True)
    if hierarchy.version == 2:
        (Path(hierarchy.root) / "cgroup.subtree_control").write_text("+io\n")
        limit, limit_text, unset = directory / "io.max", f"{disk} wbps={WRITER_BYTES_PER_SEC}\n", ""
    else:
        limit = directory / "blkio.throttle.write_bps_device"
        limit_text, unset = f"{disk} {WRITER_BYTES_PER_SEC}\n", f"{disk} 0\n"
    limit.write_text(limit_text)
    script = 'echo $$ > "$1/cgroup.procs" && exec dd if=/dev/zero of="$2" bs=1M count=100000 '
    script += "oflag=direct status=none"
    writer = subprocess.Popen(["sh", "-c", script, "sh", str(directory), str(work / "data")])
    try:
        time.sleep(1.0)
        yield
    finally:
        writer.kill()
        writer.wait()
        if unset:
            limit.write_text(unset)
        _remove_cgroup(directory)


def _remove_cgroup(directory: Path) -> None:
    for _ in range(50):  # the killed writer leaves the cgroup a moment after wait()
        try:
            directory.rmdir()
            return
        except OSError:
            time.sleep(0.1)
    directory.rmdir()


def _config(work: Path) -> Path:
    config = work / "diskprobe.toml"
    config.write_text(
        f'state_file = "{work / "state.json"}"\n\n'
        f'[smart]\n  smartctl_path = "{FAKE_SMARTCTL}"\n',
        encoding="utf-8",
    )
    return config


def run_once() -> list[str]:
    """The stdout lines of one real `diskprobe --once` while the writer runs."""
    with tempfile.TemporaryDirectory(prefix="diskprobe-example-", dir="/var/tmp") as name:
        work = Path(name)
        fake = work / "fake-smartctl"
        shutil.copytree(GOLDEN_CASE, fake / GOLDEN_CASE.name)
        env = {key: value for key, value in os.environ.items() if not key.startswith("HOST_")}
        env["FAKE_SMARTCTL_DIR"] = str(fake)
        argv = [str(DISKPROBE), "--once", "--interval", INTERVAL, "--config", str(_config(work))]
        with throttled_writer(work):
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"example output: diskprobe exited {done.returncode}: {done.stderr}")
    return done.stdout.splitlines()


JOB_SCRIPT = TESTS / "diagnose_job.py"
LATENCY_LINES = ("diskprobe_latency", "diskprobe_process_latency", "diskprobe_cgroup_latency")
JOB_RUN_SEC = 14.0  # found after 4 s (start-up discoveries), then whole 2 s windows


def run_jobs() -> list[str]:
    """diskprobe_job and latency lines of the agent watching two real jobs (as `train.py`)."""
    off = "".join(f"[{name}]\nenabled = false\n" for name in
                  ("io", "filesystems", "smart", "pressure", "process_io", "cgroup_io"))
    with tempfile.TemporaryDirectory(prefix="diskprobe-example-", dir="/var/tmp") as name:
        work = Path(name)
        script, data = work / "train.py", work / "dataset"
        shutil.copy(JOB_SCRIPT, script)
        data.mkdir()
        for index in range(16):
            (data / f"sample-{index:02}.bin").write_bytes(os.urandom(1 << 20))
        config = work / "diskprobe.toml"
        config.write_text(f'interval = "{INTERVAL}"\nstate_file = "{work / "state.json"}"\n'
                          f'{off}[jobs]\nmatch = ["train\\\\.py"]\n'
                          '[latency]\nenabled = true\n')  # fmt: skip
        jobs = [subprocess.Popen([sys.executable, str(script), *argv], stdout=subprocess.DEVNULL,
                                 start_new_session=True)  # its loaders die with it: killpg
                for argv in (("spin", "-", "2"), ("files", str(data), "2"))]  # fmt: skip
        try:
            done = subprocess.run([str(DISKPROBE), "--config", str(config)], capture_output=True,
                                  text=True, timeout=JOB_RUN_SEC)  # fmt: skip
        except subprocess.TimeoutExpired as stopped:
            out = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else ""
        else:
            raise SystemExit(f"example output: the agent exited {done.returncode}: {done.stderr}")
        finally:
            for job in jobs:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
    lines = out.splitlines()
    jobs = [line for line in lines if line.startswith("diskprobe_job,")][-2:]
    return jobs + [line for line in lines if line.startswith(LATENCY_LINES)]


def example_block() -> str:
    """The README's example-output block: a fenced block of real lines."""
    return "```text\n" + "\n".join(pick_lines(run_once() + run_jobs())) + "\n```\n"


if __name__ == "__main__":
    print(example_block(), end="")
