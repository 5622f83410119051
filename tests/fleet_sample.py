"""The fleet sample (tests/fixtures/fleet-sample/): 320 `smartctl -x` reports drawn at random
from linuxhw/EnterpriseDrive, read in one run of the real SmartCollector through the fake
smartctl posing as an old, text-only smartctl; and which drives are "clean", judged from the
emitted values alone, never from the verdict. Used by tests/test_smart_fleet_noise.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from diskprobe.schema.smart import SMART, SMART_ATTR
from diskprobe.smart.devices import DriveSpec
from kernel_diskstats import sd_name
from smart_golden import collect_once
from smart_harness import TESTS

from lineproto import Value, parse_lines

FLEET = TESTS / "fixtures" / "fleet-sample"
PROVENANCE = FLEET / "PROVENANCE.tsv"
ABOUT = ("PROVENANCE.tsv", "README.md")  # the folder's own files, not corpus reports
# The golden text cases' `version` (smartctl 6.6's banner): older than 7.0, so the collector
# asks for no JSON and reads `--all` text, as on an old text-only smartctl.
TEXT_VERSION = (
    "smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0-8-amd64] (local build)\n"
    "Copyright (C) 2002-16, Bruce Allen, Christian Franke, www.smartmontools.org\n"
)
# The defects: any of these counts above 0 makes a drive not clean.
DEFECT_COUNTS = (
    "reallocated_sectors",
    "reported_uncorrectable",
    "pending_sectors",
    "offline_uncorrectable",
    "media_errors",
    "grown_defects",
)
LIFE_LEFT_MIN = 10  # ssd_life_left_percent must be above this for a clean drive
# Defects no verdict may call ok (the must-flag list).
MUST_FLAG = ("pending_sectors", "offline_uncorrectable", "critical_warning", "media_errors")


def fleet_reports() -> list[Path]:
    """The copied reports, by file name ("000-hdd-hgst-huh721010ale600.txt")."""
    return sorted(p for p in FLEET.iterdir() if p.is_file() and p.name not in ABOUT)


def media_of(report: Path) -> str:
    """hdd, ssd or nvme: the sample's file names say it ("135-nvme-dell-ent-....txt")."""
    return report.name.split("-")[1]


def fleet_specs(reports: list[Path]) -> dict[str, Path]:
    """A unique drive spec per report: "/dev/sdX -d sat" for ATA, "/dev/nvmeN" for NVMe."""
    specs: dict[str, Path] = {}
    disks = nvmes = 0
    for report in reports:
        if media_of(report) == "nvme":
            specs[f"/dev/nvme{nvmes}"], nvmes = report, nvmes + 1
        else:
            specs[f"/dev/{sd_name(disks)} -d sat"], disks = report, disks + 1
    return specs


def install_fleet(root: Path, specs: dict[str, Path]) -> None:
    """One fake-smartctl case folder per report, and the old smartctl's `version`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "version").write_text(TEXT_VERSION, encoding="utf-8")
    for number, (spec, report) in enumerate(specs.items()):
        case = root / f"{number:03d}-{DriveSpec.parse(spec).tag}"
        case.mkdir()
        (case / "device").write_text(spec + "\n", encoding="utf-8")
        (case / "response.txt").write_bytes(report.read_bytes())


@dataclass
class Drive:
    """One report's drive as the collector emitted it."""

    spec: str
    report: str  # the file name in FLEET
    tags: dict[str, str] = field(default_factory=dict)  # of its diskprobe_smart point
    fields: dict[str, Value] = field(default_factory=dict)
    failing_now: list[str] = field(default_factory=list)  # attributes with FAILING_NOW
    points: int = 0  # diskprobe_smart points with its device tag (one expected)

    @property
    def verdict(self) -> str:
        return str(self.fields.get("verdict", "none"))

    @property
    def reasons(self) -> str:
        return str(self.fields.get("verdict_reasons", ""))

    def count(self, name: str) -> int:
        value = self.fields.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def defects(self) -> list[str]:
        """Why the drive is not clean as the issue defines it ([] for a clean drive)."""
        found = [f"{name}={self.count(name)}" for name in DEFECT_COUNTS if self.count(name) > 0]
        if self.count("critical_warning") != 0:
            found.append(f"critical_warning={self.count('critical_warning')}")
        life = self.fields.get("ssd_life_left_percent")
        if isinstance(life, int) and life <= LIFE_LEFT_MIN:
            found.append(f"ssd_life_left_percent={life}")
        return found + [f"failing_now={name}" for name in self.failing_now]

    def must_flag(self) -> list[str]:
        """The defects no verdict may call ok: pending, offline uncorrectable, NVMe ones."""
        wanted = [n for n in MUST_FLAG if n != "critical_warning" and self.count(n) > 0]
        if self.count("critical_warning") != 0:
            wanted.append("critical_warning")
        return [f"{name}={self.count(name)}" for name in wanted]


