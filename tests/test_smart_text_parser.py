"""text_parser and text_path.read_text in process: raw values and numbers as smartctl prints
them, both attribute table formats, pySMART's part (one read, no probes, gaps only), failed
reads, and no exception out of a drive read for any corpus file, garbage or fuzzed text."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diskprobe.smart import text_parser, text_path
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.pysmart_adapter import PYSMART_CHECKED, RunnerSmartctl, capacity_bytes
from diskprobe.smart.rawvalues import attribute_raw
from diskprobe.smart.reader import DriveRead
from diskprobe.smart.runner import CommandRunner, ExecResult
from diskprobe.smart.text_path import (
    OneReadSmartctl,
    fill_from_pysmart,
    pysmart_device,
    read_text,
)
from smart_golden import smartctl_text_copies
from smart_harness import GOLDEN_TEXT

BANNER = "smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0] (local build)\n\n"


class FakeRunner(CommandRunner):
    """Answers every call with one canned result, and remembers the calls."""

    def __init__(self, stdout: str, exit_status: Optional[int] = 0, **result: Any) -> None:
        super().__init__("smartctl", timeout=5.0)
        self.result = ExecResult(stdout, result.pop("stderr", ""), exit_status, **result)
        self.calls: list[list[str]] = []

    def resolved(self) -> str:
        return "/usr/sbin/smartctl"

    def run(self, args: list[str]) -> ExecResult:
        self.calls.append(list(args))
        return self.result


def _read(text: str, spec: str = "/dev/sda -d sat", exit_status: Optional[int] = 0) -> DriveRead:
    return read_text(DriveSpec.parse(spec), FakeRunner(text, exit_status), "standby")


def _case(name: str) -> str:
    return (GOLDEN_TEXT / name / "response.txt").read_bytes().decode("utf-8", "replace")


# -- numbers and raw values ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234,567 [632 GB]", 1234567),
        ("16 829 004 [8,61 TB]", 16829004),  # Windows locale: space groups, comma decimals
        ("10\ufffd779", 10779),  # a non-UTF-8 group separator, replaced on decoding
        ("500\u00a0107\u00a0862\u00a0016", 500107862016),
        ("1.356", 1356),  # de_DE "Error Information Log Entries: 1.356"
        ("2\u2019888", 2888),
        ("47 Celsius", 47),
        ("100%", 100),
        ("0x0d", 13),
        ("0x00", 0),
        ("38 (Min/Max 20/45)", 38),
        ("", None),
        ("-", None),
        ("<not available>", None),
        (None, None),
    ],
)
def test_count(text: Optional[str], value: Optional[int]) -> None:
    assert text_parser.count(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500,107,862,016 bytes [500 GB]", 500107862016),
        ("240.057.409.536 bytes [240 GB]", 240057409536),
        ("256 060 514 304 bytes [256 GB]", 256060514304),
        ("1 000 204 886 016 [1,00 TB]", 1000204886016),  # NVMe: no "bytes"
        ("240\ufffd057\ufffd409\ufffd536 bytes [240 GB]", 240057409536),
        ("300,$00,000,000 bytes [300 GB]", None),  # UPSTREAM-CORRUPTED: no guess
        ("0", None),
        ("", None),
    ],
)
def test_capacity(text: str, value: Optional[int]) -> None:
    assert text_parser.capacity(text) == value


@pytest.mark.parametrize(
    ("attribute_id", "raw_string", "model", "raw"),
    [
        (194, "38 (Min/Max 20/45)", "WDC WD40EFRX", 38),
        (194, "45 (Min/Max 43/57 #2689)", "APPLE SSD SM256E", 45),
        (194, "41 (Min/Max -20/51)", "KINGSTON SV300S37A240G", 41),
        (5, "46 (0 39)", "HDS721010CLA632", 46),  # raw16(raw16): the count first
        (3, "621 (Average 619)", "HGST HDN724040ALE640", 621),
        (235, "0 0 0", "M.2 (S42) 3ME4", 0),
        (188, "0 0 1", "ST2000DM006-2DM164", 1),  # raw16 words high to low: 1 timeout
        (188, "8 8 42548", "ST8000NM0055-1RM112", 42548),
        (188, "1 0 0", "WDC WD40EFRX", 0),  # raw16 words: the count is the low word, any vendor
        (188, "655370", "ST10000VN0004-1ZD101", 10),  # 10 | 10<<16: low 16 bits
        (188, "8590065669", "MB2000GCEHK", 8590065669),  # HP OEM: not recognised as Seagate
        (1, "2765/13191816", "ST2000DM006-2DM164", 2765),  # errors/operations
        (1, "214360565", "ST10000VN0004-1ZD101", 0),  # Seagate: errors in the high 16 bits
        (1, "176373483", "OOS12000G", 176373483),  # Seagate-made, but the model does not say
        (229, "0x51769394de98", "InnoDisk", 0x51769394DE98),
        (9, "48216h+18m+14.400s", "KINGSTON SV300S37A240G", 48216),
        (240, "25597h+17m+05.460s", "ST2000DM006-2DM164", 25597),
        (1, "0/128781742", "KINGSTON SV300S37A240G", 0),
        (1, "", "x", None),
    ],
)
def test_attribute_raw(attribute_id: int, raw_string: str, model: str, raw: Optional[int]) -> None:
    """The text path reads raw values with rawvalues.attribute_raw, as the JSON path does."""
    assert attribute_raw(attribute_id, model, raw_string) == raw


# -- attribute tables -------------------------------------------------------------------------

CLASSIC = """\
ID# ATTRIBUTE_NAME          FLAG     VALUE WORST THRESH TYPE      UPDATED  WHEN_FAILED RAW_VALUE
  5 Reallocated_Sector_Ct   0x0033   001   001   010    Pre-fail  Always   FAILING_NOW 4095
  1 Raw_Read_Error_Rate     0x002f   100   001   051    Pre-fail  Always   In_the_past 0
