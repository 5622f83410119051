"""SmartCollector's behaviour with smartctl as a real process (tests/fake_smartctl/smartctl):
one call per drive, timeouts with process-group kill, missing binary, permission, standby,
garbage, vanishing drives, baselines across restarts, thresholds, non-blocking reads, the real
smartctl of this host, and pySMART on our exec layer.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import psutil
import pytest

from diskprobe.metric import Metric
from diskprobe.runtime import Runtime
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.smart.runner import CommandRunner
from smart_harness import (
    FAKE_SMARTCTL,
    GOLDEN_JSON,
    TESTS,
    Rig,
    calls_per_device,
    install_case,
    make_rig,
    read_calls,
    set_behaviour,
)

from ci import guarded, skip_or_fail, wait_until
from helpers import FakeClock, assert_schema

# Drives with real, distinct serials (baselines are per serial), at distinct paths.
SSD = ("ata-ssd-samsung-860-evo-500gb-full", "/dev/sda -d sat", "sda")
HDD = ("ata-hdd-wdc-wuh721816ale6l4-windows", "/dev/sdb -d sat", "sdb")
NVME = ("nvme-sabrent-rocket-4-1tb", "/dev/nvme0 -d nvme", "nvme0")
TRIO = (SSD, HDD, NVME)
PYSMART_TEXT_CASE = TESTS / "fake_smartctl" / "cases" / "pysmart-text-sat-hikvision-hs-ssd-c100"
HEALTH_FIELDS = {"health_ok", "temperature_c", "power_on_hours", "verdict", "reallocated_sectors"}
BUG_MEDIA_GUESS = (
    "plugin bug: json_parser.media_from_attributes guesses media=hdd for a JSON reply with no "
    "rotation rate and no attributes (standby, open failure), so _remember_identity does not "
    "fill in the drive's real media"
)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty FAKE_SMARTCTL_DIR; afterwards no fake smartctl of this test may be left."""
    root = tmp_path / "fake"
    root.mkdir()
    monkeypatch.setenv("FAKE_SMARTCTL_DIR", str(root))
    yield root
    leftovers = fake_processes(root)
    for process in leftovers:  # ours only (matched by FAKE_SMARTCTL_DIR), by pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
    assert not leftovers, f"fake smartctl processes left running: {leftovers}"


