"""Real /proc/diskstats files of every kernel format, read the way production reads them.

IoCollector.collect() has its own loop over the file (read_diskstats_text, then
parse_diskstats_parts on each line it does not skip), so these cases run the collector on a
fixture HOST_PROC (fixtures copied from the corpus) with `counters = true`: the raw counters
of each device come back as fields on the first collect(), and are put back in the kernel's
order here. tests/test_fuzz_parsers.py fuzzes the same path with broken real files.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.io import IoCollector
from diskprobe.compute.iostat import COUNTER_FIELDS
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.metric import FieldValue, Metric
from diskprobe.roots import HostRoots
from diskprobe.sources.diskstats import (
    DISCARD_SECTORS,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    READS,
    WEIGHTED_MS,
)

from helpers import FIXTURES


def _collector(proc: Path, log: Logger | None = None) -> IoCollector:
    """Every device, its raw counters as fields; no /sys nor udev (no tags to read)."""
    roots = HostRoots(proc=str(proc), sys=str(proc / "no-sys"), run=str(proc / "no-run"))
    config = IoConfig(exclude=[], counters=True, device_tags=[])
    return IoCollector(config, CollectorContext(roots=roots, log=log or Logger(io.StringIO())))


def _kernel_counters(fields: dict[str, FieldValue]) -> tuple[int, ...]:
    """The `counters = true` fields back in /proc/diskstats order (bytes back to sectors)."""
    by_index = {
        index: int(fields[name]) // scale for name, index, scale in COUNTER_FIELDS if name in fields
    }
    by_index[IN_FLIGHT] = int(fields["in_flight"])
    return tuple(by_index[index] for index in range(len(by_index)))


def _counters(metrics: list[Metric]) -> dict[str, tuple[int, ...]]:
    return {metric.tags["device"]: _kernel_counters(metric.fields) for metric in metrics}


def _read(env: str) -> dict[str, tuple[int, ...]]:
    return _counters(_collector(FIXTURES / env / "proc").collect().metrics)


def _write(proc: Path, text: str) -> Path:
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "diskstats").write_bytes(text.encode("utf-8", "surrogatepass"))
    return proc


def test_kernel_before_4_18_has_eleven_counters() -> None:
    # procfs fixture, e.g. "   8       0 sda 25354637 34367663 ... 9653880 82621804" (14 fields)
    stats = _read("procfs_mixed")
    assert stats["sda"] == (
        25354637,
        34367663,
        1003346126,
        18492372,
        28444756,
        11134226,
        505697032,
        63877960,
        0,
        9653880,
        82621804,
    )
    assert len(stats["nvme0n1p2"]) == 11


def test_kernel_4_18_adds_discards_and_5_5_adds_flushes_in_one_file() -> None:
    stats = _read("procfs_mixed")
    assert len(stats["sdb"]) == 15 and stats["sdb"][DISCARD_SECTORS] == 1925173784
    assert len(stats["sdc"]) == 17
    assert stats["sdc"][FLUSHES] == 127 and stats["sdc"][FLUSH_MS] == 182


def test_sysstat_odd_seventeen_field_line_keeps_whole_groups_only() -> None:
    # "  65      32 sds 386 416 8554 100 727 820 8746 3902 0 762 7902 0 0 0": 3 + 14 fields,
    # an incomplete discard group, so it is read as a pre-4.18 line.
    stats = _read("sysstat_root1")
    assert len(stats["sds"]) == 11 and stats["sds"][WEIGHTED_MS] == 7902
    assert len(stats["sdq"]) == 15 and stats["sdq"][DISCARD_SECTORS] == 362610
    assert len(stats) == 22


def test_sysstat_twenty_field_line() -> None:
    stats = _read("sysstat_root4")
    assert sum(len(c) == 17 for c in stats.values()) == 1
    assert sum(len(c) == 15 for c in stats.values()) == 20


def test_device_names_with_slash_cciss() -> None:
    stats = _read("sysstat_root6_cciss")
    assert "cciss/c0d0" in stats and "cciss/c0d0p1" in stats
    assert len(stats["cciss/c0d0"]) == 11


def test_node_exporter_fixture_counts_by_format() -> None:
    stats = _read("node_exporter_mixed")
    sizes = sorted(len(c) for c in stats.values())
    assert sizes.count(11) == 46 and sizes.count(15) == 3 and sizes.count(17) == 2


def test_future_kernel_extra_fields_are_ignored(tmp_path: Path) -> None:
    line = "   8 0 sdz " + " ".join(str(n) for n in range(1, 22))  # 21 stats
    stats = _counters(_collector(_write(tmp_path / "proc", line + "\n")).collect().metrics)
    assert len(stats["sdz"]) == 17 and stats["sdz"][READS] == 1


def test_old_partition_lines_and_garbage_are_skipped_with_one_debug_line(tmp_path: Path) -> None:
    text = (
        "   3    1 hda1 35486 38030 38030 38030\n"  # 2.6 partition format: 7 fields
        "   8    0 sda 1 2 3 4 5 6 7 8 0 10 11\n"
        "   8   16 sdb x 2 3 4 5 6 7 8 0 10 11\n"
        "   8   32 sdc -1 2 3 4 5 6 7 8 0 10 11\n"
    )
    stream = io.StringIO()
    collector = _collector(_write(tmp_path / "proc", text), Logger(stream, debug=True))
    assert [m.tags["device"] for m in collector.collect().metrics] == ["sda"]
    collector.collect()  # the same bad lines again: not logged twice
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and all(line.startswith("D! ") for line in lines)
    assert "hda1" in lines[0] and "sdb" in lines[1]


@pytest.fixture(scope="module")
def proc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("diskstats") / "proc"


def _collect_twice(proc: Path, text: str) -> list[Metric]:
    """A file's first collect() (counters only) and its second (the unchanged-line path)."""
    collector = _collector(_write(proc, text), Logger(io.StringIO(), debug=True))
    first = collector.collect().metrics
    collector.collect()
    return first


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(proc: Path, text: str) -> None:
    for counters in _counters(_collect_twice(proc, text)).values():
        assert len(counters) in (11, 15, 17)
        assert min(counters) >= 0


numbers = st.integers(min_value=-5, max_value=2**70).map(str)
tokens = st.one_of(numbers, st.sampled_from(["sda", "x", "", "-", "1e3", "0x10", "\t"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(tokens, max_size=24).map(" ".join), max_size=20))
def test_diskstats_shaped_noise_never_raises(proc: Path, lines: list[str]) -> None:
    _collect_twice(proc, "\n".join(lines))
