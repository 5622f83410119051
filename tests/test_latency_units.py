"""[latency]'s parts that need no kernel: the histogram's arithmetic (compute/latency_hist.py),
bpftrace's JSON lines (sources/latency_parse.py, on lines bpftrace 0.17 printed here), the
points of a window (collectors/latency_points.py) and the Prometheus histogram."""

from __future__ import annotations

import math
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.collectors.latency_points import PointMaker, le_text
from diskprobe.compute.latency_hist import bucket_bounds, coarse_counts, op_of, percentile
from diskprobe.config import LatencyConfig
from diskprobe.config.latency import bucket_bounds as exported_bounds
from diskprobe.roots import HostRoots
from diskprobe.serializers.prometheus import PrometheusSerializer
from diskprobe.sources.cgroups import DeviceNames
from diskprobe.sources.latency_parse import DropCount, Dump, DumpReader, restore_bytes

from ci import skip_or_fail
from helpers import assert_schema

# Lines bpftrace 0.17 printed on this machine for sources/bpf/latency.bt (cut to a few keys).
LINES = [
    b'{"type": "attached_probes", "data": {"probes": 4}}',
    b'{"type": "map", "data": {"@hist": {"266338304,WSM,63": 1, "7340034,RA,97": 17, '
    b'"7340034,RA,96": 37}}}',
    b'{"type": "stats", "data": {"@dev": {"7340034,RA": {"count": 54, "average": 21607264, '
    b'"total": 1166792264}, "266338304,WSM": {"count": 1, "average": 40000, "total": 40000}}}}',
    b'{"type": "map", "data": {"@max": {"7340034,RA": 31499614, "266338304,WSM": 40000}}}',
    b'{"type": "stats", "data": {"@proc": {"0,7340034,RA,py,th\\"on": {"count": 50, '
    b'"average": 21000000, "total": 1050000000}, "0,7340034,RA,\\uffffffc3\\uffffffa9t": '
    b'{"count": 4, "average": 29000000, "total": 116792264}}}}',
    b'{"type": "map", "data": {"@cgroup": {"1,7340034,RA,97": 17, "1,7340034,RA,96": 37}}}',
    b'{"type": "map", "data": {"@all": 56}}',
    b'{"type": "map", "data": {"@unmatched": 3}}',
    b'{"type": "printf", "data": "tick\\n"}',
]


def test_buckets_are_four_per_doubling_and_a_percentile_within_a_quarter() -> None:
    assert bucket_bounds(4 * 10) == (1024.0, 1280.0)
    assert bucket_bounds(4 * 10 + 3) == (1792.0, 2048.0)
    assert bucket_bounds(0) == (1.0, 2.0) and bucket_bounds(5) == (2.0, 4.0)
    for value in (9e6, 15e6, 20e3, 100e3):  # a log2 histogram puts 9 ms and 15 ms together
        exponent = int(math.log2(value))
        step = int(value / 2**exponent * 4) - 4
        found = percentile({4 * exponent + step: 1}, 0.5)
        assert found is not None and abs(found - value) / value < 0.25, (value, found)


def test_operations_from_rwbs() -> None:
    assert [op_of(text) for text in ("R", "RA", "RSM", "W", "WS", "WFS", "FWS", "D", "DS",
                                     "F", "FF", "N", "")] == [
        "read", "read", "read", "write", "write", "write", "write", "discard", "discard",
        "flush", "flush", None, None]  # fmt: skip


def test_exported_buckets_tell_20us_from_100us_and_10ms_from_40ms() -> None:
    bounds = [bound * 1e9 for bound in exported_bounds(LatencyConfig())]
    def which(ns: float) -> int:
        return next(i for i, bound in enumerate(bounds) if ns <= bound)
    assert which(20e3) != which(100e3) and which(10e6) != which(40e6)
    assert coarse_counts({4 * 14 + 1: 3, 4 * 23 + 1: 2}, bounds)[which(20e3)] == 3


def test_bpftraces_lines_become_one_dump_with_the_comms_bytes_back() -> None:
    reader = DumpReader()
    dumps = [dump for dump in map(reader.feed, LINES) if dump is not None]
    assert len(dumps) == 1 and reader.attached and reader.garbage == 0
    dump = dumps[0]
    assert dump.hist[(7340034, "RA", 96)] == 37 and dump.completed == 56
    assert (dump.counts[(7340034, "RA")], dump.sums[(7340034, "RA")]) == (54, 1166792264)
    assert dump.maxes[(7340034, "RA")] == 31499614 and dump.unmatched == 3
    assert {key[3] for key in dump.proc_counts} == {'py,th"on', "\u00e9t"}  # "é" was 2 bytes
    assert restore_bytes("\uffffffffok") == "\udcffok"  # a byte that is no UTF-8 stays one


def test_what_is_not_bpftraces_json_is_counted_and_left_out() -> None:
    reader = DumpReader()
    for line in (b"\xff\xfe garbage", b'{"type": "map"}', b'{"type": "map", "data": {"@hist":'
                 b' {"1,R": 5, "x,R,3": 1, "1,R,2": -4, "1,R,3": 1e400}}}', b"",
                 b'{"type": "map", "data": {"@new_map": {"1": 2}}}'):  # fmt: skip
        assert reader.feed(line) is None
    dump = reader.feed(b'{"type": "printf", "data": "tick\\n"}')
    assert dump is not None and not dump.hist and reader.garbage == 7


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_a_line_or_garbage_never_an_exception(data: bytes) -> None:
    DumpReader().feed(data)


