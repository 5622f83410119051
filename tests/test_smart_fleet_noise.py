"""The SMART verdict's noise budget, measured on 320 real drives: the fleet sample
(tests/fixtures/fleet-sample/, `smartctl -x` reports drawn at random from linuxhw/EnterpriseDrive:
134 HDD, 106 SATA SSD, 80 NVMe) read by the real SmartCollector in one run, through the fake
smartctl posing as an old text-only smartctl (one `--all` per drive).

A drive is clean, from its emitted values alone (tests/fleet_sample.py, Drive.defects): no
reallocated, reported-uncorrectable, pending or offline-uncorrectable count, no attribute
FAILING_NOW, no NVMe critical warning or media errors, SSD life left above 10 %, no SCSI grown
defects. At most 2 % of the clean drives may warn or fail; every drive with pending or offline
uncorrectable sectors, an NVMe critical warning or media errors must. The figures are printed
(`pytest -s`) and written to the test's tmp dir. And every failing-* golden capture, JSON and
text, still warns or fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diskprobe.smart.devices import DriveSpec
from fleet_sample import (
    FLEET,
    PROVENANCE,
    FleetRun,
    fleet_reports,
    fleet_specs,
    media_of,
    noise_report,
    run_fleet,
)
from smart_golden import case_id, corpus_root, expected_calls, golden_cases, run_golden_case
from smart_harness import call_device

from helpers import smart_verdict

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = pytest.mark.xdist_group("test_smart_fleet_noise")

NOISE_BUDGET_PERCENT = 2  # clean drives that may warn or fail, at most
NOT_OK = ("warn", "fail")
NVME_VALUES = ("critical_warning", "media_errors")  # every NVMe read must carry them
SPECS = fleet_specs(fleet_reports())
FAILING_CASES = [case for case in golden_cases() if case.name.startswith("failing-")]


# -- the copy ---------------------------------------------------------------------------------


def test_provenance_names_every_report_once() -> None:
    rows = PROVENANCE.read_text(encoding="utf-8").splitlines()
    assert rows[0].split("\t")[:2] == ["file", "source_repo"], "no MANIFEST header"
    named = sorted(row.split("\t")[0] for row in rows[1:])
    assert named == [f"fleet-sample/{report.name}" for report in fleet_reports()]
    assert {row.split("\t")[4] for row in rows[1:]} == {"CC-BY-4.0"}


def test_fleet_copy_is_the_corpus() -> None:
    corpus = corpus_root()
    sample = corpus / "fleet-sample"
    names = sorted(path.name for path in sample.iterdir())
    assert [report.name for report in fleet_reports()] == names
    differ = [name for name in names if (FLEET / name).read_bytes() != (sample / name).read_bytes()]
    assert not differ, f"tests/fixtures/fleet-sample differs from the corpus in {differ}"
    manifest = (corpus / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    rows = manifest[:1] + [row for row in manifest[1:] if row.startswith("fleet-sample/")]
    assert PROVENANCE.read_text(encoding="utf-8") == "".join(rows)


# -- one collector run over the fleet ---------------------------------------------------------


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> FleetRun:
    return run_fleet(tmp_path_factory.mktemp("fleet"), SPECS)


@pytest.mark.slow
def test_one_smartctl_read_per_drive(fleet: FleetRun) -> None:
    """One `--all` text read per drive (no --json: an old smartctl), plus the --version."""
    reads: dict[str, list[list[str]]] = {}
    others = []
    for argv in fleet.calls:
        device = call_device(argv)
        if device is None:
            others.append(argv)
        else:
            reads.setdefault(device, []).append(argv)
    assert others == [["--version"]]
    want = {str(DriveSpec.parse(spec)): spec for spec in SPECS}
    assert sorted(reads) == sorted(want)
    wrong = {
        device: argvs
        for device, argvs in reads.items()
        if argvs != [["--all", "-n", "standby", *DriveSpec.parse(want[device]).smartctl_args()]]
    }
    assert not wrong, f"drives not read exactly once as `--all` text: {wrong}"


@pytest.mark.slow
def test_every_drive_is_read(fleet: FleetRun) -> None:
    """Each report gives one point with a verdict, of the protocol and media its file name
    says; every NVMe point carries the values its cleanness is judged on."""
    assert fleet.errors == 0
    assert len(fleet.drives) == len(SPECS)
    bad = {}
    for tag, drive in fleet.drives.items():
        media = media_of(FLEET / drive.report)
        kind = {"protocol": "nvme" if media == "nvme" else "ata", "media": media}
        got = {name: drive.tags.get(name) for name in kind}
        nvme_values = [n for n in NVME_VALUES if n in drive.fields] if media == "nvme" else []
        if drive.points != 1 or drive.verdict not in ("ok", *NOT_OK):
            bad[tag] = f"{drive.report}: {drive.points} points, verdict {drive.verdict}"
        elif got != kind or nvme_values != list(NVME_VALUES if media == "nvme" else ()):
            bad[tag] = f"{drive.report}: {got}, NVMe values {nvme_values}; want {kind}"
    assert not bad, f"drives not read as expected: {bad}"


@pytest.mark.slow
def test_clean_drives_stay_within_the_noise_budget(fleet: FleetRun, tmp_path: Path) -> None:
    report = noise_report(fleet)
    written = tmp_path / "fleet-noise.txt"
    written.write_text(report, encoding="utf-8")
    print(f"\n{report}(written to {written})")
    clean = [drive for drive in fleet.drives.values() if not drive.defects()]
    noisy = [drive for drive in clean if drive.verdict in NOT_OK]
    clean_count, noisy_count = len(clean), len(noisy)
    assert clean_count >= len(fleet.drives) // 2, "most of a random fleet sample is clean"
    listed = "\n".join(f"  {d.report} ({d.spec}): {d.verdict} {d.reasons}" for d in noisy)
    assert 100 * noisy_count <= NOISE_BUDGET_PERCENT * clean_count, (
        f"{noisy_count} of {clean_count} clean drives warn or fail "
        f"({100 * noisy_count / clean_count:.1f} %, budget {NOISE_BUDGET_PERCENT} %):\n{listed}"
    )


@pytest.mark.slow
def test_drives_with_unreadable_data_are_flagged(fleet: FleetRun) -> None:
    flagged = [drive for drive in fleet.drives.values() if drive.must_flag()]
    assert flagged, "the sample has drives with pending sectors: the check must see them"
    missed = [
        f"  {d.report}: {', '.join(d.must_flag())} but verdict {d.verdict}"
        for d in flagged
        if d.verdict not in NOT_OK
    ]
    assert not missed, "drives with unreadable data called ok:\n" + "\n".join(missed)


# -- the failing-* golden captures ------------------------------------------------------------


@pytest.mark.parametrize("case", FAILING_CASES, ids=[case_id(c) for c in FAILING_CASES])
def test_failing_capture_is_not_ok(case: Path, tmp_path: Path) -> None:
    """JSON cases on the fake's default smartctl 7.3, text cases on their own `version`."""
    run = run_golden_case(case, tmp_path)
    assert run.calls == expected_calls(case)  # JSON or text, as the case's smartctl speaks
    verdict, reasons = smart_verdict(run.collection.metrics)
    assert verdict in NOT_OK, f"{case_id(case)}: verdict {verdict} {reasons}"
