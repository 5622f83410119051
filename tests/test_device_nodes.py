"""A drive spec names a device node only (issue #25, item 2): `[smart] devices = ["sda -d sat"]`
made `diskprobe sudoers` write a rule for smartctl on `sda`, which smartctl opens relative to
its working directory, where the agent's user can leave a link to any root-only file.

A bare name is now /dev/<name>; a path must stay under /dev, behind directories only root may
write (/dev/shm is under /dev too), and name a block or character device, or nothing yet (a
drive pulled for now). Checked when the config loads and again when `diskprobe sudoers`
writes its rules, through the installed command; the real nodes are this machine's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.smart.devices import DriveSpec, node_problem

from ci import skip_or_fail
from helpers import installed_command

FAKE_SMARTCTL = Path(__file__).parent / "fake_smartctl" / "smartctl"


@pytest.fixture
def dev_dir() -> Iterator[Path]:
    """A folder of the test's own under /dev (root's, 0755), removed after."""
    if os.geteuid() != 0:
        skip_or_fail("needs root to make a folder under /dev")
    folder = Path("/dev") / f"diskprobe-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def problem(text: str) -> str:
    return node_problem(DriveSpec.parse(text))


def test_a_bare_name_is_a_device_under_dev() -> None:
    assert DriveSpec.parse("sda -d sat") == DriveSpec("/dev/sda", "sat")
    assert DriveSpec.parse("nvme0") == DriveSpec("/dev/nvme0")
    assert DriveSpec.parse("sda -d sat").smartctl_args() == ["-d", "sat", "--", "/dev/sda"]
    assert DriveSpec.parse("sda").tag == "sda"  # the series keeps its name


def test_device_nodes_and_absent_drives_pass() -> None:
    assert problem("/dev/null") == ""  # a character device
    loops = sorted(Path("/dev").glob("loop[0-9]*"))
    if loops:
        assert problem(str(loops[0])) == ""  # a block device
    assert problem("/dev/sdzz -d sat") == ""  # no such drive now: its directory is root's
    assert problem("/dev/bus/0 -d megaraid,5") == ""  # smartctl's MegaRAID name, no node


def test_paths_a_user_could_aim_elsewhere_are_refused(tmp_path: Path) -> None:
    assert "not under /dev" in problem("/etc/shadow")
    assert "not under /dev" in problem(str(tmp_path / "sda"))
    if Path("/dev/shm").is_dir():
        assert "/dev/shm may be written by others than root" in problem("/dev/shm/sda -d sat")


def test_a_file_a_link_and_a_user_folder_under_dev_are_refused(dev_dir: Path) -> None:
    (dev_dir / "plain").write_text("")
    assert "not a block or character device" in problem(f"{dev_dir}/plain")
    (dev_dir / "out").symlink_to("/etc/shadow")
    assert "leads out of /dev" in problem(f"{dev_dir}/out")
    (dev_dir / "back").symlink_to("/dev/null")
    assert problem(f"{dev_dir}/back") == ""  # /dev/disk/by-id links are like this
    theirs = dev_dir / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    assert "may be written by others than root" in problem(f"{theirs}/sda -d sat")


def _config(tmp_path: Path, devices: str) -> Path:
    config = tmp_path / "diskprobe.toml"
    smart = f'[smart]\nsmartctl_path = "{FAKE_SMARTCTL}"\ndevices = [{devices}]\n'
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n' + smart)
    return config


def _run(tmp_path: Path, devices: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*installed_command(), *args, "--config", str(_config(tmp_path, devices))],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.parametrize("spec", ["/dev/shm/sda -d sat", "/tmp/sda", "../sda"])
def test_the_config_refuses_such_a_path_in_one_line(tmp_path: Path, spec: str) -> None:
    done = _run(tmp_path, f'"{spec}"', "--once")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("E! config: ") and "'devices'" in lines[0]


def test_sudoers_writes_the_absolute_path_for_a_bare_name(tmp_path: Path) -> None:
    (tmp_path / "sda").symlink_to("/etc/shadow")  # where smartctl would have looked
    done = _run(tmp_path, '"sda -d sat"', "sudoers")
    assert done.returncode == 0, done.stderr
    assert "-d sat -- /dev/sda" in done.stdout and " -- sda" not in done.stdout


def test_sudoers_refuses_a_scanned_path_outside_dev(tmp_path: Path) -> None:
    """A scan is root's smartctl talking, but the rule is checked all the same."""
    cases = tmp_path / "drives"
    for name, device in (("good", "/dev/sdzz -d sat"), ("evil", "/dev/shm/evil -d sat")):
        (cases / name).mkdir(parents=True)
        (cases / name / "device").write_text(device + "\n")
        (cases / name / "response.txt").write_text("")
    done = _run(tmp_path, "", "sudoers", FAKE_SMARTCTL_DIR=str(cases))
    assert done.returncode == 0, done.stderr
    assert "-- /dev/sdzz" in done.stdout and "/dev/shm/evil" not in done.stdout
    assert "W! sudoers: refused drive name: device path '/dev/shm/evil'" in done.stderr
