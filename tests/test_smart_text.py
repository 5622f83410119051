"""The smartctl TEXT path on the corpus, beyond the golden cases (tests/test_smart_golden.py
runs tests/golden/smart-text with the other golden tree): every file of the corpus's
smartctl-text is in the repo, as a golden case or a copy in tests/fixtures/smartctl-text (see
its PROVENANCE.tsv); the scans among them parse; the text and JSON paths agree on the drives
captured both ways.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from diskprobe.smart import json_parser, text_parser
from diskprobe.smart.devices import parse_scan
from smart_golden import TEXT_FIXTURES, case_id, corpus_root, golden_cases, text_fixture_files
from smart_harness import GOLDEN_JSON, GOLDEN_TEXT

from helpers import FIXTURES

CASES = [case for case in golden_cases() if case.parent == GOLDEN_TEXT]


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


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_corpus_text_file_is_accounted_for() -> None:
    corpus = corpus_root()
    sources = _sources()
    copies = {_digest(corpus / source) for source in sources}
    unaccounted = []
    for path in sorted(p for p in (corpus / "smartctl-text").rglob("*") if p.is_file()):
        relative = str(path.relative_to(corpus))
        if relative in sources or _digest(path) in copies:
            continue  # a golden case, or byte-identical to one (the USB T7 in two folders)
        assert (FIXTURES / relative).is_file(), f"{relative}: no copy in {TEXT_FIXTURES}"
        if _is_scan(path) or path.suffix == ".json" or _NOT_A_READ.search(relative):
            continue  # scans: test_scans_parse; JSON: test_text_and_json_agree; probes: sweep
        if _stub_target(path, corpus / "smartctl-text") is not None:
            continue  # a git-symlink stub of a capture that is a case (scan folders)
        unaccounted.append(relative)
    assert not unaccounted


def test_fixture_copies_are_the_corpus_files_and_have_provenance() -> None:
    rows = (TEXT_FIXTURES / "PROVENANCE.tsv").read_text(encoding="utf-8").splitlines()[1:]
    listed = {row.split("\t")[0]: row.split("\t")[1] for row in rows}
    assert set(listed) == {str(p.relative_to(FIXTURES)) for p in text_fixture_files()}
    corpus = corpus_root()
    for fixture, source in listed.items():
        assert (FIXTURES / fixture).read_bytes() == (corpus / source).read_bytes(), fixture


def _is_scan(path: Path) -> bool:
    return path.name == "_--scan-open" or (path.name.startswith("scan-") and path.is_file())


def _stub_target(path: Path, tree: Path) -> Path | None:
    """py-SMART keeps some captures as git symlinks: a one-line file naming the target,
    looked up in `tree` (the corpus's smartctl-text, or the copies of it)."""
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if "\n" in text or not text.startswith(("../", "_")):
        return None
    parts = Path(text).parts
    if len(parts) == 1:
        target = path.parent / parts[0]
        return target if target.is_file() else None
    folders = list(tree.glob(f"*__pysmart-{parts[-2]}"))
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
    scans = [path for path in text_fixture_files() if _is_scan(path)]
    assert {p.name if p.name.startswith("scan-") else p.parent.name for p in scans} == set(SCANS)
    for path in scans:
        source = _stub_target(path, TEXT_FIXTURES) or path
        specs = parse_scan(source.read_bytes().decode("utf-8", errors="replace"))
        name = path.name if path.name.startswith("scan-") else path.parent.name
        assert [str(spec) for spec in specs] == SCANS[name], path


# -- the text path against the JSON path ------------------------------------------------------

# Drives captured both ways (same serial): the JSON about an hour after the text (Local Time
# 21:10 vs 22:35, 21:30 vs 22:36), so what moves with time moves.
AGREEMENT = {
    "ata-hdd-wdc-wuh721816ale6l4-windows": (
        GOLDEN_JSON / "ata-hdd-wdc-wuh721816ale6l4-windows",
        {"power_on_hours": (592, 593), "attribute 9": (592, 593)},
    ),
    "nvme-wd-black-sn770-500gb-windows": (
        GOLDEN_JSON / "nvme-wd-black-sn770-500gb-windows",
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
    json_case, moved = AGREEMENT[case]
    text = (GOLDEN_TEXT / case / "response.txt").read_bytes().decode("utf-8", "replace")
    from_text = text_parser.parse(text, "sda")
    data = json_parser.load((json_case / "response.json").read_text(encoding="utf-8"))
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
    for case, (json_case, _) in AGREEMENT.items():
        data = json.loads((json_case / "response.json").read_text(encoding="utf-8"))
        expected = (GOLDEN_TEXT / case / "expected.out").read_text(encoding="utf-8")
        assert f"serial={data['serial_number']}" in expected, (case, case_id(json_case))