def fake_processes(root: Path) -> list[psutil.Process]:
    """Live fake smartctl processes started for FAKE_SMARTCTL_DIR `root`."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if str(FAKE_SMARTCTL) not in (process.info["cmdline"] or []):
                continue
            if process.environ().get("FAKE_SMARTCTL_DIR") == str(root):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def add_drive(root: Path, golden: str, device: str, name: str | None = None) -> Path:
    """A golden case installed under `root`, answering for `device` instead of its own line."""
    case = install_case(GOLDEN_JSON / golden, root, name or golden)
    (case / "device").write_text(device + "\n", encoding="utf-8")
    return case


def add_trio(root: Path) -> dict[str, Path]:
    return {tag: add_drive(root, golden, device) for golden, device, tag in TRIO}


def smart_points(metrics: list[Metric]) -> dict[str, Metric]:
    points = [m for m in metrics if m.measurement == "diskprobe_smart"]
    by_device = {m.tags["device"]: m for m in points}
    assert len(by_device) == len(points), "one diskprobe_smart point per drive"
    return by_device


def attr_points(metrics: list[Metric], device: str) -> list[Metric]:
    return [
        m
        for m in metrics
        if m.measurement == "diskprobe_smart_attr" and m.tags.get("device") == device
    ]


def warnings(rig: Rig) -> list[str]:
    return rig.log_lines("W!")


def no_traceback(rig: Rig) -> None:
    text = rig.log_stream.getvalue()
    assert "Traceback" not in text and "E! " not in text, text


# -- one process per drive per read ------------------------------------------------------------


def test_discovery_and_exactly_one_smartctl_call_per_drive_per_read(
    fake: Path, tmp_path: Path
) -> None:
    add_trio(fake)
    clock = FakeClock()
    rig = make_rig(fake, tmp_path / "state.json", monotonic=clock, interval=60.0)
    first = rig.collect()
    clock.now += 61  # the next read is due; discovery (rescan 1 h) is not
    second = rig.collect()
    rig.close()

    for collection in (first, second):
        points = smart_points(collection.metrics)
        assert set(points) == {"sda", "sdb", "nvme0"}
        assert collection.errors == 0 and collection.items == 3
        assert all(p.fields["verdict"] == "ok" for p in points.values())
        assert_schema(collection.metrics)
    assert calls_per_device(fake) == {device: 2 for _, device, _ in TRIO}
    calls = read_calls(fake)
    assert sum(argv == ["--scan-open"] for argv in calls) == 1
    assert sum(argv == ["--version"] for argv in calls) == 1
    assert all("--json=c" in argv for argv in calls if "/dev/" in " ".join(argv))
    assert first.agent_fields == {"exec_calls": 5, "exec_failures": 0, "reads_skipped": 0}
    assert second.agent_fields == {"exec_calls": 3, "exec_failures": 0, "reads_skipped": 0}
    assert len(attr_points(first.metrics, "sda")) > 10  # the 860 EVO's attribute table
    assert attr_points(first.metrics, "nvme0") == []
    assert warnings(rig) == []


# -- a hung smartctl ---------------------------------------------------------------------------


def test_hung_smartctl_is_killed_with_its_process_group_at_timeout(
    fake: Path, tmp_path: Path
) -> None:
    cases = add_trio(fake)
    set_behaviour(cases["sdb"], "hang")
    # 3 s: the healthy drives' fake smartctl (a Python script) must answer within the timeout
    # even on a loaded 2-core machine; at 1 s it sometimes did not.
    rig = make_rig(fake, tmp_path / "state.json", devices=[d for _, d, _ in TRIO], timeout=3.0)
    started = time.monotonic()
    try:
        # The fake never answers: a collect that did not kill it would never return, which the
        # guard turns into a failure (no upper bound on how long the kill may take).
        collection = guarded(rig.collect, "a blocking collect with a hung smartctl")
    finally:
        rig.close()  # also unblocks the guarded collect if it hung
    # Not killed before the timeout: a lower bound a slow machine cannot break, as the runner
    # takes its deadline (start + 3 s) after `started` and kills at or after it.
    assert time.monotonic() - started >= 3.0, "killed before the timeout"
    points = smart_points(collection.metrics)
    assert set(points) == {"sda", "sdb", "nvme0"}
    assert points["sdb"].fields == {"exit_status": -1}
    assert points["sdb"].tags == {"device": "sdb"}  # nothing known about it yet
    assert points["sda"].fields["verdict"] == "ok" and points["nvme0"].fields["verdict"] == "ok"
    assert collection.errors == 1
    assert collection.agent_fields == {  # version + 3
        "exec_calls": 4, "exec_failures": 1, "reads_skipped": 0}  # fmt: skip
    hung = [line for line in warnings(rig) if "/dev/sdb" in line]
    assert len(hung) == 1 and "timed out after 3s" in hung[0], warnings(rig)
    assert len(warnings(rig)) == 1
    # The fake forks a second process (like sudo + smartctl) that outlives a plain kill; the
    # group kill ends it too, though a loaded machine may take a while to reap it.
    wait_until(lambda: fake_processes(fake) == [], "the hung fake's processes ended")
    no_traceback(rig)


# -- no smartctl -------------------------------------------------------------------------------


def test_missing_smartctl_warns_once_and_the_collector_keeps_working(
    fake: Path, tmp_path: Path
) -> None:
    add_trio(fake)
    missing = tmp_path / "bin" / "smartctl"
    clock = FakeClock()
    rig = make_rig(
        fake,
        tmp_path / "state.json",
        smartctl_path=str(missing),
        nvme_path=str(tmp_path / "bin" / "nvme"),  # no nvme-cli fallback either
        monotonic=clock,
    )
    collections = [rig.collect()]
    clock.now += 3601  # both the read interval and the rescan are due again
    collections.append(rig.collect())
    for collection in collections:
        assert collection.metrics == [] and collection.errors == 0
    assert len(warnings(rig)) == 1
    assert "not found" in warnings(rig)[0] and "smartmontools" in warnings(rig)[0]
    assert read_calls(fake) == []

    missing.parent.mkdir()
    missing.symlink_to(FAKE_SMARTCTL)  # installed meanwhile
    clock.now += 3601
    recovered = rig.collect()
    rig.close()
    assert set(smart_points(recovered.metrics)) == {"sda", "sdb", "nvme0"}
    assert len(warnings(rig)) == 1
    no_traceback(rig)


# -- permission --------------------------------------------------------------------------------


def test_permission_denied_says_how_to_fix_it_once_and_counts_errors(
    fake: Path, tmp_path: Path
) -> None:
    cases = add_trio(fake)
    set_behaviour(cases["sdb"], "permission")
    clock = FakeClock()
    rig = make_rig(fake, tmp_path / "state.json", monotonic=clock, devices=[d for _, d, _ in TRIO])
    runtime = Runtime([rig.collector], InfluxSerializer(), Discard(), rig.log, 10.0)
    batches = [runtime.gather()]
    clock.now += 1801
    batches.append(runtime.gather())
    rig.close()

    for metrics in batches:
        points = smart_points(metrics)
        assert points["sdb"].fields == {"exit_status": 2}
        assert set(points["sda"].fields) >= HEALTH_FIELDS
        agent = [m for m in metrics if m.measurement == "diskprobe_agent"]
        assert len(agent) == 1
        assert agent[0].fields["errors"] == 1
        assert agent[0].fields["exec_failures"] == 1
    permission = [line for line in warnings(rig) if "permission" in line.lower()]
    assert len(permission) == 1, warnings(rig)
    for hint in ("use_sudo", "sudoers", "setcap"):
        assert hint in permission[0]
    assert warnings(rig) == permission  # nothing else, and not repeated on the second collect
    no_traceback(rig)


def test_permission_denied_at_discovery_warns_once(fake: Path, tmp_path: Path) -> None:
    """A non-root `smartctl --scan-open` comments out what it cannot open."""
    cases = add_trio(fake)
    set_behaviour(cases["sdb"], "permission")
    clock = FakeClock()
    rig = make_rig(fake, tmp_path / "state.json", monotonic=clock)
    first = rig.collect()
    clock.now += 3601
    rig.collect()
    rig.close()
    assert set(smart_points(first.metrics)) == {"sda", "nvme0"}
    permission = [line for line in warnings(rig) if "use_sudo" in line]
    assert len(permission) == 1 and warnings(rig) == permission
    assert "/dev/sdb" not in calls_per_device(fake)


class Discard:
    """An output for a Runtime whose batches the test takes from gather() directly."""

    def write(self, text: str) -> None:
        pass


# -- standby -----------------------------------------------------------------------------------


def test_standby_point_has_power_mode_and_the_tags_remembered_from_an_awake_read(
    fake: Path, tmp_path: Path
) -> None:
    case = add_drive(fake, *HDD[:2])
    clock = FakeClock()
    state = tmp_path / "state.json"
    rig = make_rig(fake, state, monotonic=clock, devices=[HDD[1]])
    awake = smart_points(rig.collect().metrics)["sdb"]
    assert awake.fields["power_mode"] == "active"

    set_behaviour(case, "standby")
    clock.now += 1801
    collection = rig.collect()
    rig.state.save(force=True)
    rig.close()
    asleep = smart_points(collection.metrics)["sdb"]
    assert asleep.fields == {"exit_status": 2, "power_mode": "standby"}
    assert not HEALTH_FIELDS & set(asleep.fields)
    assert asleep.tags == awake.tags
    assert asleep.tags["serial"] == "3WJMHZ6L" and asleep.tags["model"] == "WDC  WUH721816ALE6L4"
    assert attr_points(collection.metrics, "sdb") == []
    assert collection.errors == 0 and warnings(rig) == []
    assert collection.agent_fields == {"exec_calls": 1, "exec_failures": 0, "reads_skipped": 0}
    assert calls_per_device(fake) == {HDD[1]: 2}
    assert read_calls(fake)[-1][2:4] == ["-n", "standby"]

    # After a restart the drive may still sleep: the state file remembers who it is.
    restarted = make_rig(fake, state, devices=[HDD[1]])
    again = smart_points(restarted.collect().metrics)["sdb"]
    restarted.close()
    assert again.tags == awake.tags and again.fields["power_mode"] == "standby"


@pytest.mark.parametrize("behaviour", ["standby", "permission", "vanish"])
def test_a_reply_without_identity_keeps_the_ssd_tags_of_the_awake_read(
    fake: Path, tmp_path: Path, behaviour: str
) -> None:
    case = add_drive(fake, *SSD[:2])
    clock = FakeClock()
    rig = make_rig(fake, tmp_path / "state.json", monotonic=clock, devices=[SSD[1]])
    awake = smart_points(rig.collect().metrics)["sda"]
    assert awake.tags["media"] == "ssd"
    set_behaviour(case, behaviour)
    clock.now += 1801
    later = smart_points(rig.collect().metrics)["sda"]
    rig.close()
    assert later.tags == awake.tags


# -- garbage -----------------------------------------------------------------------------------


def test_garbage_output_is_an_error_for_that_drive_only(fake: Path, tmp_path: Path) -> None:
    cases = add_trio(fake)
    set_behaviour(cases["nvme0"], "garbage")
    rig = make_rig(fake, tmp_path / "state.json")
    collection = rig.collect()
    rig.close()
    points = smart_points(collection.metrics)
    assert set(points) == {"sda", "sdb", "nvme0"}
    # No health fields for it (exit_status is whatever the process said, or -1 if it raised).
    assert set(points["nvme0"].fields) == {"exit_status"}
    assert points["sda"].fields["verdict"] == "ok" and points["sdb"].fields["verdict"] == "ok"
    assert collection.errors == 1
    assert len([line for line in warnings(rig) if "/dev/nvme0" in line]) == 1
    no_traceback(rig)


def test_garbage_from_one_drive_does_not_switch_the_others_off_json(
    fake: Path, tmp_path: Path
) -> None:
    cases = add_trio(fake)
    set_behaviour(cases["nvme0"], "garbage")
    clock = FakeClock()
    rig = make_rig(fake, tmp_path / "state.json", monotonic=clock, concurrency=1)
    rig.collect()
    clock.now += 1801
    second = rig.collect()
    rig.close()
    points = smart_points(second.metrics)
    assert points["sda"].fields.get("verdict") == "ok", points["sda"]
    assert points["sdb"].fields.get("verdict") == "ok", points["sdb"]
    assert second.errors == 1
    assert calls_per_device(fake) == {SSD[1]: 2, HDD[1]: 2, NVME[1]: 2}


# -- exit bits 0-1 with a body (issue #25, item 8: the docs said no health fields) -----------


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_exit_bits_0_1_with_a_complete_body_still_send_health_and_verdict(
    fake: Path, tmp_path: Path, bits: int
) -> None:
    """smartctl sets bit 1 when, say, a bridge did not answer one IDENTIFY, and still prints
    what it read: data a read produced is sent, with the bits in exit_status; only a read that
    produced no drive data at all (no model, serial or counter) is a failed read."""
    cases = add_trio(fake)
    (cases["sda"] / "exit_status").write_text(f"{bits}\n")  # the process's, and the JSON's:
    response = json.loads((cases["sda"] / "response.json").read_text())
    response["smartctl"]["exit_status"] = bits
    (cases["sda"] / "response.json").write_text(json.dumps(response))
    points = smart_points(make_rig(fake, tmp_path / "state.json").collect().metrics)
    fields = points["sda"].fields
    assert fields["exit_status"] == bits and fields["verdict"] == "ok", fields
    assert set(fields) >= HEALTH_FIELDS, fields


# -- a drive vanishing between scan and read ---------------------------------------------------


def test_vanished_drive_reports_once_then_a_rescan_drops_it(fake: Path, tmp_path: Path) -> None:
    """Documented behaviour: the read that finds the drive gone gives a point with exit_status
    (2) and its remembered tags, counts an error, warns once, and forces discovery at the next
    read cycle, which no longer lists it; the drive then has no point at all."""
    cases = add_trio(fake)
    clock = FakeClock()
    rig = make_rig(fake, tmp_path / "state.json", monotonic=clock)
    awake = smart_points(rig.collect().metrics)

    set_behaviour(cases["sdb"], "vanish")
    clock.now += 1801  # a read, not yet a rescan
    gone = rig.collect()
    points = smart_points(gone.metrics)
    assert set(points) == {"sda", "sdb", "nvme0"}
    assert points["sdb"].fields == {"exit_status": 2}
    for tag in ("model", "serial", "protocol"):
        assert points["sdb"].tags[tag] == awake["sdb"].tags[tag]
    assert gone.errors == 1
    vanished = [line for line in warnings(rig) if "/dev/sdb" in line]
    assert len(vanished) == 1 and "No such device" in vanished[0]
    assert sum(argv == ["--scan-open"] for argv in read_calls(fake)) == 1

    clock.now += 1801  # still well before the hourly rescan: the vanish forced it
    after = rig.collect()
    rig.close()
    assert sum(argv == ["--scan-open"] for argv in read_calls(fake)) == 2
    assert set(smart_points(after.metrics)) == {"sda", "nvme0"}
    assert after.errors == 0 and after.items == 2
    assert calls_per_device(fake)[HDD[1]] == 2  # not read again after the rescan
    assert len(warnings(rig)) == 1
    no_traceback(rig)


# -- baselines ---------------------------------------------------------------------------------


def derive_more_reallocated(case: Path, raw: int) -> None:
    """Replace the case's response with a copy of it whose attribute 5 raw value is `raw`."""
    source = GOLDEN_JSON / SSD[0] / "response.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for row in data["ata_smart_attributes"]["table"]:
        if row["id"] == 5:
            row["raw"] = {"value": raw, "string": str(raw)}
    data["_derived"] = (
        f"DERIVED for a test from tests/golden/smart-json/{SSD[0]}/response.json (corpus "
        f"smartctl-json/{SSD[0]}.json, AnalogJ/scrutiny, MIT): Reallocated_Sector_Ct raw 0 -> {raw}"
    )
    (case / "response.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    (case / "PROVENANCE").write_text(data["_derived"] + "\n", encoding="utf-8")


def test_reallocated_growth_since_baseline_warns_and_survives_a_restart(
    fake: Path, tmp_path: Path
) -> None:
    case = add_drive(fake, *SSD[:2])
    state = tmp_path / "state.json"
    clock = FakeClock()
    rig = make_rig(fake, state, monotonic=clock, devices=[SSD[1]])
    first = smart_points(rig.collect().metrics)["sda"]
    assert first.fields["reallocated_sectors"] == 0
    assert first.fields["reallocated_sectors_increase"] == 0
    assert first.fields["verdict"] == "ok"

    derive_more_reallocated(case, 8)
    clock.now += 1801
    grown = smart_points(rig.collect().metrics)["sda"]
    assert grown.fields["reallocated_sectors"] == 8
    assert grown.fields["reallocated_sectors_increase"] == 8
    assert grown.fields["verdict"] == "warn"
    reasons = str(grown.fields["verdict_reasons"]).split(",")
    assert "reallocated_sectors_increase=8" in reasons and "reallocated_sectors=8" in reasons
    rig.state.save(force=True)
    rig.close()
    saved = json.loads(state.read_text(encoding="utf-8"))
    key = f"{grown.tags['model']}|S3YZNB0KB00864E"
    assert saved["sections"]["smart_baselines"][key]["reallocated_sectors"] == 0

    restarted = make_rig(fake, state, devices=[SSD[1]])
    after = smart_points(restarted.collect().metrics)["sda"]
    restarted.close()
    assert after.fields["reallocated_sectors_increase"] == 8
    assert "reallocated_sectors_increase=8" in str(after.fields["verdict_reasons"])


def test_drives_sharing_a_masked_serial_do_not_share_a_baseline(fake: Path, tmp_path: Path) -> None:
    add_drive(fake, "failing-ata-hdd-seagate-st3500418as-realloc1", "/dev/sda -d sat")
    add_drive(fake, "failing-ata-hdd-seagate-st3500418as-realloc304", "/dev/sdb -d sat")
    rig = make_rig(
        fake, tmp_path / "state.json", devices=["/dev/sda -d sat", "/dev/sdb -d sat"],
        concurrency=1,
    )  # fmt: skip
    points = smart_points(rig.collect().metrics)
    rig.close()
    # Each drive's first read is its own baseline: nothing can have grown yet.
    assert points["sda"].fields["reallocated_sectors_increase"] == 0
    assert points["sdb"].fields["reallocated_sectors_increase"] == 0


def test_seagate_command_timeout_printed_as_raw16_counts_its_low_word(
    fake: Path, tmp_path: Path
) -> None:
    golden = "ata-hdd-megaraid-seagate-st6000nm0115"
    case = add_drive(fake, golden, "/dev/sda -d sat")
    data = json.loads((GOLDEN_JSON / golden / "response.json").read_text(encoding="utf-8"))
    for row in data["ata_smart_attributes"]["table"]:
        if row["id"] == 188:  # smartctl's raw16: "%u %u %u" of word[2], word[1], word[0]
            row["raw"] = {"value": 5, "string": "0 0 5"}
    data["_derived"] = (
        f"DERIVED for a test from tests/golden/smart-json/{golden}/response.json (corpus "
        f"smartctl-json/{golden}.json, influxdata/telegraf, MIT): Command_Timeout raw 0 -> 5"
    )
    (case / "response.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    rig = make_rig(fake, tmp_path / "state.json", devices=["/dev/sda -d sat"])
    point = smart_points(rig.collect().metrics)["sda"]
    rig.close()
    assert point.fields["command_timeouts"] == 5
    # 5 timeouts warn no more: up to 100, Backblaze's drives fail no more often than with none.
    assert (point.fields["verdict"], point.fields["verdict_reasons"]) == ("ok", "")
    assert point.fields["afr_percent"] == 2.87  # the hard-drive baseline (198 at 0)


# -- thresholds --------------------------------------------------------------------------------


REALLOC_304 = "reallocated_sectors=304"
AFR_304 = "afr_percent=56.77(reallocated_sectors=304)"  # bucket 261..1100 of attribute 5


@pytest.mark.parametrize(
    ("settings", "status", "reasons"),
    [
        ({}, "warn", f"{REALLOC_304},{AFR_304}"),
        # The count limit raised: the estimate (19.8 x the baseline) still warns...
        ({"thresholds": {"reallocated_sectors": {"warn": 500}}}, "warn", AFR_304),
        # ... until its multiple is raised past it, or it is disabled.
        (
            {"thresholds": {"reallocated_sectors": {"warn": 500}}, "afr_warn_multiple": 20.0},
            "ok",
            "",
        ),
        ({"thresholds": {"reallocated_sectors": {"warn": -1}}, "afr_warn_multiple": 0.0}, "ok", ""),
        (
            {"thresholds": {"reallocated_sectors": {"warn": 1, "fail": 100}}},
            "fail",
            f"{REALLOC_304},{AFR_304}",
        ),
        ({"afr_fail_percent": 50.0}, "fail", f"{AFR_304},{REALLOC_304}"),
    ],
)
def test_threshold_overrides_change_the_verdict(
    fake: Path, tmp_path: Path, settings: dict[str, Any], status: str, reasons: str
) -> None:
    add_drive(fake, "failing-ata-hdd-seagate-st3500418as-realloc304", "/dev/sda -d sat")
    rig = make_rig(fake, tmp_path / "state.json", devices=["/dev/sda -d sat"], **settings)
    point = smart_points(rig.collect().metrics)["sda"]
    rig.close()
    assert (point.fields["verdict"], point.fields["verdict_reasons"]) == (status, reasons)
    assert point.fields["verdict_code"] == {"ok": 0, "warn": 1, "fail": 2}[status]


# -- non-blocking ------------------------------------------------------------------------------


class Gate:
    """The fake smartctl behind a gate: a read of a held drive starts (and says so in
    held.log), then waits until the test opens the gate. Such a read takes exactly as long as
    the test wants, whatever the machine's load: no test here needs a read of a known length."""

    def __init__(self, workdir: Path, held: Iterable[str]) -> None:
        workdir.mkdir()
        self.opened = workdir / "open"
        self.log = workdir / "held.log"
        self.smartctl = workdir / "smartctl"
        names = " ".join(held)
        # A device is smartctl's last argument; sh, not Python, to start as fast as the fake.
        self.smartctl.write_text(
            "#!/bin/sh\n"
            "for last; do :; done\n"
            f'case " {names} " in *" $last "*)\n'
            f'    echo "$last" >> "{self.log}"\n'
            f'    while [ ! -e "{self.opened}" ]; do sleep 0.05; done;;\n'
            "esac\n"
            f'exec "{FAKE_SMARTCTL}" "$@"\n'
        )
        self.smartctl.chmod(0o755)

    def held(self) -> list[str]:
        """The held drives' reads started so far, one line each, in order."""
        return self.log.read_text().split() if self.log.exists() else []

    def open(self) -> None:
        self.opened.touch()


def test_non_blocking_collect_returns_at_once_and_points_arrive_later(
    fake: Path, tmp_path: Path
) -> None:
    """A collect never waits for smartctl. Every read is held until the test opens the gate,
    and the timeout is an hour: a collect that waited for a read would not return at all,
    which the guard catches; so no collect's duration is measured."""
    add_trio(fake)
    paths = [device.split()[0] for _, device, _ in TRIO]
    gate = Gate(tmp_path / "gate", paths)
    rig = make_rig(fake, tmp_path / "state.json", smartctl_path=str(gate.smartctl),
                   blocking=False, devices=[d for _, d, _ in TRIO], timeout=3600.0)  # fmt: skip
    try:
        first = guarded(rig.collect, "the first collect")
        assert first.metrics == []
        wait_until(lambda: sorted(gate.held()) == sorted(paths), "the three reads started")
        for _ in range(3):  # the reads have started and cannot end: no point can come
            collection = guarded(rig.collect, "a collect while smartctl is held")
            assert smart_points(collection.metrics) == {}, "a collect must never wait for smartctl"
        assert read_calls(fake) == [["--version"]]  # the held reads have not reached the fake

        gate.open()
        arrived: dict[str, Metric] = {}

        def all_arrived() -> bool:
            arrived.update(smart_points(guarded(rig.collect, "a collect").metrics))
            return len(arrived) == 3

        wait_until(all_arrived, "the points after the gate opened")
    finally:
        gate.open()  # lets a collect stuck on a read return, if one is
        rig.close()
    assert all(point.fields["verdict"] == "ok" for point in arrived.values())
    assert calls_per_device(fake) == {device: 1 for _, device, _ in TRIO}
    assert sorted(gate.held()) == sorted(paths)  # each drive's read started once


def test_a_drive_still_being_read_is_skipped_not_read_again(fake: Path, tmp_path: Path) -> None:
    """Issue #25, item 3: `timeout` longer than `interval` and one slow drive: before, every
    interval started another smartctl on it (up to `concurrency` at once); now it waits for its
    read to end, the skips are counted in reads_skipped, and the other drives go on. sda's read
    is held (see Gate) until the other drives were read three times, so its slowness does not
    depend on how fast this machine runs the cycles."""
    add_trio(fake)
    slow_device, fast = SSD[1], [HDD[1], NVME[1]]
    gate = Gate(tmp_path / "gate", [slow_device.split()[0]])
    now = [0.0]
    rig = make_rig(fake, tmp_path / "state.json", smartctl_path=str(gate.smartctl),
                   monotonic=lambda: now[0], blocking=False, devices=[d for _, d, _ in TRIO],
                   interval=1.0, timeout=3600.0)  # fmt: skip
    skipped = 0
    points: list[Metric] = []

    def collect() -> None:
        nonlocal skipped
        collection = guarded(rig.collect, "a non-blocking collect")
        skipped += int(collection.agent_fields["reads_skipped"])
        points.extend(m for m in collection.metrics if m.tags.get("device") == "sda")

    def fast_drives_read_thrice() -> bool:
        now[0] += 1.0  # an interval between collects: a read cycle is due at each
        collect()
        calls = calls_per_device(fake)
        return all(calls.get(device, 0) >= 3 for device in fast)

    def collected_while(condition: Callable[[], bool]) -> Callable[[], bool]:
        def check() -> bool:  # the clock stands still: no new cycle
            collect()
            return condition()

        return check

    def cycles_over() -> bool:  # none running and none due: the clock stands still from here
        cycle = rig.collector._cycle
        return rig.collector._next_read > now[0] and cycle is not None and cycle.done()

    try:
        wait_until(fast_drives_read_thrice, "three reads of the fast drives")
        wait_until(collected_while(cycles_over), "the end of the last read cycle")
        # Each cycle submits sda before the others (TRIO's order), so its skips in the cycles
        # that read the fast drives were counted before those reads; one more collect takes
        # the last of them.
        collect()
        # Three cycles ran, and sda's read started once: before the fix, once per cycle.
        assert gate.held() == [slow_device.split()[0]]
        assert skipped >= 2, skipped
        assert slow_device not in calls_per_device(fake)  # still held: not at the fake yet

        gate.open()
        wait_until(collected_while(lambda: bool(points)), "sda's point after the gate opened")
        # Let every read end, so that close() leaves no fake smartctl behind.
        wait_until(collected_while(lambda: not rig.collector._reads), "the reads' end")
    finally:
        gate.open()
        rig.close()
    assert calls_per_device(fake)[slow_device] == 1


# -- the real smartctl -------------------------------------------------------------------------


def test_real_smartctl_on_a_host_without_smart_devices(tmp_path: Path) -> None:
    smartctl = shutil.which("smartctl") or next(
        (p for p in ("/usr/sbin/smartctl", "/sbin/smartctl") if os.access(p, os.X_OK)), None
    )
    if smartctl is None:
        skip_or_fail("smartctl (smartmontools) is not installed")
    scan = CommandRunner(smartctl, timeout=30.0).run(["--scan-open"])
    listed = [line for line in scan.stdout.splitlines() if line and not line.startswith("#")]
    if listed:
        pytest.skip(f"this host has SMART devices (the test needs none): {listed}")
    rig = make_rig(tmp_path, tmp_path / "state.json", smartctl_path=smartctl)
    collection = rig.collect()
    rig.close()
    assert collection.metrics == []
    assert collection.errors == 0 and collection.items == 0
    assert collection.agent_fields == {  # version, scan
        "exec_calls": 2, "exec_failures": 0, "reads_skipped": 0}  # fmt: skip
    assert warnings(rig) == []
    no_traceback(rig)


# -- pySMART on our exec layer -----------------------------------------------------------------


def test_pysmart_device_through_runner_smartctl_makes_one_all_call(fake: Path) -> None:
    from pySMART import Device

    from diskprobe.smart.pysmart_adapter import RunnerSmartctl

    install_case(PYSMART_TEXT_CASE, fake)
    runner = CommandRunner(str(FAKE_SMARTCTL), timeout=10.0)
    smartctl = RunnerSmartctl(runner, ["-n", "standby"])
    device = Device("/dev/sda", interface="sat", smartctl=smartctl)

    assert read_calls(fake) == [["-n", "standby", "-d", "sat", "--all", "/dev/sda"]]
    assert smartctl.calls == [["-n", "standby", "-d", "sat", "--all", "/dev/sda"]]
    assert runner.stats.take() == (1, 0)
    assert smartctl.last is not None and smartctl.last.exit_status == 0
    assert device.model == "HS-SSD-C100 120G"
    assert device.serial == "30087840294"
