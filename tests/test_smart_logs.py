"""Self-test log, ATA error log count and operating temperature limit, on real captures: the
golden cases (tests/golden/smart-*) and the fleet reports copied to tests/fixtures/smart-logs
(see its PROVENANCE.tsv). Each expectation quotes the capture's line it was checked against.
"""

from __future__ import annotations

import json
import re
from typing import Optional

import pytest

from diskprobe.smart import json_parser, text_parser
from diskprobe.smart.model import DriveHealth
from smart_golden import corpus_root
from smart_harness import GOLDEN_JSON, GOLDEN_TEXT

from helpers import FIXTURES

LOGS = FIXTURES / "smart-logs"
STATUSES = (None, "passed", "failed", "aborted", "in_progress", "none")


def read(source: str) -> DriveHealth:
    """ "fleet/076-..." (tests/fixtures/smart-logs), "text/<case>" or "json/<case>" (golden)."""
    kind, name = source.split("/", 1)
    if kind == "json":
        data = json_parser.load((GOLDEN_JSON / name / "response.json").read_text("utf-8"))
        return json_parser.parse(data, "sda")
    path = LOGS / name if kind == "fleet" else GOLDEN_TEXT / name / "response.txt"
    return text_parser.parse(path.read_bytes().decode("utf-8", "replace"), "sda")


def self_tests(health: DriveHealth) -> tuple[Optional[str], Optional[int], Optional[int]]:
    return (health.self_test_last_status, health.self_test_last_hours,
            health.self_test_failed_count)  # fmt: skip


def test_fixtures_are_the_corpus_files_their_provenance_names() -> None:
    rows = [line.split("\t") for line in (LOGS / "PROVENANCE.tsv").read_text().splitlines()[1:]]
    assert sorted(row[0] for row in rows) == sorted(
        path.name for path in LOGS.iterdir() if path.name != "PROVENANCE.tsv"
    )
    corpus = corpus_root()
    for name, corpus_file, *_ in rows:
        assert (LOGS / name).read_bytes() == (corpus / corpus_file).read_bytes(), name


# (status, hours, failed tests) of the most recent test; the capture's line that says so.
SELF_TESTS = {
    # "# 1  Short offline       Completed without error       00%     31198         -"
    "fleet/076-hdd-seagate-st8000nm0055-1rm112.txt": ("passed", 31198, 0),
    # "# 1  Short offline       Completed: read failure       90%     29168         13194104"
    "fleet/103-hdd-wdc-wd40efrx-68wt0n0.txt": ("failed", 29168, 2),
    # "# 1  Extended offline    Self-test routine in progress 90%     48945         -"
    "fleet/232-ssd-intel-ssdsc2cw240a3.txt": ("in_progress", 48945, 0),
    "fleet/077-hdd-seagate-st8000nm0055-1rm112.txt": ("none", None, 0),  # "No self-tests have.."
    "text/failing-ata-hdd-hitachi-hds721010cla632-passed": ("aborted", 16, 0),  # "Aborted by host"
    "text/failing-ata-ssd-intel-ssdsc2bw240a4": ("aborted", 40474, 0),  # "Interrupted (host.."
    "text/ata-hdd-oos12000g": ("in_progress", 252, 0),  # --all: the standard log
    "text/ata-ssd-atp-af32gsaia-crc4": ("passed", 120, 0),  # a "Warning: ..." before the table
    "text/ata-ssd-innodisk-s42-3ie3": (None, None, None),  # "SMART Self-test Log not supported"
    "text/ata-hdd-hgst-hdn724040ale640-brief": (None, None, None),  # --format=brief: no log
    "text/nvme-toshiba-kbg30zmv256g-b": ("passed", 8754, 0),  # " 0   Extended  Completed wi.."
    # "Self-test status: Extended self-test in progress"; "Aborted: Self-test command" rows
    "text/nvme-samsung-980-pro-1tb-windows": ("in_progress", None, 0),
    "text/nvme-twsc-tsc3an1t0": ("none", None, 0),  # "No Self-tests Logged"
    "text/failing-nvme-scy-smm5-passed-media": (None, None, None),  # "Read Self-test Log failed"
    "text/scsi-ssd-samsung-mzilt7t6hala": (None, None, None),  # SCSI's log: deliberately unread
    # {"status": {"value": 0, "passed": true}, "lifetime_hours": 42}, then three "Completed:
    # read failure" (one at 65375: LifeTime wraps at 65536)
    "json/failing-usb-jmicron-hitachi-hds721050dle630": ("passed", 42, 3),
    # {"status": {"value": 25, "string": "Aborted by host"}} has no "passed"
    "json/failing-ata-hdd-megaraid-wd4000fyyx-disk1": ("aborted", 35990, 0),
    "json/ata-ssd-samsung-860-evo-500gb-full": ("passed", 14417, 0),  # the extended log
    "json/ata-hdd-wdc-wd181kryz": ("none", None, 0),  # "standard": {"count": 0}
    "json/ata-ssd-samsung-840-crc108": ("none", None, 0),  # "extended": {"count": 0}
    "json/nvme-sabrent-rocket-4-1tb": ("none", None, 0),  # no "table", no test running
    "json/ata-hdd-hgst-hus724020ale640": (None, None, None),  # --log=error: no self-test log
    "json/nvme-samsung-970-evo-plus-250gb": (None, None, None),
    "json/scsi-redacted-st100000000-extended": (None, None, None),  # scsi_self_test_0
}


