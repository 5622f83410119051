"""The logs in smartctl's text output, like json_logs: the self-test log (ATA, NVMe), the ATA
error log count and the ATA drive's operating temperature limit.

Each log is a section: its header line, then lines up to the first blank line (smartctl ends
every log with one). A section that says nothing readable leaves its fields None; a row that
does not parse is a row of unknown status, never a guess. A row is at most ~110 characters:
a line longer than MAX_ROW is a garbled row, so the (backtracking) row patterns never run on
a long line; the other patterns are bounded or anchored.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from diskprobe.smart.json_logs import Row, plausible_limit, store_self_tests
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.rawvalues import bounded_int

MAX_ROW = 200
_BLANK_LINE = re.compile(r"\n[ \t]*(?:\n|$)")
# -x prints the extended log, --all the standard one (-x falls back to it); same columns:
# "SMART Extended Self-test Log Version: 1 (1 sectors)"
# "SMART Self-test log structure revision number 1"
# "Num  Test_Description    Status                  Remaining  LifeTime(hours)  LBA_of_first_error"
# "# 1  Short offline       Completed without error       00%     31198         -"
# "# 2  Extended offline    Self-test routine in progress 90%     48945         -" (one space)
# "#10  Offline             Interrupted (host reset)      10%     19626         -"
# LifeTime is 16 bits and wraps on some drives (65530, then 4): kept as printed.
_ATA_SELF_TEST_HEADERS = (
    re.compile(r"^[ \t]*SMART Extended Self-test Log Version:.*$", re.MULTILINE),
    re.compile(r"^[ \t]*SMART Self-test log structure revision number.*$", re.MULTILINE),
)
_ATA_ROW = re.compile(
    r"\s*#\s*\d{1,4}\s+(?P<middle>\S.*?)\s+\d{1,3}%\s+(?P<hours>\d{1,20})\s+(?:-|\d{1,20})\s*$"
)
# smartmontools ataprint.cpp's status strings; "Completed: " is unknown/electrical/
# servo/seek/read failure and "handling damage??". "Unknown status (0x9)" is left unknown.
_ATA_STATUS_WORDS = (
    ("Completed without error", "passed"),
    ("Aborted by host", "aborted"),
    ("Interrupted (host reset)", "aborted"),
    ("Fatal or unknown error", "failed"),
    ("Completed: ", "failed"),
    ("Self-test routine in progress", "in_progress"),
)


class _Table(NamedTuple):
    start: str  # what a row, garbled or not, starts with
    row: re.Pattern[str]
    words: tuple[tuple[str, str], ...]  # status phrase -> status word, first found wins
    no_tests: str  # the empty log's message


_ATA_TABLE = _Table("#", _ATA_ROW, _ATA_STATUS_WORDS, "No self-tests have been logged.")
# smartctl 7.4 ("pre-7.4" builds have no Seg column; 7.5 adds ", NSID 0xffffffff"):
# "Self-test Log (NVMe Log 0x06)"
# "Self-test status: Extended self-test in progress (28% completed)"
# "Num  Test_Description  Status                  Power_on_Hours  Failing_LBA  NSID Seg SCT Code"
# " 0   Short             Completed without error          1380            -     -   -   -    -"
# (padding trimmed); the rows' index 0 is the most recent test.
_NVME_SELF_TEST_HEADER = re.compile(r"^[ \t]*Self-test Log \(NVMe Log 0x06\b.*$", re.MULTILINE)
_NVME_ROW = re.compile(r"\s*\d{1,2}\s+(?P<middle>\S.*?)\s+(?P<hours>\d{1,40})(?:\s+\S+){4,5}\s*$")
# nvmeprint.cpp: "Aborted: Self-test command" (controller reset, namespace removed, format,
# sanitize, unknown reason); "Completed: unknown failed segment", "Completed: failed segments".
_NVME_STATUS_WORDS = (
    ("Completed without error", "passed"),
    ("Aborted: ", "aborted"),
    ("Fatal or unknown test error", "failed"),
    ("Completed: ", "failed"),
)
_NVME_TABLE = _Table("0123456789", _NVME_ROW, _NVME_STATUS_WORDS, "No Self-tests Logged")
# "Self-test status: No self-test in progress" is the idle one.
_NVME_RUNNING = re.compile(r"^[ \t]*Self-test status:(?![ \t]*No )[^\n]* in progress", re.MULTILINE)
# "-l xerror" (-x), then "-l error" (--all): "Device Error Count: 3", "ATA Error Count: 12
# (device log contains only the most recent five errors)", "No Errors Logged" (which NVMe's
# "Error Information" log prints too: only these sections count). After "Invalid Error Log
# index" smartctl prints "ATA Error Count: 0 (possibly also invalid)": no count.
_ERROR_LOGS = (
    (re.compile(r"^[ \t]*SMART Extended Comprehensive Error Log Version:.*$", re.MULTILINE),
     "Device Error Count:"),
    (re.compile(r"^[ \t]*SMART Error Log Version:.*$", re.MULTILINE), "ATA Error Count:"),
)  # fmt: skip
_LEADING_COUNT = re.compile(r"\s*(\d{1,40})(?!\d)")
# Device statistics (-l devstat): "0x05  0x058  1              60  ---  Specified Maximum
# Operating Temperature"; an invalid value prints "-" and does not match. Bounded: an
# unbounded (\d+) costs a search quadratic time in a long run of digits.
_DEVSTAT_MAX_TEMPERATURE = re.compile(
    r"(?<!\d)(\d{1,4})[ \t]+\S{1,8}[ \t]+Specified Maximum Operating Temperature"
)
# SCT history "Min/Max Temperature Limit:           -40/70 Celsius" (also " 0/ 0", " ?/ ?").
_LIMIT_PAIR = re.compile(r"(?:-?\d{1,4}|\?)\s*/\s*(-?\d{1,4})(?!\d)")


def read_logs(text: str, health: DriveHealth) -> None:
    if health.protocol == "nvme":
        section = _section(text, _NVME_SELF_TEST_HEADER)
        rows = _self_test_rows(section, _NVME_TABLE)
        if section is not None and rows is not None:
            store_self_tests(health, rows, running=bool(_NVME_RUNNING.search(section)))
    elif health.protocol != "scsi":  # SCSI's "SMART Self-test log" is another table
        for header in _ATA_SELF_TEST_HEADERS:
            rows = _self_test_rows(_section(text, header), _ATA_TABLE)
            if rows is not None:
                store_self_tests(health, rows)
                break
        for header, label in _ERROR_LOGS:
            health.error_log_count = _error_count(_section(text, header), label)
            if health.error_log_count is not None:
                break


def _section(text: str, header: re.Pattern[str]) -> str | None:
    """The lines after the header line up to the first blank one; None without the header."""
    match = header.search(text)
    if match is None:
        return None
    end = _BLANK_LINE.search(text, match.end())
    return text[match.end() : end.start() if end else len(text)]


def _self_test_rows(section: Optional[str], table: _Table) -> list[Row] | None:
    """The table's rows in order, most recent first; [] for an empty log; None when the
    section holds neither rows nor the empty-log message (unreadable, "Invalid ... index")."""
    if section is None:
        return None
    rows: list[Row] = []
    empty = False
    for line in section.splitlines():
        stripped = line.lstrip()
        if stripped[:1] and stripped[0] in table.start:
            match = table.row.match(line) if len(line) <= MAX_ROW else None
            if match is None:
                rows.append((None, None))
                continue
            middle = match["middle"]
            status = next((word for phrase, word in table.words if phrase in middle), None)
            rows.append((status, bounded_int(match["hours"])))
        elif stripped.startswith(table.no_tests):
            empty = True
    return rows if rows or empty else None


def _error_count(section: Optional[str], label: str) -> int | None:
    for line in (section or "").splitlines():
        line = line.strip()
        if line == "No Errors Logged":
            return 0
        if line.startswith(label):
            rest = line[len(label) :]
            match = _LEADING_COUNT.match(rest)
            if match is None or "possibly also invalid" in rest:
                return None
            return bounded_int(match.group(1))
    return None


def operating_limit(info: dict[str, str], text: str) -> int | None:
    """The ATA drive's own maximum operating temperature, °C, as json_logs.operating_limit
    picks it: device statistics, SCT status "Specified Max Operating Temperature:   60
    Celsius", SCT "Min/Max Temperature Limit"; never the SCT "recommended" maximum."""
    devstat = _DEVSTAT_MAX_TEMPERATURE.search(text)
    sct_status = _LEADING_COUNT.match(info.get("specified max operating temperature", ""))
    limits = _LIMIT_PAIR.match(info.get("min/max temperature limit", ""))
    for found in (devstat, sct_status, limits):
        limit = plausible_limit(bounded_int(found.group(1))) if found else None
        if limit is not None:
            return limit
    return None
