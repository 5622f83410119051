"""Child processes (smartctl, nvme-cli) under faults: issue #11 items 3, 4, 5 and 6.

Each case runs the installed command with [smart] reading one drive through the fake
smartctl (tests/fake_smartctl/smartctl), whose behaviours hang, flood, or leave a grandchild
holding the output pipes; the fake notes every process it starts in pids.log.
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

from ci import skip_or_fail
from faultlib import (
    DISKPROBE,
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


def write_config(tmp_path: Path, smart: str) -> Path:
    config = tmp_path / "diskprobe.toml"
    config.write_text(
        f'state_file = "{tmp_path / "state.json"}"\n'
        f'[smart]\nsmartctl_path = "{FAKE_SMARTCTL}"\ninterval = "1h"\n{smart}'
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
    config = write_config(tmp_path, f'timeout = "20s"\ndevices = ["{DEVICE}"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    process = start_diskprobe(["--config", str(config), "--interval", "1s"], env)
    # The read is in flight once its last process (smartctl, or the holder it forks) is up.
    last_role = "holder" if behaviour.startswith("holder") else "child"
    assert wait_for(lambda: pids(root, last_role), 15), process.stderr
    time.sleep(0.2)  # let the fork settle into its sleep
    return process


def stop(process: subprocess.Popen[bytes], how: str) -> None:
    if how == "eof":
        assert process.stdin is not None
        process.stdin.close()
    else:
        process.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)


# Measured on a loaded 2-core VM: 0.10-0.15 s after the fix, 17 s (or never) before it. The
# promise is a second; the bound adds 2 s for a loaded test machine (tests/faults/
# test_fault_signals.py says why), far from the 17 s of the bug.
STOP_BOUND = 3.0


@pytest.mark.parametrize("behaviour", ["hang", "holder", "holder setsid"])
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "eof"])
def test_stop_with_a_smart_read_in_flight_exits_within_a_second(
    fake_host: FakeHost, tmp_path: Path, strays: Path, reap: list[subprocess.Popen[bytes]],
    how: str, behaviour: str,
) -> None:  # fmt: skip
    process = start_with_read_in_flight(fake_host, tmp_path, strays, behaviour)
    reap.append(process)
    started = time.monotonic()
    stop(process, how)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"diskprobe still running 10 s after {how} with a read in flight")
    elapsed = time.monotonic() - started
    assert elapsed < STOP_BOUND, f"{how}: exit took {elapsed:.2f}s"
    assert process.stderr is not None
    assert_no_traceback(process.stderr.read())
    # smartctl's process group is gone: smartctl and what it forked inside the group.
    in_group = pids(strays, "smartctl") + pids(strays, "child")
    if behaviour == "holder":
        in_group += pids(strays, "holder")
    assert wait_for(lambda: not any(alive(pid, strays) for pid in in_group), 2.0), (
        "children left running")


def test_sigkill_of_diskprobe_kills_its_smartctl(
    fake_host: FakeHost, tmp_path: Path, strays: Path, reap: list[subprocess.Popen[bytes]]
) -> None:
    process = start_with_read_in_flight(fake_host, tmp_path, strays, "hang")
    reap.append(process)
    (smartctl,) = pids(strays, "smartctl")
    assert alive(smartctl, strays)
    process.kill()
    process.wait(10)
    # PR_SET_PDEATHSIG: the kernel kills the child; what it forked is out of reach (documented).
    assert wait_for(lambda: not alive(smartctl, strays), 1.0), (
        "smartctl outlived a SIGKILLed diskprobe")


def test_grandchild_holding_stdout_does_not_hold_the_read(
    fake_host: FakeHost, tmp_path: Path, strays: Path
) -> None:
    """smartctl answered and exited, an escaped grandchild keeps the pipe: the read completes
    (a bounded grace after the exit, not EOF), the drive is reported, --once returns."""
    fake_drives(strays, {DEVICE: "leave setsid"})
    config = write_config(tmp_path, f'timeout = "20s"\ndevices = ["{DEVICE}"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(strays)}
    started = time.monotonic()
    result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env,
                           timeout=30)  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    assert "diskprobe_smart,device=sda" in result.stdout and 'verdict="ok"' in result.stdout
    assert elapsed < 10, elapsed  # measured ~1.3 s; before: the 20 s timeout, then a hang


@pytest.mark.slow
def test_flood_of_output_is_capped_killed_and_warned(
    fake_host: FakeHost, tmp_path: Path, strays: Path
) -> None:
    """50 MB from smartctl: the read stops at the cap (4 MiB), kills the group, one W!, the
    drive counts as failed; peak RSS stays far below the 176 MB measured before."""
    fake_drives(strays, {DEVICE: "flood 50"})
    config = write_config(tmp_path, f'devices = ["{DEVICE}"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(strays)}
    command = ["/usr/bin/time", "-f", "maxrss_kb=%M", str(DISKPROBE)]
    if not os.path.exists(command[0]):
        skip_or_fail("/usr/bin/time is not installed (Debian package time)")
    result = subprocess.run(
        [*command, "--config", str(config), "--once", "--interval", "100ms"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    warned = [line for line in result.stderr.splitlines() if line.startswith("W! smart")]
    assert len(warned) == 1 and "more than 4 MiB" in warned[0], result.stderr
    assert "diskprobe_smart,device=sda exit_status=-1i" in result.stdout
    maxrss_kb = int(result.stderr.rsplit("maxrss_kb=", 1)[1].split()[0])
    assert maxrss_kb < 80_000, maxrss_kb  # measured ~40 MB (the interpreter and imports)
    smartctl = pids(strays, "smartctl")
    assert smartctl and not any(alive(pid, strays) for pid in smartctl)


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
