"""diskprobe_cgroup_io: parsers, layout tags, own-I/O rates on fake trees, and a real cgroup.

Fake trees follow documented layouts: Kubernetes "Configuring a cgroup driver" and
"Pod QoS classes" (systemd driver: kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid
with _>.slice/cri-containerd-<id>.scope; cgroupfs driver: kubepods/<qos>/pod<uid>/<id>;
guaranteed pods sit directly under kubepods), Docker "Runtime metrics" (docker/<id> with the
cgroupfs driver, system.slice/docker-<id>.scope with the systemd driver), and the kernel's
cgroup-v2.rst (io.stat, io.pressure) and blkio-controller.rst (v1 throttle files).
"""

from __future__ import annotations

import io
import os
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.cgroup_io import CgroupIoCollector
from diskprobe.compute.cgroup_tags import cgroup_tags
from diskprobe.config import CgroupIoConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.sources.cgroups import parse_io_stat, v1_counters
from diskprobe.sources.pressure import parse_pressure

from ci import skip_or_fail
from helpers import FakeClock, assert_schema

UID = "0f8c2a8e-3b1d-4c5e-9f00-123456789abc"
CID = "4e1f0b8d" * 8  # 64 hex characters, like containerd and Docker IDs
SYSTEMD_POD = f"kubepods-burstable-pod{UID.replace('-', '_')}.slice"

TAG_CASES = [
    (
        f"kubepods.slice/kubepods-burstable.slice/{SYSTEMD_POD}/cri-containerd-{CID}.scope",
        {"pod_uid": UID, "container_id": CID, "qos": "burstable"},
    ),
    (
        f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
        f"{UID.replace('-', '_')}.slice/crio-{CID}.scope",
        {"pod_uid": UID, "container_id": CID, "qos": "besteffort"},
    ),
    (
        f"kubepods.slice/kubepods-pod{UID.replace('-', '_')}.slice/cri-containerd-{CID}.scope",
        {"pod_uid": UID, "container_id": CID, "qos": "guaranteed"},
    ),
    (
        f"kubepods.slice/kubepods-burstable.slice/{SYSTEMD_POD}",
        {"pod_uid": UID, "qos": "burstable"},
    ),
    ("kubepods.slice/kubepods-besteffort.slice", {"qos": "besteffort"}),
    (
        f"kubepods/burstable/pod{UID}/{CID}",
        {"pod_uid": UID, "container_id": CID, "qos": "burstable"},
    ),
    (
        f"kubepods/besteffort/pod{UID}/{CID}",
        {"pod_uid": UID, "container_id": CID, "qos": "besteffort"},
    ),
    (f"kubepods/pod{UID}/{CID}", {"pod_uid": UID, "container_id": CID, "qos": "guaranteed"}),
    (f"system.slice/docker-{CID}.scope", {"container_id": CID}),
    (f"docker/{CID}", {"container_id": CID}),
    ("system.slice/nginx.service", {"unit": "nginx.service"}),
    ("user.slice/user-1000.slice/session-3.scope", {}),
    ("", {}),
]


@pytest.mark.parametrize(("path", "expected"), TAG_CASES)
def test_layout_tags(path: str, expected: dict[str, str]) -> None:
    assert cgroup_tags(path) == {"cgroup": "/" + path, **expected}


def test_parsers() -> None:
    # A line as in Documentation/admin-guide/cgroup-v2.rst, plus io.cost keys to ignore.
    stat = "8:0 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
    stat += "254:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6 cost.vrate=100.00\n"
    assert parse_io_stat(stat) == {
        (8, 0): (1459200, 314773504, 192, 353, 0),
        (254, 16): (1, 2, 3, 4, 5),
    }
    sizes = "8:0 Read 1234\n8:0 Write 5678\n8:0 Sync 6912\n8:0 Async 0\n8:0 Discard 0\n"
    sizes += "8:0 Total 6912\nTotal 6912\n"
    assert v1_counters(sizes, "8:0 Read 3\n8:0 Write 7\nTotal 10\n") == {(8, 0): (1234, 5678, 3, 7)}
    psi = "some avg10=1.50 avg60=0.00 avg300=0.00 total=100\n"
    psi += "full avg10=0.25 avg60=0 avg300=0 total=9\n"
    pressure = parse_pressure(psi)
    assert pressure is not None and pressure.full is not None and pressure.full.avg10 == 0.25