@pytest.mark.parametrize("source", sorted(SELF_TESTS))
def test_self_test_log(source: str) -> None:
    assert self_tests(read(source)) == SELF_TESTS[source]


def test_failed_tests_are_the_ones_smartctl_counts() -> None:
    """smartctl's own error_count_total (failures, outdated ones included) for every table."""
    checked = 0
    for case in sorted(GOLDEN_JSON.iterdir()):
        text = (case / "response.json").read_text("utf-8")
        logs = json.loads(text).get("ata_smart_self_test_log") or {}
        log = logs.get("extended") or logs.get("standard") or {}
        if log.get("table"):
            health = json_parser.parse(json_parser.load(text), "sda")
            assert health.self_test_failed_count == log["error_count_total"], case.name
            checked += 1
    assert checked == 5


ERROR_COUNTS = {
    "fleet/093-hdd-toshiba-mg05aca800e.txt": 3,  # "Device Error Count: 3"
    "text/failing-ata-hdd-hitachi-hds721010cla632-passed": 67,  # "... 67 (device log contai.."
    "fleet/076-hdd-seagate-st8000nm0055-1rm112.txt": 0,  # extended log: "No Errors Logged"
    "text/ata-hdd-oos12000g": 0,  # --all: "SMART Error Log Version: 1", "No Errors Logged"
    "text/ata-ssd-atp-af32gsaia-crc4": None,  # "ATA Error Count: 0 (possibly also invalid)"
    "fleet/232-ssd-intel-ssdsc2cw240a3.txt": None,  # the output has no error log
    "text/nvme-twsc-tsc3an1t0": None,  # NVMe's "Error Information" says "No Errors Logged" too
    "json/ata-hdd-hgst-hus724020ale640": 12,  # "summary": {"count": 12, "logged_count": 5}
    "json/failing-usb-jmicron-hitachi-hds721050dle630": 56,
    "json/ata-ssd-samsung-840-crc108": 0,  # "extended": {"count": 0}
    "json/nvme-samsung-970-evo-plus-250gb": None,
}


@pytest.mark.parametrize("source", sorted(ERROR_COUNTS))
def test_error_log_count(source: str) -> None:
    assert read(source).error_log_count == ERROR_COUNTS[source]


