"""Parsing real /proc/diskstats files of every kernel format (fixtures copied from the corpus)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.diskstats import (
    DISCARD_SECTORS,
    FLUSH_MS,
    FLUSHES,
    READS,
    WEIGHTED_MS,
    parse_diskstats,
    parse_diskstats_line,
    read_diskstats,
)

from helpers import FIXTURES


def _read(env: str) -> dict[str, tuple[int, ...]]:
    stats = read_diskstats(HostRoots(proc=str(FIXTURES / env / "proc")))
    return {stat.name: stat.counters for stat in stats}


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


def test_future_kernel_extra_fields_are_ignored() -> None:
    line = "   8 0 sdz " + " ".join(str(n) for n in range(1, 22))  # 21 stats
    stat = parse_diskstats_line(line)
    assert stat is not None and len(stat.counters) == 17 and stat.counters[READS] == 1


def test_old_partition_lines_and_garbage_are_skipped_with_one_debug_line() -> None:
    text = (
        "   3    1 hda1 35486 38030 38030 38030\n"  # 2.6 partition format: 7 fields
        "   8    0 sda 1 2 3 4 5 6 7 8 0 10 11\n"
        "   8   16 sdb x 2 3 4 5 6 7 8 0 10 11\n"
        "   8   32 sdc -1 2 3 4 5 6 7 8 0 10 11\n"
    )
    stream = io.StringIO()
    log = Logger(stream, debug=True)
    stats = parse_diskstats(text, log)
    assert [s.name for s in stats] == ["sda"]
    parse_diskstats(text, log)  # the same bad lines again: not logged twice
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and all(line.startswith("D! ") for line in lines)
    assert "hda1" in lines[0] and "sdb" in lines[1]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    for stat in parse_diskstats(text, Logger(io.StringIO(), debug=True)):
        assert len(stat.counters) in (11, 15, 17)
        assert min(stat.counters) >= 0


numbers = st.integers(min_value=-5, max_value=2**70).map(str)
tokens = st.one_of(numbers, st.sampled_from(["sda", "x", "", "-", "1e3", "0x10", "\t"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(tokens, max_size=24).map(" ".join), max_size=20))
def test_diskstats_shaped_noise_never_raises(lines: list[str]) -> None:
    parse_diskstats("\n".join(lines))