169 Unknown Attribute       0x0000   094   000   000    Old_age   Offline      -       94
188 Command_Timeout         0x0032   100   100   ---    Old_age   Always       -       1
\t9 Power_On_Hours          0x0032   094   094   000    Old_age   Always       -       26732
"""
BRIEF = """\
ID# ATTRIBUTE_NAME          FLAGS    VALUE WORST THRESH FAIL RAW_VALUE
  5 Reallocated_Sector_Ct   PO--CK   001   001   010    NOW  4095
  1 Raw_Read_Error_Rate     POSR-K   100   001   051    Past 0
169 Unknown Attribute       ------   094   000   000    -    94
188 Command_Timeout         -O--CK   100   100   ---    -    1
\t9 Power_On_Hours          -O--CK+  094   094   000    -    26732
                            ||||||_ K auto-keep
"""


@pytest.mark.parametrize("table", [CLASSIC, BRIEF], ids=["classic", "brief"])
def test_both_attribute_table_formats(table: str) -> None:
    health = text_parser.parse("Device Model: X\n" + table, "sda")
    rows = [
        (a.id, a.name, a.value, a.worst, a.threshold, a.raw, a.prefailure, a.when_failed)
        for a in health.attributes
    ]
    assert rows == [
        (5, "Reallocated_Sector_Ct", 1, 1, 10, 4095, True, "FAILING_NOW"),
        (1, "Raw_Read_Error_Rate", 100, 1, 51, 0, True, "In_the_past"),
        (169, "Unknown Attribute", 94, 0, 0, 94, False, ""),
        (188, "Command_Timeout", 100, 100, 0, 1, False, ""),
        (9, "Power_On_Hours", 94, 94, 0, 26732, False, ""),
    ]
    assert health.counters == {"reallocated_sectors": 4095, "command_timeouts": 1}
    assert (health.protocol, health.power_on_hours, health.source) == ("ata", 26732, "text")


def test_a_table_without_its_header_is_no_table() -> None:
    rows = CLASSIC.split("\n", 1)[1]
    assert text_parser.parse("Device Model: X\n" + rows, "sda").attributes == []


# -- pySMART: one read, no probes, gaps only --------------------------------------------------

DEVICE_TYPES = (
    "", "sat", "ata", "scsi", "nvme", "megaraid,5", "sat+megaraid,0", "usbjmicron", "areca,3/1",
    "cciss,0", "3ware,2", "sntasmedia", "sat,12", "auto", "test",
)  # fmt: skip
OUTPUTS = {
    "ata-classic": "ata-hdd-hgst-hus724040ale640-megaraid",
    "ata-brief": "ata-hdd-hgst-hdn724040ale640-brief",
    "nvme": "nvme-samsung-970-evo-plus-500gb",
    "nvme-locale": "nvme-samsung-970-evo-1tb-windows-locale",
    "scsi": "scsi-hgst-hus726040al5210-megaraid",
}


# Measured on pySMART 1.4.3: a Device on its own Smartctl makes up to 8 calls per drive (-d test
# without an interface; -l sataphy/sasphy twice for ata, scsi and megaraid types, and --all
# again for scsi/megaraid; -l background for SCSI output) and rewrites the path ("/dev/" and
# "nvd" replaced anywhere). OneReadSmartctl answers them all from the one read.
@pytest.mark.parametrize("output", sorted(OUTPUTS))
@pytest.mark.parametrize("device_type", DEVICE_TYPES)
def test_one_smartctl_call_whatever_the_type(device_type: str, output: str) -> None:
    """pySMART's probes (-d test without an interface, -l sataphy/sasphy for ata, scsi and
    megaraid types, -l background for SCSI) and its own path rewriting never reach smartctl."""
    spec = DriveSpec("/dev/nvd0" if device_type == "nvme" else "/dev/sda", device_type)
    runner = FakeRunner(_case(OUTPUTS[output]))
    read = read_text(spec, runner, "standby")
    assert runner.calls == [["--all", "-n", "standby", *spec.smartctl_args()]]
    assert read.problem == ""
    assert read.health.source == "text"


# pySMART 1.4.3 also skips the first four output lines (model and serial of a capture without
# the banner), cuts serials at the first space, takes "Add. Product Id:" for the model, misses
# "Warning  Comp. Temperature Time" (two spaces) and int()s fixed columns of SCSI error-counter
# rows: so the text parse reads every field, and pySMART only fills gaps (below).
@pytest.mark.parametrize(
    ("output", "parsed"),
    [("ata-classic", True), ("ata-brief", False), ("nvme", True), ("nvme-locale", False),
     ("scsi", True)],
)  # fmt: skip
def test_where_pysmart_parses_and_where_it_raises(output: str, parsed: bool) -> None:
    """pySMART raises on brief flags (int('PO--CK', 16)) and on locale digit groups in NVMe
    counters; read_text catches that, and the text parse has every value anyway."""
    text = _case(OUTPUTS[output])
    spec = DriveSpec("/dev/sda", "sat")
    smartctl = OneReadSmartctl(spec, FakeRunner(text), "standby")
    protocol = text_parser.parse(text, "sda").protocol
    device = pysmart_device(spec, smartctl, protocol)
    assert (device is not None) == parsed
    if parsed:
        assert device.model and device.serial


class _Device:
    model = "From pySMART"
    serial = "PYSMART-SERIAL"
    firmware = "FW1"
    _capacity = 1000
    temperature = 41


def test_pysmart_fills_only_what_the_text_parse_lacks() -> None:
    empty = DriveHealth(device="sda")
    fill_from_pysmart(empty, _Device())
    assert (empty.model, empty.firmware, empty.capacity_bytes, empty.temperature_c) == (
        "From pySMART", "FW1", 1000, 41,
    )  # fmt: skip
    assert empty.serial == "", "serials never come from pySMART (masked ones would return)"
    full = DriveHealth(device="sda", model="M", firmware="F", capacity_bytes=5, temperature_c=0)
    fill_from_pysmart(full, _Device())
    assert (full.model, full.firmware, full.capacity_bytes, full.temperature_c) == ("M", "F", 5, 0)


def test_pysmart_parses_only_when_the_text_parse_left_a_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Complete drives skip pySMART (it costs more CPU than the text parse); the LITEON capture
    has no temperature attribute, so pySMART is asked, and what it has fills the gap."""
    asked: list[str] = []

    def fake_device(spec: DriveSpec, smartctl: OneReadSmartctl, protocol: str) -> _Device:
        asked.append(protocol)
        return _Device()

    monkeypatch.setattr(text_path, "pysmart_device", fake_device)
    complete = _read(_case("ata-hdd-hgst-hdn724040ale640-brief"))
    assert asked == [] and complete.health.temperature_c == 34
    gap = _read(_case("ata-ssd-liteon-lct-512l9s"), "/dev/sda -d ata")
    assert asked == ["ata"]
    assert (gap.health.temperature_c, gap.health.model) == (
        41,
        "LITEONIT LCT-512L9S-11 2.5 7mm 512GB",
    )
    assert gap.health.serial == "TW0HN71H5508549A1220"


