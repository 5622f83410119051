"""Golden SMART JSON cases: every drive capture in tests/golden/smart-json, read by the real
SmartCollector through the fake smartctl (a real process), gives its hand-reviewed expected.out.

See tests/golden/README.md. Where expected.out holds the reviewed correct value and today's
plugin emits something else, KNOWN_PLUGIN_BUGS names the exact line and fields; such a case is
reported as xfail, every other line still has to match, and an entry whose difference
disappears fails the test so the entry gets removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.reader import json_args
from smart_harness import (
    GOLDEN_JSON,
    GoldenRun,
    call_device,
    device_line,
    golden_by_key,
    golden_cases,
    golden_differences,
    run_golden_case,
)

from helpers import assert_schema, smart_verdict
from lineproto import parse_lines

CASES = golden_cases()

BUG_SCSI_REVISION = (
    "json_parser.parse reads firmware from firmware_version/revision only; smartctl >= 7.3 "
    "calls the SCSI one scsi_revision"
)
BUG_SEAGATE_1_7 = (
    "rawvalues.PACKED_LOW_BITS: Seagate 1/7 keep the error count in the high 16 bits "
    "(raw >> 32, smartctl's raw24/raw32 'errors/operations'); the low 32 bits count operations"
)
BUG_MEDIA_GUESS = (
    "json_parser.media_from_attributes says 'hdd' with no evidence at all (no rotation rate, "
    "no attributes): a failed or health-only read gets a made-up media tag"
)


@dataclass(frozen=True)
class KnownBug:
    line: str  # "diskprobe_smart" or "diskprobe_smart_attr id=7"
    differs: frozenset[str]  # exactly these differ: "field:firmware", "tag:media"
    bug: str


def _bug(line: str, bug: str, *differs: str) -> KnownBug:
    return KnownBug(line, frozenset(differs), bug)


def _seagate_1_7() -> tuple[KnownBug, ...]:
    return (
        _bug("diskprobe_smart_attr id=1", BUG_SEAGATE_1_7, "field:raw"),
        _bug("diskprobe_smart_attr id=7", BUG_SEAGATE_1_7, "field:raw"),
    )


_SCSI_FIRMWARE = (_bug("diskprobe_smart", BUG_SCSI_REVISION, "field:firmware"),)
_NO_MEDIA = (_bug("diskprobe_smart", BUG_MEDIA_GUESS, "tag:media"),)
KNOWN_PLUGIN_BUGS: dict[str, tuple[KnownBug, ...]] = {}

# failing-* drives, from the MANIFEST `what` column: the verdict and reasons it must include.
FAILING: dict[str, tuple[str, tuple[str, ...]]] = {
    # "Reported_Uncorrect=1"
    "failing-ata-hdd-hp-mb0500ebncr": ("warn", ("reported_uncorrectable=1",)),
    # "reallocated=387, realloc_events=9" (reallocation events have no rule of their own)
    "failing-ata-hdd-megaraid-wd4000fyyx-disk1": ("warn", ("reallocated_sectors=387",)),
    # "reallocated=1, Command_Timeout raw 17180131332 (packed 3x16-bit)": 4 | 4<<16 | 4<<32
    "failing-ata-hdd-seagate-st3000nm0033": (
        "warn",
        ("reallocated_sectors=1", "command_timeouts=4"),
    ),
    # "reallocated=1, Command_Timeout=1"
    "failing-ata-hdd-seagate-st3500418as-realloc1": (
        "warn",
        ("reallocated_sectors=1", "command_timeouts=1"),
    ),
    "failing-ata-hdd-seagate-st3500418as-realloc304": ("warn", ("reallocated_sectors=304",)),
    "failing-ata-ssd-intel-ssdsc2bb016t7-realloc1": ("warn", ("reallocated_sectors=1",)),
    "failing-ata-ssd-intel-ssdsc2kb240g7-realloc4": ("warn", ("reallocated_sectors=4",)),
    "failing-ata-ssd-kingston-skc400s371t-realloc1": ("warn", ("reallocated_sectors=1",)),
    # "media_errors=7 ... critical_warning=0, smart_status passed": media errors are lost data
    "failing-nvme-samsung-970-evo-500gb-media-errors": ("fail", ("media_errors=7",)),
    # "critical_warning=16 (0x10 volatile memory backup failed), smart_status FAILED"
    "failing-nvme-samsung-mzwll3t2hajq-critical-warning": (
        "fail",
        ("smart_overall=FAILED", "critical_warning=16"),
    ),
    # "grown defect list=260, read total_uncorrected_errors=1, write=535"
    "failing-scsi-seagate-st373453lc-grown260": (
        "fail",
        ("grown_defects=260", "read_uncorrected_errors=1", "write_uncorrected_errors=535"),
    ),
    # "scsi_grown_defect_list=56": below the fail limit of 100
    "failing-scsi-seagate-st4000nm0043-grown-defects": ("warn", ("grown_defects=56",)),
    # "smart_status FAILED, reallocated=1975 (attr5 when_failed=now), ..., pending=8"
    "failing-usb-jmicron-hitachi-hds721050dle630": (
        "fail",
        (
            "smart_overall=FAILED",
            "failing_now=Reallocated_Sector_Ct",
            "reallocated_sectors=1975",
            "pending_sectors=8",
        ),
    ),
}

# Drives not named failing-* whose verdict is legitimately not ok.
NOT_OK_BUT_HEALTHY_NAMED: dict[str, tuple[str, tuple[str, ...]]] = {
    # Seagate packs three 16-bit counters into Command_Timeout: raw 51540393996 is
    # 12 | 12<<16 | 12<<32, the low 16 bits say 12 timeouts, and any 188 count warns
    # (Backblaze's five). smart_status PASSED does not contradict that.
    "ata-hdd-seagate-st16000nm001g-exos-x16": ("warn", ("command_timeouts=12",)),
    # MANIFEST: "End-to-End_Error=1, Command_Timeout=29, UDMA_CRC=24 (degraded, passed)": the
    # timeouts and the end-to-end (data path) error warn; CRC errors are cabling, no rule.
    "ata-ssd-micron-5300-mtfddak1t9tds": (
        "warn",
        ("command_timeouts=29", "end_to_end_errors=1"),
    ),
}

# Cases that say nothing about health, so get no verdict at all (a point with what is known).
NO_VERDICT: dict[str, str] = {
    # The open failed (exit 2, no device object): a failed read, counted as an error.
    "error-windows-open-failed": "problem",
    # `smartctl --info` output only: identity and capacity, no health log.
    "nvme-kioxia-kcd61lul3t84-info-only": "no health data",
    # A Windows RST RAID volume seen as SCSI: no smart_status, no counters (temperature 0).
    "scsi-intel-raid1-volume-windows": "no health data",
}


class Runs:
    """Each case read once, on first use (a real smartctl process per case), then shared."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._runs: dict[str, GoldenRun] = {}

    def __getitem__(self, name: str) -> GoldenRun:
        if name not in self._runs:
            workdir = self._factory.mktemp(name)
            self._runs[name] = run_golden_case(GOLDEN_JSON / name, workdir)
        return self._runs[name]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory)


