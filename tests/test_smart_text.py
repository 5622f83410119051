"""The smartctl TEXT path on every text capture of the corpus.

Golden cases (tests/golden/smart-text, see its README): each drive capture of
../shared/corpus/smartctl-text read by the real SmartCollector through the fake smartctl posing
as smartctl 6.6, compared with its hand-reviewed expected.out. Where expected.out holds the
reviewed correct value and shared code (not the text path) emits something else,
KNOWN_PLUGIN_BUGS names the line and fields: the case is an xfail, every other line must still
match, and an entry whose difference disappears fails so that it gets removed.

Also: every corpus file of smartctl-text is accounted for; failing-* drives warn or fail for
the MANIFEST's reason and healthy ones are ok; the text and JSON paths agree on the drives
captured both ways; scans parse.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from diskprobe.smart import json_parser, text_parser
from diskprobe.smart.devices import DriveSpec, parse_scan
from smart_harness import golden_by_key, golden_differences
from smart_text_cases import GOLDEN_TEXT, TextRun, run_text_case, text_cases

from helpers import assert_schema, smart_verdict
from lineproto import parse_lines

CASES = text_cases()
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
TEXT_CORPUS = CORPUS / "smartctl-text"

BUG_LIFE_LEFT = (
    "json_parser.life_left_percent takes the normalized value of 169/173 whatever it is: "
    "Apple's 169 (Unknown_Apple_Attrib, Unknown_Attribute) reads 253, no percentage of life left"
)


@dataclass(frozen=True)
class KnownBug:
    line: str  # "diskprobe_smart" or "diskprobe_smart_attr id=7"
    differs: frozenset[str]  # exactly these differ: "field:ssd_life_left_percent", "tag:media"
    bug: str


_LIFE_LEFT = (
    KnownBug("diskprobe_smart", frozenset({"field:ssd_life_left_percent"}), BUG_LIFE_LEFT),
)
KNOWN_PLUGIN_BUGS: dict[str, tuple[KnownBug, ...]] = {}

_OVERALL = "smart_overall=FAILED"
# failing-* drives, from the MANIFEST `what` column: the verdict and reasons it must include.
FAILING: dict[str, tuple[str, tuple[str, ...]]] = {
    # "FAILED! due to attr 22 Helium_Level NOW; zero reallocated/pending"
    "failing-ata-hdd-hgst-huh728080aln600-helium": ("fail", (_OVERALL, "failing_now=Helium_Level")),
    # "health PASSED but reallocated=295, pending=1232, offline_unc=6059"
    "failing-ata-hdd-hgst-hus726t6tale6l4-passed": (
        "fail",
        ("pending_sectors=1232", "offline_uncorrectable=6059", "reallocated_sectors=295"),
    ),
    # "PASSED but reallocated raw '46 (0 39)', pending=29"
    "failing-ata-hdd-hitachi-hds721010cla632-passed": (
        "fail",
        ("pending_sectors=29", "reallocated_sectors=46"),
    ),
    # "FAILED!, reallocated=1137 (5 NOW, 2 NOW), pending=10096, offline_uncorrectable=1273"
    "failing-ata-hdd-hitachi-hds721010dle630": (
        "fail",
        (
            _OVERALL,
            "failing_now=Throughput_Performance",
            "failing_now=Reallocated_Sector_Ct",
            "pending_sectors=10096",
            "offline_uncorrectable=1273",
            "reallocated_sectors=1137",
        ),
    ),
    # "FAILED!, reallocated=4095 and Reallocated_Event=4095 both NOW (saturated counters)"
    "failing-ata-hdd-hp-mb2000gcehk": (
        "fail",
        (
            _OVERALL,
            "failing_now=Reallocated_Sector_Ct",
            "failing_now=Reallocated_Event_Count",
            "reallocated_sectors=4095",
        ),
    ),
    # "FAILED! (attr 1 NOW), Reported_Uncorrect=383642, pending=190"
    "failing-ata-hdd-samsung-hd103si": (
        "fail",
        (
            _OVERALL,
            "failing_now=Raw_Read_Error_Rate",
            "reported_uncorrectable=383642",
            "pending_sectors=190",
        ),
    ),
    # "FAILED!, reallocated raw '65136 (0 5)' VALUE 001 < THRESH 010 NOW,
    # Reported_Uncorrect=65535"
    "failing-ata-hdd-seagate-st10000vn0004": (
        "fail",
        (
            _OVERALL,
            "failing_now=Reallocated_Sector_Ct",
            "reported_uncorrectable=65535",
            "reallocated_sectors=65136",
        ),
    ),
    # "Reported_Uncorrect=8 ... Command_Timeout raw '0 0 1'": 1 in the low 16 bits; PASSED
    "failing-ata-hdd-seagate-st2000dm006-brief": (
        "warn",
        ("reported_uncorrectable=8", "command_timeouts=1"),
    ),
    # "FAILED!, reallocated=41520, Reported_Uncorrect=65535, pending=24016, offline_unc=24016
    # (1 NOW, 5 NOW)"
    "failing-ata-hdd-seagate-st4000vn008": (
        "fail",
        (
            _OVERALL,
            "failing_now=Raw_Read_Error_Rate",
            "failing_now=Reallocated_Sector_Ct",
            "reported_uncorrectable=65535",
            "pending_sectors=24016",
            "offline_uncorrectable=24016",
            "reallocated_sectors=41520",
        ),
    ),
    # "FAILED! via attr 1 NOW, reallocated=3824, pending=32, Command_Timeout raw '8 8 42548'"
    "failing-ata-hdd-seagate-st8000nm0055": (
        "fail",
        (
            _OVERALL,
            "failing_now=Raw_Read_Error_Rate",
            "pending_sectors=32",
            "reallocated_sectors=3824",
            "command_timeouts=42548",
        ),
    ),
    # "FAILED!, reallocated=2063 NOW, attr 1 'Past', pending=382, offline_unc=338"
    "failing-ata-hdd-wdc-wd4000fyyz": (
        "fail",
        (
            _OVERALL,
            "failing_now=Reallocated_Sector_Ct",
            "pending_sectors=382",
            "offline_uncorrectable=338",
            "failed_in_past=Raw_Read_Error_Rate",
            "reallocated_sectors=2063",
        ),
    ),
    # "PASSED but reallocated=17, pending=17, offline_unc=49"
    "failing-ata-ssd-apacer-as340-960gb-passed": (
        "fail",
        ("pending_sectors=17", "offline_uncorrectable=49", "reallocated_sectors=17"),
    ),
    # "FAILED! by wear (202 Percent_Lifetime_Remain NOW), zero reallocated"
    "failing-ata-ssd-crucial-ct500mx200ssd1-wearout": (
        "fail",
        (_OVERALL, "failing_now=Percent_Lifetime_Remain", "ssd_life_left_percent=0"),
    ),
    # "FAILED!, attrs 170 Available_Reservd_Space and 232 NOW, reallocated=38" (both are named
    # Available_Reservd_Space in this drive's table: one reason, deduplicated by judge())
    "failing-ata-ssd-intel-ssdsc2bw240a4": (
        "fail",
        (_OVERALL, "failing_now=Available_Reservd_Space", "reallocated_sectors=38"),
    ),
    # "FAILED! by 184 End-to-End_Error=10 NOW, reallocated=8"
    "failing-ata-ssd-intel-ssdsc2kb019t8-e2e": (
        "fail",
        (
            _OVERALL,
            "failing_now=End-to-End_Error_Count",
            "end_to_end_errors=10",
            "reallocated_sectors=8",
        ),
    ),
    # "FAILED!, reallocated=368 NOW, 196 NOW, 231 SSD_Life_Left NOW" (5 is Retired_Block_Count)
    "failing-ata-ssd-kingston-sv300s37a240g": (
        "fail",
        (
            _OVERALL,
            "failing_now=Retired_Block_Count",
            "failing_now=Reallocated_Event_Count",
            "failing_now=SSD_Life_Left",
            "reallocated_sectors=368",
            "ssd_life_left_percent=1",
        ),
    ),
    # "reallocated=1, Used_Rsvd_Blk=1, Runtime_Bad_Block=1, Wear_Leveling VALUE 001" (PASSED)
    "failing-ata-ssd-samsung-850-pro-256gb-freebsd": (
        "warn",
        ("reallocated_sectors=1", "ssd_life_left_percent=1"),
    ),
    # "FAILED!, reallocated=754, Reported_Uncorrect=3787, attrs 5/179/180/183 NOW"
    "failing-ata-ssd-samsung-mz7lm240hmhq": (
        "fail",
        (
            _OVERALL,
            "failing_now=Reallocated_Sector_Ct",
            "failing_now=Used_Rsvd_Blk_Cnt_Tot",
            "failing_now=Unused_Rsvd_Blk_Cnt_Tot",
            "failing_now=Runtime_Bad_Block",
            "reported_uncorrectable=3787",
            "reallocated_sectors=754",
        ),
    ),
    # "FAILED! from SMART RETURN STATUS with NO attribute failing ... reallocated=104,
    # Reported_Uncorrect=104, offline_unc=110"
    "failing-ata-ssd-supermicro-128gb-return-status": (
        "fail",
        (
            _OVERALL,
            "reported_uncorrectable=104",
            "offline_uncorrectable=110",
            "reallocated_sectors=104",
        ),
    ),
    # "FAILED!, Critical Warning 0x04 (reliability degraded), Media and Data Integrity Errors
    # '2,137'"
    "failing-nvme-dell-pm1725-critical-0x04": (
        "fail",
        (_OVERALL, "critical_warning=4", "media_errors=2137"),
    ),
    # "FAILED!, Critical Warning 0x08 (media read-only)"
    "failing-nvme-intel-ssdpedmw400g4-readonly": ("fail", (_OVERALL, "critical_warning=8")),
    # "FAILED!, Critical Warning 0x0d (spare + reliability + read-only)"
    "failing-nvme-samsung-970-evo-plus-250gb-0x0d": (
        "fail",
        (_OVERALL, "critical_warning=13", "available_spare_percent=1"),
    ),
    # "health PASSED, Critical Warning 0x00 but Media and Data Integrity Errors '2,700,560'"
    "failing-nvme-samsung-mzpll1t6hehp-passed-media": ("fail", ("media_errors=2700560",)),
    # "PASSED, media errors=14, Error log entries=152"
    "failing-nvme-scy-smm5-passed-media": ("fail", ("media_errors=14",)),
    # "FAILED!, Critical Warning 0x01 (available spare below threshold)"
    "failing-nvme-toshiba-kxg50znv512g-spare": (
        "fail",
        (_OVERALL, "critical_warning=1", "available_spare_percent=1"),
    ),
    # "Critical Warning 0x09 yet PASSED, Percentage Used 16%"
    "failing-nvme-transcend-ts128gmte850": ("fail", ("critical_warning=9",)),
    # "FAILED!, Critical Warning 0x09 ..., Available Spare 0% (threshold 10%), media errors
    # '75,664'"
    "failing-nvme-transcend-ts512gmte220s-spare0": (
        "fail",
        (_OVERALL, "critical_warning=9", "available_spare_percent=0", "media_errors=75664"),
    ),
    # "FAILED!, Critical Warning 0x04, media errors 384"
    "failing-nvme-wdc-cl-sn720-media384": (
        "fail",
        (_OVERALL, "critical_warning=4", "media_errors=384"),
    ),
}

# Drives not named failing-* whose verdict is legitimately not ok.
NOT_OK_BUT_HEALTHY_NAMED: dict[str, tuple[str, tuple[str, ...]]] = {
    # MANIFEST: 'attr 190 FAIL column "Past"': the drive says its airflow temperature once
    # reached its threshold (45 (Min/Max 43/57 #2689), threshold 045); every In_the_past warns.
    "ata-ssd-apple-sm256e-darwin-brief": ("warn", ("failed_in_past=Airflow_Temperature_Cel",)),
    # MANIFEST: "Command_Timeout=1" (partly synthetic upstream); any 188 count warns (Backblaze).
    "usb-ata-liteon-lct-512l9s-PARTLY-SYNTHETIC": ("warn", ("command_timeouts=1",)),
}

# Cases that say nothing about health, so get no verdict at all (a point with what is known).
NO_VERDICT: dict[str, str] = {
    # "Device is in STANDBY mode, exit(2)": power_mode and exit_status only.
    "standby-unraid-exit2": "standby",
    # RAID virtual disks: "SMART support is: Unavailable", identity but no health.
    "scsi-avago-mr9361-16i-virtual-disk-smart-unavailable": "no health data",
    "scsi-intel-rs3dc080-virtual-disk-smart-unavailable": "no health data",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TextRun]:
    """Each case read once by the collector (three fake smartctl processes per case)."""
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        for case in CASES:
            workdir = tmp_path_factory.mktemp(case.name)
            patch.setenv("FAKE_SMARTCTL_DIR", str(workdir / "fake"))
            out[case.name] = run_text_case(case, workdir)
    return out


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_text_case(case: Path, runs: dict[str, TextRun]) -> None:
    run = runs[case.name]
    expected = golden_by_key(parse_lines((case / "expected.out").read_text(encoding="utf-8")))
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
    assert not unexpected, f"{case.name}: differs from expected.out in {unexpected}\n{run.text}"
    fixed = sorted(line for line in known if line not in differing)
    assert not fixed, (
        f"{case.name}: {fixed} match expected.out now: remove the KNOWN_PLUGIN_BUGS entry"
    )
    if differing:
        pytest.xfail("; ".join(sorted({known[key].bug for key in differing})))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_one_smartctl_call_per_drive_with_the_spec_as_configured(
    case: Path, runs: dict[str, TextRun]
) -> None:
    """smartctl 6.6 answers no JSON: --version once, the scan, then one `--all` read; none of
    pySMART's own probes (-d test, -l sataphy/sasphy/background) ever reaches smartctl."""
    run = runs[case.name]
    spec = DriveSpec.parse((case / "device").read_text(encoding="utf-8"))
    read = ["--all", "-n", "standby", *spec.smartctl_args()]
    assert run.calls == [["--version"], ["--scan-open"], read]
    assert run.collection.metrics, "every drive gets a point"
    assert_schema(run.collection.metrics)
    assert "Traceback" not in run.log