@dataclass
class FleetRun:
    drives: dict[str, Drive] = field(repr=False)  # by device tag ("sda", "nvme0")
    calls: list[list[str]] = field(repr=False)  # every argv the fake smartctl got
    errors: int  # the collection's error count
    seconds: float  # the collect's wall time


def run_fleet(workdir: Path, specs: dict[str, Path]) -> FleetRun:
    """Every drive in ONE blocking read cycle of the real collector, drives configured
    explicitly (a spec without -d, "/dev/nvme0", is no scan's output)."""
    root = workdir / "fake"
    install_fleet(root, specs)
    run = collect_once(root, workdir, list(specs))
    points = parse_lines(run.text)
    drives = {DriveSpec.parse(s).tag: Drive(s, r.name) for s, r in specs.items()}
    for point in points:
        drive = drives[point.tags["device"]]  # a KeyError: a point for no drive of ours
        if point.measurement == SMART.name:
            drive.tags, drive.fields = point.tags, point.fields
            drive.points += 1
        elif point.measurement == SMART_ATTR.name and point.fields.get("when_failed") == (
            "FAILING_NOW"
        ):
            drive.failing_now.append(point.tags["name"])
    return FleetRun(drives, run.calls, run.collection.errors, run.seconds)


def noise_report(run: FleetRun) -> str:
    """The figures for the closing note: clean drives, those the verdict still flags (with
    its reasons), and the rest by defect."""
    drives = list(run.drives.values())
    clean = [d for d in drives if not d.defects()]
    noisy = [d for d in clean if d.verdict in ("warn", "fail")]
    rate = 100.0 * len(noisy) / len(clean) if clean else 0.0
    lines = [
        f"fleet sample: {len(drives)} drives read in {run.seconds:.1f} s",
        f"clean: {len(clean)}; clean but warn/fail: {len(noisy)} ({rate:.1f} %, budget 2 %)",
    ]
    lines += [f"  {d.report} {d.verdict}: {d.reasons}" for d in noisy]
    damaged = [d for d in drives if d.defects()]
    lines.append(f"not clean: {len(damaged)}, by verdict: {tally(d.verdict for d in damaged)}")
    kinds: dict[str, list[Drive]] = {}
    for drive in damaged:
        for defect in drive.defects():
            kinds.setdefault(defect.split("=")[0], []).append(drive)
    for kind, having in sorted(kinds.items()):
        lines.append(f"  {kind}: {len(having)} drives, {tally(d.verdict for d in having)}")
    passed = [d for d in damaged if d.verdict == "ok"]
    lines += [f"  ok despite {', '.join(d.defects())}: {d.report}" for d in passed]
    return "\n".join(lines) + "\n"


def tally(verdicts: Iterable[str]) -> str:
    """How many drives got each verdict: "fail 3, ok 1, warn 12"."""
    counts: dict[str, int] = {}
    for verdict in verdicts:
        counts[verdict] = counts.get(verdict, 0) + 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