def test_every_corpus_drive_capture_has_a_case() -> None:
    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "smartctl-json"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} not present")
    drives = {p.stem for p in corpus.glob("*.json") if not p.name.startswith("scan-")}
    assert drives <= {case.name for case in CASES}
    assert len(CASES) >= 70


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_case(case: Path, runs: Runs) -> None:
    expected_file = case / "expected.out"
    assert expected_file.is_file(), (
        f"{case.name}: no expected.out; run tests/golden/regenerate.py {case.name}, review the "
        "lines against response.json, then write it with --write"
    )
    run = runs[case.name]
    expected = golden_by_key(parse_lines(expected_file.read_text(encoding="utf-8")))
    actual = golden_by_key(parse_lines(run.text))
    assert list(actual) == list(expected), f"{case.name}: lines differ\n{run.text}"
    known = {bug.line: bug for bug in KNOWN_PLUGIN_BUGS.get(case.name, ())}
    differing = {key: golden_differences(expected[key], actual[key]) for key in expected}
    differing = {key: names for key, names in differing.items() if names}
    unexpected = {
        key: sorted(names)
        for key, names in differing.items()
        if key not in known or names != known[key].differs
    }
    assert not unexpected, (
        f"{case.name}: output differs from the reviewed expected.out in {unexpected}\n"
        f"got:\n{run.text}"
    )
    fixed = sorted(line for line in known if line not in differing)
    assert not fixed, (
        f"{case.name}: {fixed} now match expected.out: the bug is fixed, remove the entry "
        "from KNOWN_PLUGIN_BUGS"
    )
    if differing:
        pytest.xfail("; ".join(sorted({known[key].bug for key in differing})))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_case_conforms_to_schema_with_one_json_call(case: Path, runs: Runs) -> None:
    run = runs[case.name]
    assert run.collection.metrics, "every drive gets a point, even a failed read"
    assert_schema(run.collection.metrics)
    # One smartctl process per drive and read, asking for everything in JSON.
    # One process per drive per read; the once-per-collector `--version` check aside.
    drive_calls = [argv for argv in run.calls if call_device(argv) is not None]
    assert drive_calls == [json_args(DriveSpec.parse(device_line(case)), "standby")]


def _verdict(run: GoldenRun) -> tuple[str | None, tuple[str, ...]]:
    return smart_verdict(run.collection.metrics)


@pytest.mark.parametrize("name", sorted(FAILING))
def test_failing_drives_warn_or_fail_for_the_right_reason(name: str, runs: Runs) -> None:
    status, reasons = _verdict(runs[name])
    want_status, want_reasons = FAILING[name]
    assert status == want_status, (name, status, reasons)
    assert set(want_reasons) <= set(reasons), (name, reasons)
    assert runs[name].collection.errors == 0


def test_every_failing_case_is_in_the_table() -> None:
    assert {case.name for case in CASES if case.name.startswith("failing-")} == set(FAILING)


@pytest.mark.parametrize(
    "case", [c for c in CASES if not c.name.startswith("failing-")], ids=lambda c: c.name
)
def test_healthy_drives_are_ok(case: Path, runs: Runs) -> None:
    run = runs[case.name]
    status, reasons = _verdict(run)
    if case.name in NO_VERDICT:
        assert status is None, (case.name, status)
        assert run.collection.errors == (1 if NO_VERDICT[case.name] == "problem" else 0)
        return
    assert run.collection.errors == 0
    if case.name in NOT_OK_BUT_HEALTHY_NAMED:
        want_status, want_reasons = NOT_OK_BUT_HEALTHY_NAMED[case.name]
        assert (status, reasons) == (want_status, want_reasons)
        return
    assert (status, reasons) == ("ok", ()), case.name