def _verdict(run: TextRun) -> tuple[str | None, tuple[str, ...]]:
    return smart_verdict(run.collection.metrics)


@pytest.mark.parametrize("name", sorted(FAILING))
def test_failing_drives_warn_or_fail_for_the_right_reason(
    name: str, runs: dict[str, TextRun]
) -> None:
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
def test_healthy_drives_are_ok(case: Path, runs: dict[str, TextRun]) -> None:
    run = runs[case.name]
    status, reasons = _verdict(run)
    assert run.collection.errors == 0
    if case.name in NO_VERDICT:
        assert status is None, (case.name, status)
        return
    if case.name in NOT_OK_BUT_HEALTHY_NAMED:
        assert (status, reasons) == NOT_OK_BUT_HEALTHY_NAMED[case.name]
        return
    assert (status, reasons) == ("ok", ()), case.name


# -- the corpus, file by file ----------------------------------------------------------------

_COPY = re.compile(r"^# response\.txt: byte-for-byte copy of \.\./shared/corpus/(\S+?);?( |$)")
_STUB = re.compile(r"the capture \.\./shared/corpus/(\S+) is a git symlink")
# Captures of other smartctl calls than `--all` (pySMART's probes, logs) and non-captures.
_NOT_A_READ = re.compile(r"/(_-d_test_|_-d_scsi_-l_(background|sasphy)_|device\.json|notes\.txt)")