def window() -> Dump:
    dump = Dump()
    dump.hist.update({(7 << 20, "RA", 4 * 20): 90, (7 << 20, "R", 4 * 21 + 2): 10,
                      (7 << 20, "WS", 4 * 22): 5})  # fmt: skip
    dump.counts.update({(7 << 20, "RA"): 90, (7 << 20, "R"): 10, (7 << 20, "WS"): 5})
    dump.sums.update({(7 << 20, "RA"): 90 * 1_100_000, (7 << 20, "R"): 10 * 3_000_000,
                      (7 << 20, "WS"): 5 * 4_500_000})  # fmt: skip
    dump.maxes.update({(7 << 20, "RA"): 1_200_000, (7 << 20, "R"): 3_400_000,
                       (7 << 20, "WS"): 4_600_000})  # fmt: skip
    dump.proc_counts.update({(0, 7 << 20, "RA", "fio"): 100})
    dump.proc_sums.update({(0, 7 << 20, "RA", "fio"): 120_000_000})
    dump.completed = 105
    return dump


def maker() -> PointMaker:
    config = LatencyConfig(enabled=True)
    return PointMaker(config, DeviceNames(HostRoots()), None,
                      [bound * 1e9 for bound in exported_bounds(config)])  # fmt: skip


def test_a_window_becomes_points_of_the_schema(tmp_path: object) -> None:
    made = maker()
    points = made.make(window(), 1)
    assert_schema(points)
    name = made.device(7 << 20)
    reads = next(p for p in points if p.measurement == "diskprobe_latency"
                 and p.tags == {"device": name, "op": "read"})  # fmt: skip
    assert reads.fields["requests"] == 100 and reads.fields["max_ms"] == pytest.approx(3.4)
    assert 1.0 < float(reads.fields["p50_ms"]) < 1.3  # bucket 80: 1.05-1.31 ms
    assert float(reads.fields["p999_ms"]) <= 3.4  # never past the exact max
    buckets = [p for p in points if p.measurement == "diskprobe_latency_bucket"
               and p.tags["op"] == "read"]  # fmt: skip
    assert sum(int(p.fields["count"]) for p in buckets) == 100
    assert [p.tags["le"] for p in buckets][-1] == "+Inf" and buckets[-1].fields["total"] == 100
    again = [p for p in made.make(window(), 2) if p.measurement == "diskprobe_latency_bucket"
             and p.tags["le"] == "+Inf" and p.tags["op"] == "read"]  # fmt: skip
    assert again[0].fields["total"] == 200  # since start
    fio = [p for p in points if p.measurement == "diskprobe_process_latency"]
    assert fio[0].tags["process"] == "fio" and fio[0].fields["wait_sec"] == pytest.approx(0.12)


def test_the_prometheus_histogram_passes_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool is not installed (apt-get install -y prometheus)")
    serializer = PrometheusSerializer()
    serializer.serialize(maker().make(window(), 1))
    text = serializer.serialize(maker().make(window(), 2))
    done = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                          capture_output=True, check=False)  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    buckets = [line for line in text.splitlines()
               if line.startswith("diskprobe_latency_seconds_bucket") and 'op="read"' in line]
    counts = [int(line.rsplit(" ", 1)[1]) for line in buckets]
    assert counts == sorted(counts) and counts[0] == 0  # the empty bound below the data too
    assert buckets[-1].split("{")[1].split("}")[0].endswith('le="+Inf"')
    assert le_text(0.0025) == "0.0025" and le_text(1.0) == "1"


def test_processes_past_the_cap_are_dropped_and_counted() -> None:
    dump = Dump()
    for index in range(10):
        key = (0, 7 << 20, "R", f"p{index}")
        dump.proc_counts[key], dump.proc_sums[key] = 2, 1000 * (index + 1)
    assert dump.cap_processes(4) == 12
    assert sorted(key[3] for key in dump.proc_counts) == ["p6", "p7", "p8", "p9"]
    assert sum(dump.proc_sums.values()) == 1000 * (7 + 8 + 9 + 10)


def _dump(completed: int, held: int) -> Dump:
    """A dump whose @all says `completed` and whose every map holds `held` requests."""
    dump = Dump(completed=completed)
    dump.hist[(7 << 20, "R", 40)] = held
    dump.proc_counts[(0, 7 << 20, "R", "fio")] = held
    dump.cgroups[(1, 7 << 20, "R", 40)] = held
    return dump


def test_a_request_completing_between_the_prints_is_not_counted_as_dropped() -> None:
    """@all is printed before the maps: a request completing in between is in this dump's
    maps and the next one's @all. Nothing was lost; a map at its cap loses what it loses."""
    drops = DropCount()
    assert [drops.take(_dump(10, 11)), drops.take(_dump(11, 10))] == [0, 0]
    assert [drops.take(_dump(10, 11)), drops.take(_dump(20, 16))] == [0, 3]  # 1 late, 3 lost
    assert drops.take(_dump(5, 5)) == 0 and drops.reported == 3