def test_summary_error_count_line() -> None:
    """No --all capture has errors: oos12000g's, with ataprint.cpp's line for 12 errors."""
    text = (GOLDEN_TEXT / "ata-hdd-oos12000g" / "response.txt").read_text("utf-8")
    line = "ATA Error Count: 12 (device log contains only the most recent five errors)"
    assert "\nNo Errors Logged\n" in text
    health = text_parser.parse(text.replace("\nNo Errors Logged\n", f"\n{line}\n", 1), "sda")
    assert health.error_log_count == 12


# The operating limit: device statistics, SCT status, SCT "Temperature Limit"; not the SCT
# "recommended" maximum (the old source, which said 40 for 077 and 60 for 103).
OPERATING_LIMITS = {
    "fleet/076-hdd-seagate-st8000nm0055-1rm112.txt": 60,  # limits "0/ 0"; devstat "1   60  ---"
    "fleet/077-hdd-seagate-st8000nm0055-1rm112.txt": 60,  # recommended 10/40, limit 5/60, 60
    "text/failing-ata-hdd-seagate-st8000nm0055": 60,
    "fleet/103-hdd-wdc-wd40efrx-68wt0n0.txt": 85,  # no devstat; recommended 0/60, limit -41/85
    "fleet/232-ssd-intel-ssdsc2cw240a3.txt": None,  # "0/ 0" both, no devstat: no limit
    "text/failing-ata-hdd-hp-mb2000gcehk": 60,  # "Specified Max Operating Temperature:  60"
    "text/failing-ata-hdd-samsung-hd103si": 77,  # "-4/72" recommended, "-9/77" limit
    "json/ata-ssd-samsung-860-evo-500gb-full": 70,  # devstat {"name": "Specified Max...", 70}
    "json/ata-ssd-samsung-840-crc108": 70,  # ata_sct_temperature_history limit_max 70
    "json/scsi-hp-mas3735nc": 65,  # SCSI: "drive_trip" as before
}


@pytest.mark.parametrize("source", sorted(OPERATING_LIMITS))
def test_operating_temperature_limit(source: str) -> None:
    assert read(source).temperature_warning_c == OPERATING_LIMITS[source]


def test_json_recommended_maximum_is_no_limit() -> None:
    """The 860 EVO's JSON without its devstat and SCT status limits, its recommended maximum
    lowered as the ST8000NM0055's: the "Temperature Limit" stands; zeroed, no limit."""
    data = json_parser.load((GOLDEN_JSON / "ata-ssd-samsung-860-evo-500gb-full" /
                             "response.json").read_text("utf-8"))  # fmt: skip
    del data["ata_device_statistics"], data["ata_sct_status"]["temperature"]["op_limit_max"]
    for key, value, limit in (("op_limit_max", 40, 70), ("limit_max", 0, None)):
        data["ata_sct_temperature_history"]["temperature"][key] = data["temperature"][key] = value
        assert json_parser.parse(data, "sda").temperature_warning_c == limit


def test_text_and_json_agree_on_the_logs() -> None:
    """The WUH721816 captured both ways: empty self-test log, no errors."""
    for kind in ("text", "json"):
        health = read(f"{kind}/ata-hdd-wdc-wuh721816ale6l4-windows")
        assert (*self_tests(health), health.error_log_count) == ("none", None, 0, 0)


_FIRST_ROW = re.compile(r"^(?:# 1  | ?0   \S)", re.MULTILINE)  # ATA, NVMe
_EMPTY = re.compile(r"^(?:No self-tests have been logged|No Self-tests Logged)", re.MULTILINE)
_ERRORS = re.compile(r"Error Log Version:.*\n(?:Warning.*\n)?(No Errors Logged|\w+ Error Count:)")


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN_TEXT.iterdir() if p.is_dir()))
def test_every_golden_text_log_is_read(case: str) -> None:
    """A capture with a self-test table or an empty log, or an error count, yields it."""
    text = (GOLDEN_TEXT / case / "response.txt").read_bytes().decode("utf-8", "replace")
    health = text_parser.parse(text, "sda")
    assert health.self_test_last_status in STATUSES
    if health.protocol != "scsi" and (_FIRST_ROW.search(text) or _EMPTY.search(text)):
        assert health.self_test_failed_count is not None
        assert health.self_test_last_status is not None
    errors = _ERRORS.search(text)
    if errors and health.protocol == "ata" and "possibly also invalid" not in text:
        assert health.error_log_count is not None


