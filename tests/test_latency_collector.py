"""The latency collector in this process (collectors/latency.py), fed by the fake bpftrace
(tests/fake_bpftrace) on a fake host's HOST_SYS: a device named through /sys/dev/block, a
Kubernetes pod's and a systemd unit's cgroups in a v2 hierarchy, a comm that is not UTF-8.
Every measurement and tag comes out, fits the schema, and goes through every output format
escaped; on a v1-only host the per-cgroup points are off with one I! line."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.latency import LatencyCollector
from diskprobe.config import LatencyConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.serializers import FORMATS, make_serializer

from ci import wait_until
from helpers import assert_schema

FAKE = Path(__file__).with_name("fake_bpftrace") / "bpftrace"
DEV = 254 << 20 | 7  # fakedisk's maj:min 254:7, as the kernel's dev_t
POD = ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8a9b_"
       "0c1d2e3f4a5b.slice/cri-containerd-" + "cd34" * 16 + ".scope")  # fmt: skip
UNIT = "system.slice/trainer.service"


def fake_sys(root: Path, v2: bool = True) -> dict[str, int]:
    """HOST_SYS with fakedisk and, on a v2 host, two cgroups; their ids (inode numbers)."""
    (root / "dev" / "block").mkdir(parents=True)
    (root / "dev" / "block" / "254:7").symlink_to("../../devices/virtual/block/fakedisk")
    unified = root / "fs" / "cgroup" / "unified"
    unified.mkdir(parents=True)
    if not v2:
        return {}
    (unified / "cgroup.controllers").write_text("\n")
    ids = {}
    for path in (POD, UNIT):
        (unified / path).mkdir(parents=True)
        ids[path] = os.stat(unified / path).st_ino
    return ids


def dumps(ids: dict[str, int]) -> dict[str, object]:
    read = {"count": 40, "average": 2_000_000, "total": 80_000_000}
    maps: dict[str, object] = {
        "@hist": {f"{DEV},R,83": 30, f"{DEV},R,86": 10, f"{DEV},WS,70": 5},
        "@dev": {f"{DEV},R": read, f"{DEV},WS": {"count": 5, "average": 90_000,
                                                "total": 450_000}},
        "@max": {f"{DEV},R": 5_000_000, f"{DEV},WS": 120_000},
        "@proc": {f"0,{DEV},R,\uffffffffloader": read,
                  f"0,{DEV},WS,kworker/u8:2": {"count": 5, "average": 90_000, "total": 450_000}},
        "@cgroup": {f"{ids.get(POD, 9)},{DEV},R,83": 30, f"{ids.get(UNIT, 8)},{DEV},R,86": 10,
                    f"{ids.get(POD, 9)},{DEV},WS,70": 5},
        "@all": 45, "@unmatched": 2,
    }  # fmt: skip
    return maps


@pytest.fixture
def collector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
              ) -> Iterator[tuple[LatencyCollector, io.StringIO]]:  # fmt: skip
    ids = fake_sys(tmp_path / "sys")
    (tmp_path / "maps.json").write_text(json.dumps(dumps(ids)))
    monkeypatch.setenv("FAKE_BPFTRACE", f"dumps {tmp_path / 'maps.json'}")
    log = io.StringIO()
    context = CollectorContext(roots=HostRoots(sys=str(tmp_path / "sys")), log=Logger(log))
    made = LatencyCollector(LatencyConfig(enabled=True, bpftrace_path=str(FAKE)), context)
    made.collect()  # starts the child
    yield made, log
    made.close()


def first_points(made: LatencyCollector) -> list[Metric]:
    found: list[Metric] = []

    def some() -> bool:
        found.extend(made.collect().metrics)
        return any(metric.measurement == "diskprobe_latency" for metric in found)

    wait_until(some, "the fake's first dumps")
    return found


def test_every_measurement_and_tag_from_the_fakes_dumps(
    collector: tuple[LatencyCollector, io.StringIO],
) -> None:
    made, log = collector
    points = first_points(made)
    assert_schema(points)
    by = {metric.measurement for metric in points}
    assert by == {"diskprobe_latency", "diskprobe_latency_bucket", "diskprobe_process_latency",
                  "diskprobe_cgroup_latency"}, by  # fmt: skip
    reads = next(m for m in points if m.measurement == "diskprobe_latency"
                 and m.tags == {"device": "fakedisk", "op": "read"})  # fmt: skip
    assert reads.fields["max_ms"] == 5.0 and reads.fields["mean_ms"] == 2.0
    cgroups = {m.tags["cgroup"]: m.tags for m in points
               if m.measurement == "diskprobe_cgroup_latency"}  # fmt: skip
    assert cgroups[f"/{POD}"]["pod_uid"] == "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    assert cgroups[f"/{POD}"]["qos"] == "burstable" and "container_id" in cgroups[f"/{POD}"]
    assert cgroups[f"/{UNIT}"]["unit"] == "trainer.service"
    assert {m.tags["process"] for m in points if m.measurement ==
            "diskprobe_process_latency"} == {"\udcffloader", "kworker/u8:2"}  # fmt: skip
    assert "E! " not in log.getvalue() and "W! " not in log.getvalue()


@pytest.mark.parametrize("output_format", FORMATS)
def test_every_format_escapes_a_comm_that_is_not_utf8(
    collector: tuple[LatencyCollector, io.StringIO], output_format: str
) -> None:
    made, _ = collector
    text = make_serializer(output_format, {"COLLECTD_HOSTNAME": "n"}, 1.0).serialize(
        first_points(made))  # fmt: skip
    text.encode("utf-8")  # strict
    assert "%FFloader" in text and "\udcff" not in text


def test_on_a_v1_only_host_no_cgroup_points_and_one_line(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake_sys(tmp_path / "sys", v2=False)
    (tmp_path / "maps.json").write_text(json.dumps(dumps({})))
    monkeypatch.setenv("FAKE_BPFTRACE", f"dumps {tmp_path / 'maps.json'}")
    log = io.StringIO()
    context = CollectorContext(roots=HostRoots(sys=str(tmp_path / "sys")), log=Logger(log))
    made = LatencyCollector(LatencyConfig(enabled=True, bpftrace_path=str(FAKE)), context)
    try:
        made.collect()
        points = first_points(made)
        made.collect()
    finally:
        made.close()
    assert not [m for m in points if m.measurement == "diskprobe_cgroup_latency"]
    assert log.getvalue().count("I! latency: no cgroup v2 hierarchy") == 1, log.getvalue()
