"""Child processes (smartctl, nvme-cli) under faults: issue #11 items 3, 4, 5 and 6.

Each case runs the installed command with [smart] reading one drive through the fake
smartctl (tests/fake_smartctl/smartctl), whose behaviours hang, flood, or leave a grandchild
holding the output pipes; the fake notes every process it starts in pids.log.

No case measures time or memory (tests/bench/bench_stop.py does): the read timeout is an hour,
so a diskprobe that waited for a hung read, or for EOF on a pipe a grandchild holds, would hang
past HANG_GUARD_SEC; what is asserted is the state of the fake's processes (alive when
diskprobe exited, gone afterwards) and counts (bytes the flood got to pass on).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from ci import HANG_GUARD_SEC
from faultlib import (
    FAKE_SMARTCTL,
    FakeHost,
    assert_no_traceback,
    run_diskprobe,
    start_diskprobe,
    wait_for,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "smart-json"
CASE = GOLDEN / "ata-hdd-hgst-huh721008ale604-he10"  # a healthy SATA drive
DEVICE = "/dev/sda -d sat"
KiB = 1024
MiB = 1024 * KiB
# An hour, far beyond HANG_GUARD_SEC: only a diskprobe that waits for what it should not (a
# hung read, EOF on a pipe a grandchild holds) gets near the guard.
READ_TIMEOUT = 'timeout = "1h"\n'


def fake_drives(root: Path, behaviours: dict[str, str]) -> Path:
    """FAKE_SMARTCTL_DIR with one case per device line, each replaying CASE."""
    for number, (device, behaviour) in enumerate(behaviours.items()):
        case = root / f"drive{number}"
        case.mkdir(parents=True)
        shutil.copyfile(CASE / "response.json", case / "response.json")
        (case / "device").write_text(device + "\n")
        if behaviour:
            (case / "behaviour").write_text(behaviour + "\n")
    return root


def write_config(tmp_path: Path, smart: str, smartctl: Path = FAKE_SMARTCTL) -> Path:
    config = tmp_path / "diskprobe.toml"
    config.write_text(
        f'state_file = "{tmp_path / "state.json"}"\n'
        f'[smart]\nsmartctl_path = "{smartctl}"\ninterval = "1h"\n{smart}'
    )
    return config


def pids(root: Path, role: str) -> list[int]:
    try:
        lines = (root / "pids.log").read_text().split("\n")
    except FileNotFoundError:
        return []
    return [int(line.split()[1]) for line in lines if line.startswith(role + " ")]


def alive(pid: int, root: Path) -> bool:
    """The fake's process `pid` for `root` is running and not a zombie (a zombie has let go of
    everything). With pid_max at 32768 a noted pid that ended may already be another test's
    process (seen under CI: the strays cleanup SIGKILLed a test_process_io child): it counts
    only while its FAKE_SMARTCTL_DIR, inherited by everything the fake forks, is `root`."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return f"FAKE_SMARTCTL_DIR={root}".encode() in handle.read().split(b"\0")
    except OSError:
        return False


@pytest.fixture
def strays(tmp_path: Path) -> Iterator[Path]:
    """The fake's FAKE_SMARTCTL_DIR; every process it noted is killed at the end."""
    root = tmp_path / "fake"
    yield root
    for role in ("smartctl", "child", "holder"):
        for pid in pids(root, role):
            if alive(pid, root):
                os.kill(pid, signal.SIGKILL)


def start_with_read_in_flight(
    fake_host: FakeHost, tmp_path: Path, root: Path, behaviour: str
) -> subprocess.Popen[bytes]:
    fake_drives(root, {DEVICE: behaviour})
    config = write_config(tmp_path, f'{READ_TIMEOUT}devices = ["{DEVICE}"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    process = start_diskprobe(["--config", str(config), "--interval", "1s"], env)
    # The read is in flight once its last process (smartctl, or the holder it forks) is up.
    last_role = "holder" if behaviour.startswith("holder") else "child"
    assert wait_for(lambda: pids(root, last_role), HANG_GUARD_SEC), process.stderr
    time.sleep(0.2)  # let the fork settle into its sleep
    return process


def stop(process: subprocess.Popen[bytes], how: str) -> None:
    if how == "eof":
        assert process.stdin is not None
        process.stdin.close()
    else:
        process.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)


