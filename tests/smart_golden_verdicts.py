"""The verdicts the golden SMART cases must give (tests/test_smart_golden.py checks them): the
failing-* drives' verdict and the reasons it must include, taken from the corpus MANIFEST's
`what` column; the healthy-named drives that legitimately warn; the cases with no verdict.
Keyed by case id ("smart-json/<name>", "smart-text/<name>"), each tree's table as reviewed.

Size: data only, one commented row per drive: it is as long as the corpus has failing drives.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def _tree(tree: str, table: dict[str, T]) -> dict[str, T]:
    """A table of one tree's cases, keyed by case id ("smart-json/<name>")."""
    return {f"{tree}/{name}": value for name, value in table.items()}


_OVERALL = "smart_overall=FAILED"
# failing-* drives, from the MANIFEST `what` column: the verdict and reasons it must include.
_JSON_FAILING: dict[str, tuple[str, tuple[str, ...]]] = {
    # "Reported_Uncorrect=1": a hard drive at 187 = 1 fails at 33.88 %/year (afr_table.toml)
    "failing-ata-hdd-hp-mb0500ebncr": (
        "warn",
        ("reported_uncorrectable=1", "afr_percent=33.88(reported_uncorrectable=1)"),
    ),
    # "reallocated=387, realloc_events=9" (reallocation events have no rule of their own);
    # 261..1100 reallocated: 56.77 %/year, 19.8 x the baseline, under the 100 % fail limit
    "failing-ata-hdd-megaraid-wd4000fyyx-disk1": (
        "warn",
        ("reallocated_sectors=387", "afr_percent=56.77(reallocated_sectors=387)"),
    ),
    # "reallocated=1, Command_Timeout raw 17180131332 (packed 3x16-bit)": 4 | 4<<16 | 4<<32.
    # The reallocated sector warns; 4 timeouts no more (up to 100: no higher failure rate).
    "failing-ata-hdd-seagate-st3000nm0033": ("warn", ("reallocated_sectors=1",)),
    # "reallocated=1, Command_Timeout=1": as above
    "failing-ata-hdd-seagate-st3500418as-realloc1": ("warn", ("reallocated_sectors=1",)),
    "failing-ata-hdd-seagate-st3500418as-realloc304": (
        "warn",
        ("reallocated_sectors=304", "afr_percent=56.77(reallocated_sectors=304)"),
    ),
    "failing-ata-ssd-intel-ssdsc2bb016t7-realloc1": ("warn", ("reallocated_sectors=1",)),
    "failing-ata-ssd-intel-ssdsc2kb240g7-realloc4": ("warn", ("reallocated_sectors=4",)),
    "failing-ata-ssd-kingston-skc400s371t-realloc1": ("warn", ("reallocated_sectors=1",)),
    # "media_errors=7 ... critical_warning=0, smart_status passed": lost data warns; fail is
    # for hard facts (critical warning, FAILED, worn out), which this drive does not state
    "failing-nvme-samsung-970-evo-500gb-media-errors": ("warn", ("media_errors=7",)),
    # "critical_warning=16 (0x10 volatile memory backup failed), smart_status FAILED"
    "failing-nvme-samsung-mzwll3t2hajq-critical-warning": (
        "fail",
        ("smart_overall=FAILED", "critical_warning=16"),
    ),
    # "grown defect list=260, read total_uncorrected_errors=1, write=535": counts warn (no
    # failure-rate data for SCSI drives; the drive's health status is OK)
    "failing-scsi-seagate-st373453lc-grown260": (
        "warn",
        ("grown_defects=260", "read_uncorrected_errors=1", "write_uncorrected_errors=535"),
    ),
    # "scsi_grown_defect_list=56"
    "failing-scsi-seagate-st4000nm0043-grown-defects": ("warn", ("grown_defects=56",)),
    # "smart_status FAILED, reallocated=1975 (attr5 when_failed=now), ..., pending=8"
    "failing-usb-jmicron-hitachi-hds721050dle630": (
        "fail",
        (
            "smart_overall=FAILED",
            "failing_now=Reallocated_Sector_Ct",
            "afr_percent=150.28(reallocated_sectors=1975)",
            "reallocated_sectors=1975",
            "pending_sectors=8",
        ),
    ),
}
_TEXT_FAILING: dict[str, tuple[str, tuple[str, ...]]] = {
    # "FAILED! due to attr 22 Helium_Level NOW; zero reallocated/pending"
    "failing-ata-hdd-hgst-huh728080aln600-helium": ("fail", (_OVERALL, "failing_now=Helium_Level")),
    # "health PASSED but reallocated=295, pending=1232, offline_unc=6059"
    "failing-ata-hdd-hgst-hus726t6tale6l4-passed": (
        "fail",
        ("pending_sectors=1232", "offline_uncorrectable=6059", "reallocated_sectors=295"),
    ),
    # "PASSED but reallocated raw '46 (0 39)', pending=29": 17..40 pending fail at 95.65 %/year,
    # just under the 100 % fail limit, and PASSED: a warning, the worst-ranked one
    "failing-ata-hdd-hitachi-hds721010cla632-passed": (
        "warn",
        ("pending_sectors=29", "reallocated_sectors=46", "afr_percent=95.65(pending_sectors=29)"),
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
    # "Reported_Uncorrect=8 ... Command_Timeout raw '0 0 1'": 1 in the low 16 bits; PASSED.
    # 187 at 7..11 is 38 %/year in the table, after 50.14 % at 4..6: the estimate keeps 50.14
    "failing-ata-hdd-seagate-st2000dm006-brief": (
        "warn",
        ("reported_uncorrectable=8", "afr_percent=50.14(reported_uncorrectable=8)"),
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
    # "FAILED! via attr 1 NOW, reallocated=3824, pending=32, Command_Timeout raw '8 8 42548'";
    # 44 °C is under its operating limit (60, device statistics; SCT's recommended 40 is not one)
    "failing-ata-hdd-seagate-st8000nm0055": (
        "fail",
        (
            _OVERALL,
            "failing_now=Raw_Read_Error_Rate",
            "pending_sectors=32",
            "reallocated_sectors=3824",
            "afr_percent=264.49(offline_uncorrectable=32)",
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
    # "PASSED but reallocated=17, pending=17, offline_unc=49": an SSD (no failure-rate data) that
    # says PASSED: every count warns, none is a hard fact
    "failing-ata-ssd-apacer-as340-960gb-passed": (
        "warn",
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
    # Media errors warn: lost data, but no critical warning and PASSED (fail is for hard facts)
    "failing-nvme-samsung-mzpll1t6hehp-passed-media": ("warn", ("media_errors=2700560",)),
    # "PASSED, media errors=14, Error log entries=152": as above
    "failing-nvme-scy-smm5-passed-media": ("warn", ("media_errors=14",)),
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
FAILING = {**_tree("smart-json", _JSON_FAILING), **_tree("smart-text", _TEXT_FAILING)}

# Drives not named failing-* whose verdict is legitimately not ok.
_JSON_NOT_OK_BUT_HEALTHY_NAMED: dict[str, tuple[str, tuple[str, ...]]] = {
    # MANIFEST: "End-to-End_Error=1, Command_Timeout=29, UDMA_CRC=24 (degraded, passed)": the
    # end-to-end (data path) error warns; the 29 timeouts no more (up to 100 they come with no
    # higher failure rate); CRC errors are cabling, no rule.
    "ata-ssd-micron-5300-mtfddak1t9tds": ("warn", ("end_to_end_errors=1",)),
}
# None since the quiet verdict: ata-ssd-apple-sm256e-darwin-brief's 190 "Past" is an airflow
# temperature excursion (temperature_failed_in_past=true in its expected.out, no warning), and
# usb-ata-liteon-lct-512l9s-PARTLY-SYNTHETIC's one command timeout warns no more.
_TEXT_NOT_OK_BUT_HEALTHY_NAMED: dict[str, tuple[str, tuple[str, ...]]] = {}
NOT_OK_BUT_HEALTHY_NAMED = {
    **_tree("smart-json", _JSON_NOT_OK_BUT_HEALTHY_NAMED),
    **_tree("smart-text", _TEXT_NOT_OK_BUT_HEALTHY_NAMED),
}

# Cases that say nothing about health, so get no verdict at all (a point with what is known).
# "problem": a failed read, counted as one error; the others count none.
_JSON_NO_VERDICT: dict[str, str] = {
    # The open failed (exit 2, no device object): a failed read, counted as an error.
    "error-windows-open-failed": "problem",
    # `smartctl --info` output only: identity and capacity, no health log.
    "nvme-kioxia-kcd61lul3t84-info-only": "no health data",
    # A Windows RST RAID volume seen as SCSI: no smart_status, no counters (temperature 0).
    "scsi-intel-raid1-volume-windows": "no health data",
}
_TEXT_NO_VERDICT: dict[str, str] = {
    # "Device is in STANDBY mode, exit(2)": power_mode and exit_status only.
    "standby-unraid-exit2": "standby",
    # RAID virtual disks: "SMART support is: Unavailable", identity but no health.
    "scsi-avago-mr9361-16i-virtual-disk-smart-unavailable": "no health data",
    "scsi-intel-rs3dc080-virtual-disk-smart-unavailable": "no health data",
}
NO_VERDICT = {**_tree("smart-json", _JSON_NO_VERDICT), **_tree("smart-text", _TEXT_NO_VERDICT)}