HOSTILE_ROWS = (
    "# 1  Short offline       Completed without error       00%     " + "9" * 60 + "         -",
    "# 1  Short offline       Completed wit",
    "# 1  Short offline",
    "#" + "9" * 100_000,
    "# 1  " + " " * 50_000 + "00%  5  -",
    "# 1  Short offline       Unknown status (0x9)          00%     77         -",
)


@pytest.mark.parametrize("row", HOSTILE_ROWS, ids=range(len(HOSTILE_ROWS)))
def test_hostile_self_test_rows(row: str) -> None:
    text = (LOGS / "076-hdd-seagate-st8000nm0055-1rm112.txt").read_text("utf-8")
    damaged = text.replace("# 1  Short offline       Completed without error       00%     "
                           "31198         -", row, 1)  # fmt: skip
    health = text_parser.parse(damaged, "sda")
    assert health.self_test_last_status is None
    assert health.self_test_last_hours in (None, 77)
    assert health.self_test_failed_count == 0  # the other 18 rows still read, none failed


HOSTILE_TEXTS = (
    "SMART Extended Comprehensive Error Log Version: 1\nDevice Error Count: " + "9" * 60,
    "SMART Error Log Version: 1\nATA Error Count:\n",
    "Self-test Log (NVMe Log 0x06)\nSelf-test status: No self-test in progress\n"
    " 0   Short             Completed without error   " + "9" * 50 + "   -  -  -  -  -",
    "SMART Self-test log structure revision number 1",
    "Min/Max Temperature Limit:           -40/99999 Celsius",
)


@pytest.mark.parametrize("tail", HOSTILE_TEXTS, ids=range(len(HOSTILE_TEXTS)))
def test_hostile_log_sections(tail: str) -> None:
    model = "Model Number: X\n" if "NVMe" in tail else "Device Model: X\n"
    health = text_parser.parse(f"{model}\n{tail}", "sda")
    assert health.error_log_count is None and health.temperature_warning_c is None
    assert health.self_test_last_status in (None, "none") and health.self_test_last_hours is None


HOSTILE_JSON = (  # (device.protocol, the rest of a document), loaded as smartctl's JSON
    ("ATA", '"ata_smart_self_test_log": {"standard": {"table": [null, 5, {"status": "x"}]}}'),
    ("ATA", '"ata_smart_self_test_log": {"extended": {"count": "x", "table": {}}, "standard": []}'),
    ("ATA", '"ata_smart_self_test_log": {"standard": {"table": [{"status": {"value": 99999}, '
            '"lifetime_hours": -5}]}}'),
    ("ATA", '"ata_smart_error_log": {"summary": {"count": -1}, "extended": {"count": [1]}}'),
    ("NVMe", '"nvme_self_test_log": {"table": [null, "x", {"self_test_result": {"value": "x"}, '
             '"power_on_hours": 1e300}], "current_self_test_operation": {"value": NaN}}'),
    ("ATA", '"ata_device_statistics": {"pages": [{"table": [{"name": "Specified Maximum '
            'Operating Temperature", "value": 1000000000000000000000000000000}]}]}'),
)  # fmt: skip


@pytest.mark.parametrize(("protocol", "rest"), HOSTILE_JSON, ids=range(len(HOSTILE_JSON)))
def test_hostile_json_logs(protocol: str, rest: str) -> None:
    text = f'{{"device": {{"protocol": "{protocol}"}}, {rest}}}'
    health = json_parser.parse(json_parser.load(text), "sda")
    assert health.self_test_last_status in STATUSES and health.temperature_warning_c is None
    assert health.self_test_last_hours is None or 0 <= health.self_test_last_hours < 10**40
    assert health.error_log_count is None