# The bug (#11 item 3): exit waited for the read in flight, i.e. for its timeout (17 s with
# 20 s) or, with a grandchild holding the pipe, for ever. Exit latency: tests/bench/bench_stop.py.
@pytest.mark.parametrize("behaviour", ["hang", "holder", "holder setsid"])
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "eof"])
def test_stop_with_a_smart_read_in_flight_does_not_wait_for_it(
    fake_host: FakeHost, tmp_path: Path, strays: Path, reap: list[subprocess.Popen[bytes]],
    how: str, behaviour: str,
) -> None:  # fmt: skip
    process = start_with_read_in_flight(fake_host, tmp_path, strays, behaviour)
    reap.append(process)
    (smartctl,) = pids(strays, "smartctl")
    # Deaf to SIGTERM, asleep for ever, given an hour: this read cannot end by itself before
    # the hang guard, so an exit at all means diskprobe did not wait for it.
    assert alive(smartctl, strays), "the read ended before the stop: the case proves nothing"
    stop(process, how)
    try:
        process.wait(timeout=HANG_GUARD_SEC)
    except subprocess.TimeoutExpired:
        pytest.fail(f"diskprobe waited for the read in flight after {how} (still running)")
    assert process.returncode == 0, how
    assert process.stderr is not None
    assert_no_traceback(process.stderr.read())
    # smartctl's process group is gone: smartctl and what it forked inside the group (all deaf
    # to SIGTERM and asleep for ever: gone means killed), and since issue #37 (item 9) the
    # holder that escaped the group with setsid too, found among smartctl's descendants.
    started = pids(strays, "smartctl") + pids(strays, "child") + pids(strays, "holder")
    assert wait_for(lambda: not any(alive(pid, strays) for pid in started), HANG_GUARD_SEC), (
        "children left running"
    )


def test_sigkill_of_diskprobe_kills_its_smartctl(
    fake_host: FakeHost, tmp_path: Path, strays: Path, reap: list[subprocess.Popen[bytes]]
) -> None:
    process = start_with_read_in_flight(fake_host, tmp_path, strays, "hang")
    reap.append(process)
    (smartctl,) = pids(strays, "smartctl")
    assert alive(smartctl, strays)
    process.kill()
    process.wait(HANG_GUARD_SEC)
    # PR_SET_PDEATHSIG: the kernel kills the child; what it forked is out of reach (documented).
    # Without it the deaf smartctl sleeps for ever: the guard is reached only then.
    assert wait_for(lambda: not alive(smartctl, strays), HANG_GUARD_SEC), (
        "smartctl outlived a SIGKILLed diskprobe"
    )


def test_grandchild_holding_stdout_does_not_hold_the_read(
    fake_host: FakeHost, tmp_path: Path, strays: Path
) -> None:
    """smartctl answered and exited, an escaped grandchild keeps the pipe: the read completes
    (a bounded grace after the exit, not EOF), the drive is reported, --once returns.
    Before: the read waited for EOF until its timeout (then hung); with an hour's timeout that
    is past the hang guard, and a read cut off by the timeout reports no verdict."""
    fake_drives(strays, {DEVICE: "leave setsid"})
    config = write_config(tmp_path, f'{READ_TIMEOUT}devices = ["{DEVICE}"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(strays)}
    try:
        result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env,
                               timeout=HANG_GUARD_SEC)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("--once waited for EOF on a pipe the grandchild holds")
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    assert "diskprobe_smart,device=sda" in result.stdout and 'verdict="ok"' in result.stdout
    # The grandchild would hold the read's pipes for ever: the read ended without EOF (an
    # hour's timeout). Since issue #37 (item 9) it does not outlive the read either, escaped
    # from the group as it is: diskprobe adopts it (a subreaper) and kills it.
    assert not any(alive(pid, strays) for pid in pids(strays, "holder"))


# smartctl_path for the flood case: the fake's stdout passes through a counter that notes the
# running total after each chunk it handed on, so the test knows how much diskprobe took from
# the pipe. Killing the group (sh, the fake, the counter) ends the count where the read stopped.
COUNTING_SMARTCTL = """#!/bin/sh
"{fake}" "$@" | /usr/bin/python3 -IS -c '
import os, sys
total, out = 0, os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    view = memoryview(chunk)
    while view:
        view = view[os.write(1, view):]
    total += len(chunk)
    os.write(out, b"%d\\n" % total)
' "{log}"
"""


@pytest.mark.slow
def test_flood_of_output_is_capped_killed_and_warned(
    fake_host: FakeHost, tmp_path: Path, strays: Path
) -> None:
    """50 MB from smartctl: the read stops at the cap (4 MiB), kills the group, one W!, the
    drive counts as failed. Before, the whole 50 MB was read (176 MB peak RSS): here the bytes
    diskprobe took are counted, not its memory (peak RSS: tests/bench/bench_stop.py)."""
    fake_drives(strays, {DEVICE: "flood 50"})
    passed = tmp_path / "passed.log"
    smartctl = tmp_path / "smartctl"
    smartctl.write_text(COUNTING_SMARTCTL.format(fake=FAKE_SMARTCTL, log=passed))
    smartctl.chmod(0o755)
    config = write_config(tmp_path, f'devices = ["{DEVICE}"]\n', smartctl)
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(strays)}
    result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    warned = [line for line in result.stderr.splitlines() if line.startswith("W! smart")]
    assert len(warned) == 1 and "more than 4 MiB" in warned[0], result.stderr
    assert "diskprobe_smart,device=sda exit_status=-1i" in result.stdout
    # What the counter handed on = what diskprobe read + at most a pipe's worth (64 KiB) not
    # read yet; diskprobe reads 64 KiB at a time and stops at the first read past 4 MiB.
    taken = max(int(line) for line in passed.read_text().split())
    assert 4 * MiB < taken <= 4 * MiB + 2 * 64 * KiB, taken
    smartctl_pids = pids(strays, "smartctl")
    assert smartctl_pids and not any(alive(pid, strays) for pid in smartctl_pids)