class _Raising:
    @property
    def model(self) -> str:
        raise RuntimeError("pySMART property")


def test_pysmart_surprises_cost_nothing() -> None:
    health = DriveHealth(device="sda")
    fill_from_pysmart(health, None)
    fill_from_pysmart(health, _Raising())
    assert health == DriveHealth(device="sda")


# -- the pySMART internals pysmart_adapter relies on (the one module that touches them) --------


def test_pysmart_is_the_release_the_adapter_was_checked_on() -> None:
    import pySMART

    assert pySMART.__version__.startswith(PYSMART_CHECKED + "."), (
        f"pySMART {pySMART.__version__}: re-check smart/pysmart_adapter.py (Smartctl._exec, "
        "Device._capacity; test_pysmart_internals_we_rely_on), then update PYSMART_CHECKED"
    )


def test_pysmart_internals_we_rely_on() -> None:
    from pySMART import Device

    text = _case(OUTPUTS["ata-classic"])  # User Capacity: 4,000,787,030,016 bytes [4.00 TB]
    # Smartctl._exec: pySMART's public calls end in it, as [smartctl_path, *params].
    smartctl = RunnerSmartctl(FakeRunner(text), ["-n", "standby"])
    lines, status = smartctl.generic_call(["-d", "sat", "--all", "/dev/sda"])
    assert smartctl.calls == [["-d", "sat", "--all", "/dev/sda"]]
    assert (lines, status) == (text.splitlines(), 0)
    # Device._capacity: the exact byte count; the public size and capacity are not.
    spec = DriveSpec("/dev/sda", "sat")
    device = Device(
        "/dev/sda", interface="sat", smartctl=OneReadSmartctl(spec, FakeRunner(text), "standby")
    )
    assert capacity_bytes(device) == 4_000_787_030_016
    assert device.capacity == "4.00 TB"