def _sources() -> dict[str, str]:
    """Corpus file -> the case it became (its copy, or the git-symlink stub resolved to it)."""
    out = {}
    for case in CASES:
        provenance = (case / "PROVENANCE").read_text(encoding="utf-8")
        match = _COPY.match(provenance.splitlines()[0])
        assert match, f"{case.name}: PROVENANCE does not name its corpus file"
        out[match.group(1)] = case.name
        stub = _STUB.search(provenance)
        if stub:
            out[stub.group(1)] = case.name
    return out


def _corpus_files() -> list[Path]:
    if not TEXT_CORPUS.is_dir():
        pytest.skip(f"{TEXT_CORPUS} not present")
    return sorted(p for p in TEXT_CORPUS.rglob("*") if p.is_file())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_corpus_text_file_is_accounted_for() -> None:
    sources = _sources()
    copies = {_digest(CORPUS / source) for source in sources}
    unaccounted = []
    for path in _corpus_files():
        relative = str(path.relative_to(CORPUS))
        if relative in sources or _digest(path) in copies:
            continue  # a golden case, or byte-identical to one (the USB T7 in two folders)
        if _is_scan(path) or path.suffix == ".json" or _NOT_A_READ.search(relative):
            continue  # scans: test_scans_parse; JSON: test_text_and_json_agree; probes: sweep
        if _stub_target(path) is not None:
            continue  # a git-symlink stub of a capture that is a case (scan folders)
        unaccounted.append(relative)
    assert not unaccounted