def test_scanned_name_that_is_an_option_is_refused_with_one_warning(
    fake_host: FakeHost, tmp_path: Path, strays: Path
) -> None:
    """A `--scan-open` line naming `--set=standby,now` never reaches smartctl's command line."""
    fake_drives(strays, {"--set=standby,now -d sat": "", "/dev/sdb -d sat": ""})
    config = write_config(tmp_path, "")
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(strays)}
    result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    calls = (strays / "calls.log").read_text()
    assert "--set=standby,now" not in calls, calls
    assert '"--", "/dev/sdb"]' in calls  # the path comes after `--`
    warned = [line for line in result.stderr.splitlines() if "--set=standby,now" in line]
    assert len(warned) == 1 and warned[0].startswith("W! "), result.stderr
    assert "diskprobe_smart,device=sdb" in result.stdout


@pytest.mark.parametrize(
    "text",
    ["--set=standby,now", "--set=standby,now -d sat", "/dev/sda -d sat -x", "/dev/../etc/shadow",
     "/dev/sda -d 'sat;reboot'", "dev/sda", "'/dev/sda -s off'"],
)  # fmt: skip
def test_drive_spec_parse_refuses_what_is_not_path_or_path_d_type(text: str) -> None:
    from diskprobe.smart.devices import DriveSpec

    with pytest.raises(ValueError):
        DriveSpec.parse(text)


def test_drive_spec_args_put_the_path_after_double_dash() -> None:
    from diskprobe.smart.devices import DriveSpec

    spec = DriveSpec.parse("/dev/bus/0 -d megaraid,5")
    assert spec.smartctl_args() == ["-d", "megaraid,5", "--", "/dev/bus/0"]
    assert DriveSpec.parse("/dev/sda").smartctl_args() == ["--", "/dev/sda"]


# Issue #37, item 9: a grandchild that calls setsid escapes the process-group kill. Before, it
# lived on (hung, holding the read's pipes or not) after its read ended; now nothing a read
# started as diskprobe's user outlives the read: diskprobe is a subreaper, so what smartctl
# leaves behind becomes diskprobe's child, and every such process marked with that read's
# token is killed (and reaped) when the read ends; diskprobe's other children are not touched.
def agent_children(pid: int) -> dict[int, str]:
    """diskprobe's children and their state letter ("Z": a zombie it has not reaped)."""
    found: dict[int, str] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            listed = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, listed):
            try:
                found[child] = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
    return found


@pytest.mark.parametrize("behaviour", ["leave setsid", "holder setsid", "leave", "hang"])
def test_nothing_a_read_started_outlives_it(
    fake_host: FakeHost, tmp_path: Path, strays: Path, reap: list[subprocess.Popen[bytes]],
    behaviour: str,
) -> None:  # fmt: skip
    """The agent runs on: once the read ended (answered, or cut off by a 1 s timeout), every
    process smartctl started is gone, none left a zombie in diskprobe, and diskprobe's own
    other child (the statfs helper) still runs. "leave" and "hang" stay in smartctl's group:
    killed before as now, and with a subreaper their zombies must be reaped by diskprobe."""
    fake_drives(strays, {DEVICE: behaviour})
    timeout = READ_TIMEOUT if behaviour.startswith("leave") else 'timeout = "1s"\n'
    config = write_config(tmp_path, f'{timeout}devices = ["{DEVICE}"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(strays)}
    process = start_diskprobe(["--config", str(config), "--interval", "1s"], env)
    reap.append(process)
    last_role = "child" if behaviour == "hang" else "holder"
    assert wait_for(lambda: pids(strays, last_role), HANG_GUARD_SEC), process.stderr
    helpers = [pid for pid in agent_children(process.pid)
               if b"statfs_worker" in Path(f"/proc/{pid}/cmdline").read_bytes()]  # fmt: skip

    def started() -> list[int]:
        return pids(strays, "smartctl") + pids(strays, "child") + pids(strays, "holder")

    # Deaf to SIGTERM and asleep for ever: gone means killed, and by diskprobe (still running).
    assert wait_for(lambda: not any(alive(pid, strays) for pid in started()), HANG_GUARD_SEC), (
        f"{behaviour}: a process the read started outlived it"
    )
    assert process.poll() is None, "diskprobe exited"
    assert wait_for(lambda: "Z" not in agent_children(process.pid).values(), HANG_GUARD_SEC), (
        f"zombies left in diskprobe: {agent_children(process.pid)}"
    )
    assert helpers and all(pid in agent_children(process.pid) for pid in helpers), helpers