# -- failed reads, standby -------------------------------------------------------------------


def test_standby_is_power_mode_and_nothing_else() -> None:
    read = _read(BANNER + "Device is in STANDBY mode, exit(2)\n", exit_status=2)
    assert read.problem == ""
    assert read.health.power_mode == "standby" and read.health.standby
    assert read.health.exit_status == 2
    assert (read.health.model, read.health.counters, read.health.health_ok) == ("", {}, None)


@pytest.mark.parametrize(
    ("stdout", "stderr", "status", "permission", "vanished"),
    [
        (BANNER + "Smartctl open device: /dev/sdz failed: No such device\n", "", 2, False, True),
        (BANNER + "Smartctl open device: /dev/sda failed: Permission denied\n", "", 2, True, False),
        ("", "sudo: a password is required\n", 1, True, False),
        (BANNER + "/dev/sda: Unknown USB bridge [0x152d:0x0578 (0x214)]\n"
         "Please specify device type with the -d option.\n", "", 1, False, False),
        ("", "", 0, False, False),  # nothing at all, yet exit 0
        (BANNER, "", 0, False, False),  # the banner only
    ],
)  # fmt: skip
def test_a_read_that_says_nothing_is_a_problem(
    stdout: str, stderr: str, status: int, permission: bool, vanished: bool
) -> None:
    runner = FakeRunner(stdout, status, stderr=stderr)
    read = read_text(DriveSpec("/dev/sda", "sat"), runner, "standby")
    assert read.problem
    assert (read.permission, read.vanished) == (permission, vanished)
    assert read.health.exit_status == status