def _is_scan(path: Path) -> bool:
    return path.name == "_--scan-open" or (path.name.startswith("scan-") and path.is_file())


def _stub_target(path: Path) -> Path | None:
    """py-SMART keeps some captures as git symlinks: a one-line file naming the target."""
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if "\n" in text or not text.startswith(("../", "_")):
        return None
    parts = Path(text).parts
    if len(parts) == 1:
        target = path.parent / parts[0]
        return target if target.is_file() else None
    folders = list(TEXT_CORPUS.glob(f"*__pysmart-{parts[-2]}"))
    return folders[0] / parts[-1] if folders and (folders[0] / parts[-1]).is_file() else None


SCANS = {
    "scan-telegraf-atacam.txt": ["/dev/ada0 -d atacam"],
    "scan-telegraf-nvme.txt": ["/dev/nvme0 -d nvme"],
    "nvme-kingston-sa2000m8500g-windows__pysmart-nvme_9_issue_72": ["/dev/sda -d nvme"],
    "nvme-netac-2tb-windows__pysmart-nvme_10_issue_73": [
        "/dev/sda -d nvme",
        "/dev/sdb -d nvme",
        "/dev/sdc -d sat",
        "/dev/sdd -d scsi",
        "/dev/sde -d scsi",
    ],
    "nvme-samsung-980-pro-1tb-windows__pysmart-nvme_win10_0_issue_64": ["/dev/sda -d nvme"],
    "nvme-wd-wds100t3x0c-windows__pysmart-nvme_win10_mingw32_0_issue_48": ["/dev/sda -d nvme"],
    "scan-pysmart-linux-01__pysmart-linux_01": ["/dev/nvme0 -d nvme"],
    "scan-pysmart-linux-multiple-devices__pysmart-linux_multiple_devices": [
        "/dev/nvme0 -d nvme",
        "/dev/nvme1 -d nvme",
        "/dev/bus/0 -d sat+megaraid,60",
    ],
    "scan-pysmart-linux-usb-nvme-asmedia__pysmart-linux_usb_nvme_asmedia_issue_97": [
        "/dev/sda -d sntasmedia"
    ],
    "scan-pysmart-macos-01__pysmart-mac_01": [
        "IOService:/AppleACPIPlatformExpert/PCI0@0/AppleACPIPCI/RP06@1C,5/IOPP/SSD0@0/AppleAHCI/"
        "PRT0@0/IOAHCIDevice@0/AppleAHCIDiskDriver/IOAHCIBlockStorageDevice -d ata"
    ],
    "scan-pysmart-macos-apple-silicon-nvme__pysmart-mac_02_issue_84": [
        "IOService:/AppleARMPE/arm-io@10F00000/AppleT811xIO/ans@77400000/AppleASCWrapV4/"
        "iop-ans-nub/RTBuddy(ANS2)/RTBuddyService/AppleANS3NVMeController/NS_01@1 -d nvme"
    ],
    # a git-symlink stub in the corpus; its target is the mingw32 folder's scan
    "scan-pysmart-windows-01__pysmart-win10_01": ["/dev/sda -d nvme"],
}