class Host:
    """HOST_SYS with a cgroup tree (v2 io.stat or v1 blkio) and /sys/dev/block links."""

    def __init__(self, root: Path, version: int) -> None:
        self.sys = root / "sys"
        self.version = version
        cgroup = self.sys / "fs" / "cgroup"
        self.root = cgroup if version == 2 else cgroup / "blkio"
        self.root.mkdir(parents=True)
        if version == 2:
            (self.root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        for devno, name in (("8:0", "sda"), ("254:0", "vda")):
            (self.sys / "dev" / "block").mkdir(parents=True, exist_ok=True)
            os.symlink(f"../../devices/virtual/block/{name}", self.sys / "dev" / "block" / devno)
        self.clock = FakeClock()
        self.log = io.StringIO()
        self.counters: dict[str, dict[str, tuple[int, int, int, int, int]]] = {}

    def collector(self, max_cgroups: int = 50) -> CgroupIoCollector:
        roots = HostRoots(sys=str(self.sys))
        wall = iter(range(10**18, 10**19, 10**9))
        log = Logger(self.log, debug=True)
        clock = Clock(monotonic=self.clock, wall_ns=lambda: next(wall))
        context = CollectorContext(roots, log, clock=clock)
        return CgroupIoCollector(CgroupIoConfig(max_cgroups=max_cgroups), context)

    def add(self, path: str, devno: str, rb: int, wb: int, r: int, w: int, d: int = 0) -> None:
        """Own I/O of `path`; files get the subtree sums, as the kernel's counters do."""
        for ancestor in Path(path).parents:  # the kernel has the files at every level
            self.counters.setdefault(str(ancestor).strip("."), {})
        self.counters.setdefault(path, {})
        (self.root / path).mkdir(parents=True, exist_ok=True)
        old = self.counters[path].get(devno, (0, 0, 0, 0, 0))
        self.counters[path][devno] = tuple(a + b for a, b in zip(old, (rb, wb, r, w, d)))  # type: ignore[assignment]

    def write(self) -> None:
        for path in self.counters:
            total: dict[str, list[int]] = {}
            for other, devices in self.counters.items():
                if path == "" or other == path or other.startswith(path + "/"):
                    for devno, values in devices.items():
                        sums = total.setdefault(devno, [0] * 5)
                        sums[:] = [a + b for a, b in zip(sums, values)]
            self._write_files(self.root / path, total)

    def _write_files(self, directory: Path, total: dict[str, list[int]]) -> None:
        if self.version == 2:
            lines = [
                f"{d} rbytes={v[0]} wbytes={v[1]} rios={v[2]} wios={v[3]} dbytes={v[4]} dios=0"
                for d, v in total.items()
            ]
            (directory / "io.stat").write_text("".join(line + "\n" for line in lines))
            (directory / "io.pressure").write_text(
                "some avg10=2.00 avg60=0 avg300=0 total=1\n"
                "full avg10=1.00 avg60=0 avg300=0 total=1\n"
            )
            return
        for name, first in (("io_service_bytes", 0), ("io_serviced", 2)):
            text = "".join(
                f"{d} Read {v[first]}\n{d} Write {v[first + 1]}\n" for d, v in total.items()
            )
            (directory / f"blkio.throttle.{name}_recursive").write_text(text + "Total 0\n")

    def sample(self, collector: CgroupIoCollector, advance: float = 2.0) -> list[Metric]:
        self.write()
        self.clock.now += advance
        return collector.collect().metrics


CONTAINER = f"kubepods.slice/kubepods-burstable.slice/{SYSTEMD_POD}/cri-containerd-{CID}.scope"


def _populate(host: Host) -> None:
    host.add("", "8:0", 0, 0, 0, 0)
    host.add(CONTAINER, "8:0", 0, 0, 0, 0)
    host.add("system.slice/nginx.service", "254:0", 0, 0, 0, 0)
    host.add("system.slice/cron.service", "254:0", 0, 0, 0, 0)


@pytest.mark.parametrize("version", [1, 2])
def test_own_io_rates_busiest_first(tmp_path: Path, version: int) -> None:
    host = Host(tmp_path, version)
    _populate(host)
    collector = host.collector()
    assert host.sample(collector) == []
    host.add(CONTAINER, "8:0", 4000, 8000, 10, 20, d=2000)
    host.add("system.slice/nginx.service", "254:0", 0, 2000, 0, 4)
    host.add("", "8:0", 0, 400, 0, 2)  # the root's own (on v1: buffered writeback)
    metrics = host.sample(collector)
    assert_schema(metrics)
    cgroups = [m.tags["cgroup"] for m in metrics]
    assert cgroups == ["/" + CONTAINER, "/system.slice/nginx.service", "/"]
    container = metrics[0]
    assert container.tags["pod_uid"] == UID and container.tags["device"] == "sda"
    assert container.fields["read_bytes_per_sec"] == 2000.0
    assert container.fields["write_bytes_per_sec"] == 4000.0
    assert container.fields["writes_per_sec"] == 10.0
    assert ("discard_bytes_per_sec" in container.fields) == (version == 2)
    assert ("some_avg10" in container.fields) == (version == 2)
    assert metrics[2].fields["write_bytes_per_sec"] == 200.0  # not the whole subtree's 6400
    assert host.sample(collector) == []  # idle: nothing emitted


def test_max_cgroups_and_counter_reset(tmp_path: Path) -> None:
    host = Host(tmp_path, 2)
    _populate(host)
    collector = host.collector(max_cgroups=1)
    host.sample(collector)
    host.add("system.slice/cron.service", "254:0", 0, 10, 0, 1)
    host.add("system.slice/nginx.service", "254:0", 0, 20, 0, 1)
    assert [m.tags["unit"] for m in host.sample(collector)] == ["nginx.service"]
    host.counters["system.slice/nginx.service"]["254:0"] = (0, 1, 0, 1, 0)  # reset
    assert [m.tags.get("unit") for m in host.sample(collector)] == []
    host.add("system.slice/nginx.service", "254:0", 0, 4, 0, 1)
    assert host.sample(collector)[0].fields["write_bytes_per_sec"] == 2.0


def test_missing_cgroup_fs_logs_once_and_idles(tmp_path: Path) -> None:
    log = io.StringIO()
    context = CollectorContext(HostRoots(sys=str(tmp_path)), Logger(log), clock=Clock(FakeClock()))
    collector = CgroupIoCollector(CgroupIoConfig(), context)
    assert collector.collect().metrics == [] and collector.collect().metrics == []
    assert log.getvalue().count("I! cgroup_io") == 1


def _whole_disk(st_dev: int) -> str:
    """maj:min of the disk holding st_dev (throttle limits are set on disks, not partitions)."""
    link = f"/sys/dev/block/{os.major(st_dev)}:{os.minor(st_dev)}"
    if os.path.exists(os.path.join(link, "partition")):
        return Path(os.path.realpath(link)).parent.joinpath("dev").read_text().strip()
    return f"{os.major(st_dev)}:{os.minor(st_dev)}"


@pytest.fixture
def real_cgroup(tmp_path: Path) -> Iterator[tuple[Path, str, int]]:
    """A fresh child cgroup with I/O accounting on the disk under tmp_path: (dir, disk, version)."""
    from diskprobe.sources.cgroups import find_hierarchy

    hierarchy = find_hierarchy(HostRoots())
    reason = "no cgroup v2 io controller nor v1 blkio mounted" if hierarchy is None else ""
    reason = "needs root" if os.geteuid() != 0 else reason
    if reason:
        skip_or_fail(reason)
    assert hierarchy is not None and not reason, reason
    disk = _whole_disk(os.stat(tmp_path).st_dev)
    directory = Path(hierarchy.root) / f"diskprobe-test-{os.getpid()}"
    directory.mkdir()
    limit = directory / "blkio.throttle.write_bps_device"
    try:
        if hierarchy.version == 2:
            (Path(hierarchy.root) / "cgroup.subtree_control").write_text("+io\n")
        else:  # Linux 6.10+ only counts v1 throttle stats on devices with a limit set
            limit.write_text(f"{disk} {10**12}\n")
        yield directory, disk, hierarchy.version
    finally:
        if hierarchy.version == 1:
            limit.write_text(f"{disk} 0\n")
        directory.rmdir()  # the writer has exited: dd runs to completion in the test


@pytest.mark.root
@pytest.mark.slow
def test_real_cgroup_write_rate(tmp_path: Path, real_cgroup: tuple[Path, str, int]) -> None:
    directory, disk, version = real_cgroup
    times: list[float] = []

    def monotonic() -> float:
        times.append(time.monotonic())
        return times[-1]

    config = CgroupIoConfig(max_depth=1)
    context = CollectorContext(HostRoots(), Logger(io.StringIO()), clock=Clock(monotonic))
    collector = CgroupIoCollector(config, context)
    collector.collect()
    mib = 256
    script = 'echo $$ > "$1/cgroup.procs" && exec dd if=/dev/zero of="$2" bs=1M count="$3" '
    script += "oflag=direct"
    subprocess.run(
        ["sh", "-c", script, "sh", str(directory), str(tmp_path / "data"), str(mib)],
        check=True,
        capture_output=True,
    )
    time.sleep(0.5)
    metrics = collector.collect().metrics
    assert_schema(metrics)
    ours = [m for m in metrics if m.tags["cgroup"] == f"/{directory.name}"]
    assert len(ours) == 1, (version, disk, metrics)
    truth = mib * 2**20 / (times[1] - times[0])
    rate = ours[0].fields["write_bytes_per_sec"]
    assert isinstance(rate, float) and abs(rate - truth) <= 0.15 * truth, (rate, truth)
    writes = ours[0].fields["writes_per_sec"]
    assert isinstance(writes, float) and writes > 0


def test_a_parent_whose_children_did_all_its_io_is_not_reported(tmp_path: Path) -> None:
    """Two containers of one pod write 1 and 2 bytes in 3 s. Subtracted as rates, the pod's
    slice kept 3/3 - 1/3 - 2/3 = 1.1e-16 bytes/s and was reported as a busy cgroup of its
    own (a series that came and went with nothing changing); in whole counts it did nothing
    itself."""
    host = Host(tmp_path, 2)
    pod = f"kubepods.slice/kubepods-burstable.slice/{SYSTEMD_POD}"
    first, second = (f"{pod}/cri-containerd-{letter * 64}.scope" for letter in "ab")
    host.add(first, "8:0", 0, 0, 0, 0)
    host.add(second, "8:0", 0, 0, 0, 0)
    collector = host.collector()
    assert host.sample(collector, advance=3.0) == []
    host.add(first, "8:0", 0, 1, 0, 1)
    host.add(second, "8:0", 0, 2, 0, 1)
    metrics = host.sample(collector, advance=3.0)
    assert sorted(m.tags["cgroup"] for m in metrics) == ["/" + first, "/" + second]
    assert sorted(m.fields["write_bytes_per_sec"] for m in metrics) == [1 / 3, 2 / 3]