def test_a_timeout_or_missing_binary_is_a_failure() -> None:
    timed_out = FakeRunner("smartctl 6.6", None, timed_out=True)
    read = read_text(DriveSpec("/dev/sda"), timed_out, "standby")
    assert read.problem.startswith("timed out after 5s") and read.health.exit_status == -1
    missing = FakeRunner("", None, error="smartctl: not found on PATH")
    assert read_text(DriveSpec("/dev/sda"), missing, "standby").problem == missing.result.error


def test_bits_2_and_up_still_parse() -> None:
    """Exit bit 2 (a SMART command failed), 3 (DISK FAILING), 6 (error log): read on."""
    read = _read(_case("failing-ata-hdd-hitachi-hds721010dle630"), exit_status=0b01001100)
    assert read.problem == "" and read.health.exit_status == 76
    assert read.health.health_ok is False and read.health.counters["pending_sectors"] == 10096


# -- nothing ever escapes a drive read -------------------------------------------------------


@pytest.mark.parametrize("status", [0, 2, 4, 8 | 64, 1])
def test_no_exception_for_any_corpus_file(status: int) -> None:
    """Every file of the corpus's smartctl-text, as the repo holds it (captures, -d test and -l
    outputs, scans, git-symlink stubs, py-SMART's device.json, the UPSTREAM-CORRUPTED and
    PARTLY-SYNTHETIC ones), decoded as the runner decodes, as an NVMe, SCSI and ATA drive."""
    copies = smartctl_text_copies()
    assert len(copies) >= 160, "the golden text responses and tests/fixtures/smartctl-text"
    for path in copies:
        text = path.read_bytes().decode("utf-8", errors="replace")
        for spec in ("/dev/sda -d sat", "/dev/nvme0 -d nvme", "/dev/sdb -d scsi", "/dev/sdc"):
            read = _read(text, spec, status)
            assert isinstance(read, DriveRead), path
            assert read.problem or read.health.source == "text", path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000), st.sampled_from([0, 1, 2, 4, None]))
def test_no_exception_for_arbitrary_text(text: str, status: Optional[int]) -> None:
    read = _read(text, exit_status=status)
    assert isinstance(read, DriveRead)


_SOURCES = [GOLDEN_TEXT / name / "response.txt" for name in sorted(set(OUTPUTS.values()))]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_no_exception_for_mangled_captures(data: st.DataObject) -> None:
    """Real captures cut, shuffled and spliced with junk: tables that end mid-row, labels
    without values, numbers that overflow, rows of the wrong format under a header."""
    source = data.draw(st.sampled_from(_SOURCES))
    lines = source.read_bytes().decode("utf-8", "replace").splitlines()
    picked = data.draw(st.lists(st.sampled_from(lines), max_size=len(lines)))
    junk = data.draw(st.lists(st.text(max_size=40), max_size=5))
    digits = data.draw(st.from_regex(r"[0-9 ,.x()/-]{0,40}", fullmatch=True))
    mangled = "\n".join(picked + junk + [line[:20] + digits for line in picked[:5]])
    cut = data.draw(st.integers(min_value=0, max_value=len(mangled)))
    for text in (mangled, mangled[:cut]):
        health = text_parser.parse(text, "sda")
        assert health.source == "text"
        assert isinstance(_read(text, "/dev/nvme0 -d nvme"), DriveRead)