def test_scans_parse() -> None:
    scans = [path for path in _corpus_files() if _is_scan(path)]
    assert {p.name if p.name.startswith("scan-") else p.parent.name for p in scans} == set(SCANS)
    for path in scans:
        source = _stub_target(path) or path
        specs = parse_scan(source.read_bytes().decode("utf-8", errors="replace"))
        name = path.name if path.name.startswith("scan-") else path.parent.name
        assert [str(spec) for spec in specs] == SCANS[name], path


# -- the text path against the JSON path ------------------------------------------------------

# Drives captured both ways (same serial): the JSON about an hour after the text (Local Time
# 21:10 vs 22:35, 21:30 vs 22:36), so what moves with time moves.
AGREEMENT = {
    "ata-hdd-wdc-wuh721816ale6l4-windows": (
        "smartctl-json/ata-hdd-wdc-wuh721816ale6l4-windows.json",
        {"power_on_hours": (592, 593), "attribute 9": (592, 593)},
    ),
    "nvme-wd-black-sn770-500gb-windows": (
        "smartctl-json/nvme-wd-black-sn770-500gb-windows.json",
        {
            "power_on_hours": (669, 670),
            "host_read_commands": (22100461, 22105337),
            "host_write_commands": (34921069, 34938016),
            "data_read_bytes": (830699520000, 830903808000),
            "data_written_bytes": (1955862528000, 1956140032000),
            # smartctl 7.3's JSON has no nvme_composite_temperature_threshold; its text does
            # ("Warning  Comp. Temp. Threshold: 84 Celsius")
            "temperature_warning_c": (84, None),
        },
    ),
}


