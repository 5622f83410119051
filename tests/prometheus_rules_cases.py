"""The fleet scenario of dashboards/prometheus/tests/alerts*.yaml (promtool test rules), in
the schema's names and units; tests/prometheus_rules_files.py renders it for each name flavor
of the shipped rules:

    .venv/bin/python tests/prometheus_rules_files.py   # rewrite the test files

Hosts h1 and h2 live for the whole 90 minutes; h3 is decommissioned at minute 20. h1 has a
failing drive, a healthy one, a worn NVMe, a fail-slow device, one whose fail-slow cleared at
minute 30, full, filling and hung mounts (one hung since minute 30, one for 3 minutes at minute
60, one that answers again); drive MOVED sits in h1 until minute 40 (h1 keeps
its last reading, as diskprobe's Prometheus format does for 2 h) and in h2 from minute 45.
Which alerts fire is written out by hand below (EXPECTED); only the annotation text is taken
from the rules file and filled with the alert's labels and value.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from prometheus_rules_jobs import ALERT as JOB_ALERT
from prometheus_rules_jobs import EXPECTED as JOB_EXPECTED
from prometheus_rules_jobs import job_series

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dashboards"))


MINUTES = 90
TESTS = ROOT / "dashboards" / "prometheus" / "tests"
Values = list[Optional[float]]


def steps(*runs: tuple[int, int, float]) -> Values:
    """(from minute, to minute inclusive, value) runs; minutes not covered have no sample."""
    values: Values = [None] * (MINUTES + 1)
    for start, end, value in runs:
        for minute in range(start, end + 1):
            values[minute] = value
    return values


ALL = (0, MINUTES)
SATA = {"protocol": "ata", "media": "hdd", "model": "HDD-X"}
NVME = {"protocol": "nvme", "media": "nvme", "model": "NVME-Y"}


def _drive(host: str, device: str, serial: str, kind: dict[str, str], span: tuple[int, int],
           **fields: float) -> list[tuple[str, str, dict[str, str], Values]]:
    labels = {"host": host, "device": device, "serial": serial, **kind}
    return [("diskprobe_smart", f, labels, steps((*span, v))) for f, v in fields.items()]


def _io_series() -> list[tuple[str, str, dict[str, str], Values]]:
    io = {"model": "NVME-Y"}
    series: list[tuple[str, str, dict[str, str], Values]] = [
        ("diskprobe_io", "fail_slow", {"host": "h1", "device": "nvme0n1", "serial": "N-WORN", **io},
         steps((0, MINUTES, 1))),
        ("diskprobe_io", "slowdown_ratio",
         {"host": "h1", "device": "nvme0n1", "serial": "N-WORN", **io}, steps((0, MINUTES, 3.5))),
        ("diskprobe_io", "fail_slow", {"host": "h1", "device": "nvme1n1", "serial": "N-OK", **io},
         steps((0, 29, 1), (30, MINUTES, 0))),
        ("diskprobe_io", "await_ms", {"host": "h1", "device": "nvme0n1", "serial": "N-WORN", **io},
         steps((0, MINUTES, 25))),
        ("diskprobe_io", "util_percent",
         {"host": "h1", "device": "nvme0n1", "serial": "N-WORN", **io}, steps((0, MINUTES, 99))),
        ("diskprobe_io", "await_ms", {"host": "h1", "device": "nvme1n1", "serial": "N-OK", **io},
         steps((0, MINUTES, 2))),
        ("diskprobe_io", "util_percent",
         {"host": "h1", "device": "nvme1n1", "serial": "N-OK", **io}, steps((0, MINUTES, 50))),
        ("diskprobe_io", "fail_slow", {"host": "h3", "device": "sda", "serial": "S-DEAD", **io},
         steps((0, 20, 1))),
    ]
    series += [  # the summaries quote it
        ("diskprobe_io", "slowdown_ratio", {"host": h, "device": d, "serial": s, **io}, steps(span))
        for h, d, s, span in (("h1", "nvme1n1", "N-OK", (0, 29, 3.5)),
                              ("h3", "sda", "S-DEAD", (0, 20, 3.5)))
    ]
    return series


def hang(start: int, end: int) -> Values:
    """unresponsive_sec as diskprobe sends it for a mount not answering from minute `start`
    to `end` inclusive: seconds since the first such sample."""
    values: Values = [None] * (MINUTES + 1)
    for minute in range(start, end + 1):
        values[minute] = (minute - start) * 60.0
    return values


def _fs_series() -> list[tuple[str, str, dict[str, str], Values]]:
    return [
        ("diskprobe_fs", field, {"host": host, "path": path, "device": "vda1", "fstype": "ext4",
                                 "mode": "rw"}, values)
        for host, path, field, values in (
            ("h1", "/", "used_percent", steps((0, MINUTES, 97))),
            ("h1", "/data", "time_to_full_sec", steps((0, MINUTES, 3600))),
            ("h1", "/scratch", "time_to_full_sec", steps((0, MINUTES, 36000))),
            ("h1", "/home", "used_percent", steps((0, MINUTES, 40))),
            ("h1", "/mnt/nfs", "responsive", steps((0, 29, 1), (30, MINUTES, 0))),
            ("h1", "/mnt/nfs", "unresponsive_sec", hang(30, MINUTES)),
            ("h1", "/mnt/brief", "unresponsive_sec", hang(57, 61)),  # 3 min at minute 60
            ("h1", "/mnt/back", "unresponsive_sec", hang(40, 55)),  # answers since minute 56
            ("h1", "/home", "responsive", steps((0, MINUTES, 1))),
            ("h3", "/", "used_percent", steps((0, 20, 99))),
        )
    ]


def scenario() -> list[tuple[str, str, dict[str, str], Values]]:
    """(measurement, field, labels, one value per minute in the schema's unit)."""
    healthy = {"verdict_code": 0, "reallocated_sectors": 0, "reallocated_sectors_per_day": 0,
               "afr_percent": 2.87}
    series = [
        ("diskprobe_agent", "duration_ms", {"host": h, "collector": "io"}, steps((*span, 12.5)))
        for h, span in (("h1", ALL), ("h2", ALL), ("h3", (0, 20)))
    ]
    series += _drive("h1", "sda", "S-FAIL", SATA, ALL, verdict_code=2, power_on_hours=1000,
                     reallocated_sectors_per_day=1.5, afr_percent=12.0)
    series.append(("diskprobe_smart", "reallocated_sectors",
                   {"host": "h1", "device": "sda", "serial": "S-FAIL", **SATA},
                   steps((0, 29, 8), (30, MINUTES, 16))))
    series += _drive("h1", "sdb", "S-OK", SATA, ALL, power_on_hours=2000, **healthy)
    series += _drive("h1", "nvme0", "N-WORN", NVME, ALL, verdict_code=1, power_on_hours=300,
                     percentage_used=96, available_spare_percent=5,
                     available_spare_threshold_percent=10, critical_warning=1)
    series += _drive("h1", "nvme1", "N-OK", NVME, ALL, verdict_code=0, power_on_hours=400,
                     percentage_used=10, available_spare_percent=100,
                     available_spare_threshold_percent=10, critical_warning=0)
    series += _drive("h1", "sdc", "MOVED", SATA, ALL, verdict_code=2, power_on_hours=500)
    series += _drive("h2", "sdd", "MOVED", SATA, (45, MINUTES), verdict_code=2, power_on_hours=501)
    series += _drive("h3", "sda", "S-DEAD", SATA, (0, 20), verdict_code=2, power_on_hours=3000)
    return series + _io_series() + _fs_series() + job_series()


def drive_labels(host: str, device: str, serial: str, kind: dict[str, str]) -> dict[str, str]:
    return {"host": host, "device": device, "serial": serial, **kind}


def fs_labels(host: str, path: str) -> dict[str, str]:
    return {"host": host, "path": path, "device": "vda1", "fstype": "ext4", "mode": "rw"}


FAILING = drive_labels("h1", "sda", "S-FAIL", SATA)
WORN = drive_labels("h1", "nvme0", "N-WORN", NVME)
DEAD = drive_labels("h3", "sda", "S-DEAD", SATA)
SLOW = {"host": "h1", "device": "nvme0n1", "serial": "N-WORN", "model": "NVME-Y"}
CLEARED = {"host": "h1", "device": "nvme1n1", "serial": "N-OK", "model": "NVME-Y"}
DEAD_IO = {"host": "h3", "device": "sda", "serial": "S-DEAD", "model": "NVME-Y"}
# minute -> alert name -> [(severity, labels, value in the schema's unit)]
Expected = dict[int, dict[str, list[tuple[str, dict[str, str], float]]]]
EXPECTED: Expected = {
    10: {
        "DiskprobeVerdict": [("critical", FAILING, 2), ("warning", WORN, 1), ("critical", DEAD, 2),
                             ("critical", drive_labels("h1", "sdc", "MOVED", SATA), 2)],
        "DiskprobeFailSlow": [("warning", SLOW, 1), ("warning", CLEARED, 1),
                              ("warning", DEAD_IO, 1)],
        "DiskprobeFsUsed": [("critical", fs_labels("h1", "/"), 97),
                            ("critical", fs_labels("h3", "/"), 99)],
        "DiskprobeAgentSilent": [],
    },
    60: {
        "DiskprobeVerdict": [("critical", FAILING, 2), ("warning", WORN, 1),
                             ("critical", drive_labels("h2", "sdd", "MOVED", SATA), 2)],
        # no reading a day ago, so no growth to judge (the per-day alert covers new drives)
        "DiskprobeReallocatedGrowth": [],
        "DiskprobeReallocatedPerDay": [("warning", FAILING, 1.5)],
        "DiskprobeAfrHigh": [("warning", FAILING, 12)],
        "DiskprobeNvmeWear": [("critical", WORN, 96)],
        "DiskprobeNvmeSpare": [("critical", WORN, -5)],
        "DiskprobeNvmeCriticalWarning": [("critical", WORN, 1)],
        "DiskprobeFailSlow": [("warning", SLOW, 1)],
        "DiskprobeIoSaturatedNvme": [("warning", SLOW, 25)],
        "DiskprobeIoSaturatedOther": [],
        "DiskprobeFsUsed": [("critical", fs_labels("h1", "/"), 97)],
        "DiskprobeFsFillForecast": [("critical", fs_labels("h1", "/data"), 3600),
                                    ("warning", fs_labels("h1", "/scratch"), 36000)],
        "DiskprobeFsStuck": [("critical", fs_labels("h1", "/mnt/nfs"), 1800)],
        "DiskprobeAgentSilent": [("critical", {"host": "h3"}, 0)],
        "DiskprobePendingGrowth": [],
    },
    90: {"DiskprobeAgentSilent": [],
         "DiskprobeFsStuck": [("critical", fs_labels("h1", "/mnt/nfs"), 3600)],
         "DiskprobeVerdict": [
        ("critical", FAILING, 2), ("warning", WORN, 1),
        ("critical", drive_labels("h2", "sdd", "MOVED", SATA), 2)]},
}
for _minute, _fired in JOB_EXPECTED.items():  # the training jobs: prometheus_rules_jobs.py
    EXPECTED[_minute][JOB_ALERT] = _fired