HEALTH_FIELDS = (
    "protocol", "media", "model", "serial", "firmware", "health_ok", "temperature_c",
    "temperature_warning_c", "power_on_hours", "power_cycles", "capacity_bytes",
)  # fmt: skip


@pytest.mark.parametrize("case", sorted(AGREEMENT))
def test_text_and_json_agree(case: str) -> None:
    json_file, moved = AGREEMENT[case]
    if not (CORPUS / json_file).is_file():
        pytest.skip(f"{CORPUS / json_file} not present")
    text = (GOLDEN_TEXT / case / "response.txt").read_bytes().decode("utf-8", "replace")
    from_text = text_parser.parse(text, "sda")
    data = json_parser.load((CORPUS / json_file).read_text(encoding="utf-8"))
    from_json = json_parser.parse(data, "sda")
    differences = {}
    for name in HEALTH_FIELDS:
        if getattr(from_text, name) != getattr(from_json, name):
            differences[name] = (getattr(from_text, name), getattr(from_json, name))
    for name in set(from_text.counters) | set(from_json.counters):
        pair = (from_text.counters.get(name), from_json.counters.get(name))
        if pair[0] != pair[1]:
            differences[name] = pair
    json_attributes = {a.id: a for a in from_json.attributes}
    assert [a.id for a in from_text.attributes] == list(json_attributes)
    for attribute in from_text.attributes:
        if attribute != json_attributes[attribute.id]:
            differences[f"attribute {attribute.id}"] = (
                attribute.raw,
                json_attributes[attribute.id].raw,
            )
    assert differences == moved
    assert (from_text.source, from_json.source) == ("text", "json")


def test_agreement_pairs_are_the_same_drive() -> None:
    for case, (json_file, _) in AGREEMENT.items():
        if not (CORPUS / json_file).is_file():
            pytest.skip(f"{CORPUS / json_file} not present")
        serial = json.loads((CORPUS / json_file).read_text(encoding="utf-8"))["serial_number"]
        assert f"serial={serial}" in (GOLDEN_TEXT / case / "expected.out").read_text()
