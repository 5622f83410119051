"""sudo for [smart]: exact command lines, never an open option list (issue #11, item 2).

`diskprobe sudoers` prints a sudoers file for this host's drives; sudo itself (in a private
mount namespace, tests/sudo_probe.py) must allow every line the collector builds for them and
refuse the issue's hostile lines and the allowed ones with options slipped in. A read that
sudo refuses (a drive added since) gives one W! saying to re-run `diskprobe sudoers`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.nvme_cli import smart_log_args
from diskprobe.smart.reader import json_args
from sudo_probe import hostile_lines, probe_sudo

from faultlib import FAKE_SMARTCTL, TESTS, FakeHost, assert_no_traceback, run_diskprobe

FAKE_NVME = TESTS / "fake_nvme" / "nvme"
CASE = TESTS / "golden" / "smart-json" / "ata-hdd-hgst-huh721008ale604-he10"
SCANNED = [
    "/dev/sda -d sat",
    "/dev/bus/0 -d megaraid,5",
    "/dev/sdc -d sat+megaraid,0",
    "/dev/nvme0 -d nvme",
    "/dev/disk/by-id/ata-Example_SSD_S3Z1NB0K123456X -d scsi",
]
HOSTILE_NAME = "--set=standby,now -d sat"


def fake_drives(root: Path, devices: list[str]) -> Path:
    for number, device in enumerate(devices):
        case = root / f"drive{number}"
        case.mkdir(parents=True)
        shutil.copyfile(CASE / "response.json", case / "response.json")
        (case / "device").write_text(device + "\n")
    return root


def config_file(tmp_path: Path, smart: str = "") -> Path:
    path = tmp_path / "diskprobe.toml"
    path.write_text(f'state_file = "{tmp_path / "state.json"}"\n[smart]\n'
                    f'smartctl_path = "{FAKE_SMARTCTL}"\nnocheck = "idle"\n{smart}')  # fmt: skip
    return path


def built_lines(devices: list[str]) -> list[list[str]]:
    """What the collector runs for these drives (nvme-cli for NVMe), built by its code."""
    from diskprobe.smart.reader import text_args  # new with the fix: each case fails alone

    lines = [[str(FAKE_SMARTCTL), "--version"], [str(FAKE_SMARTCTL), "--scan-open"]]
    for spec in map(DriveSpec.parse, devices):
        if spec.device_type == "nvme":
            lines.append([str(FAKE_NVME), *smart_log_args(spec)])
        else:
            lines += [[str(FAKE_SMARTCTL), *json_args(spec, "idle")],
                      [str(FAKE_SMARTCTL), *text_args(spec, "idle")]]  # fmt: skip
    return lines


@pytest.mark.root
def test_generated_sudoers_allows_exactly_diskprobes_lines(
    tmp_path: Path, fake_host: FakeHost
) -> None:
    root = fake_drives(tmp_path / "fake", [*SCANNED, HOSTILE_NAME])
    config = config_file(tmp_path, f'nvme_source = "nvme-cli"\nnvme_path = "{FAKE_NVME}"\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    result = run_diskprobe(["sudoers", "--config", str(config)], env)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    refused = [line for line in result.stderr.splitlines() if "--set=standby,now" in line]
    assert len(refused) == 1 and refused[0].startswith("W! "), result.stderr
    assert "--set" not in result.stdout
    sudoers = tmp_path / "sudoers"
    sudoers.write_text(result.stdout)
    visudo = shutil.which("visudo") or "/usr/sbin/visudo"
    check = subprocess.run([visudo, "-cf", str(sudoers)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    rules = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    assert "*" not in "".join(rules) and "^" not in "".join(rules)  # no wildcard, no regex

    allowed_lines = built_lines(SCANNED)
    hostile = hostile_lines(str(FAKE_SMARTCTL), str(FAKE_NVME), allowed_lines)
    hostile += [[str(FAKE_SMARTCTL), *json_args(DriveSpec("/dev/sda", "sat"), "never")]]
    _, verdicts = probe_sudo(sudoers, allowed_lines + hostile)
    for line, allowed in zip(allowed_lines + hostile, verdicts):
        verdict = "allows" if allowed else "refuses"
        assert allowed is (line in allowed_lines), f"sudo {verdict} {line}"


def test_sudoers_uses_config_devices_without_a_scan(tmp_path: Path, fake_host: FakeHost) -> None:
    root = fake_drives(tmp_path / "fake", [])
    config = config_file(tmp_path, 'devices = ["/dev/sdz -d sat"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    result = run_diskprobe(["sudoers", "--user", "telegraf", "--user", "diskprobe",
                            "--config", str(config)], env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "--scan-open" not in result.stdout and not (root / "calls.log").exists()
    assert f"{FAKE_SMARTCTL} --json\\=c --all -n idle -d sat -- /dev/sdz" in result.stdout
    assert "diskprobe ALL = (root) NOPASSWD: DISKPROBE_SMARTCTL" in result.stdout


def test_read_refused_by_sudo_says_to_rerun_diskprobe_sudoers(
    tmp_path: Path, fake_host: FakeHost
) -> None:
    """A fake `sudo` first on PATH allows what the shipped file allows (version, scan) and
    refuses the drive read as sudo -n does: one W! naming `diskprobe sudoers`."""
    root = fake_drives(tmp_path / "fake", ["/dev/sda -d sat"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text(
        '#!/bin/sh\n[ "$1" = -n ] && shift\ncase "$*" in\n'
        '  *--version|*--scan-open) exec "$@" ;;\n'
        '  *) echo "sudo: a password is required" >&2; exit 1 ;;\nesac\n'
    )
    (bin_dir / "sudo").chmod(0o755)
    config = config_file(tmp_path, "use_sudo = true\n")
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}  # fmt: skip
    result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    warned = [line for line in result.stderr.splitlines() if line.startswith("W! smart")]
    assert len(warned) == 1, result.stderr
    assert "sudo refused" in warned[0] and "diskprobe sudoers" in warned[0], warned
    assert "/dev/sda -d sat" in warned[0]


# Issue #37, item 8: names that resolve through the generator's own descriptors (/dev/stdin,
# /dev/fd/N, /proc/self/fd/N) reached the rule: `diskprobe sudoers` resolved them to whatever
# its stdin was (/dev/null here, a character device under /dev; a drive when stdin is one),
# and the rule then let the agent's user point root's smartctl at any descriptor it holds.
# Only block device nodes (and NVMe controllers' character nodes) of drives get a rule.
DESCRIPTOR_NAMES = ["/dev/stdin", "/dev/fd/0", "/dev/stderr", "/proc/self/fd/0"]


def _loop_device() -> Path | None:
    loops = sorted(Path("/dev").glob("loop[0-9]*"))
    return loops[0] if loops and os.access(loops[0], os.R_OK) else None


@pytest.mark.parametrize("stdin", ["null", "block device"])
def test_sudoers_refuses_names_that_resolve_through_its_descriptors(
    tmp_path: Path, fake_host: FakeHost, stdin: str
) -> None:
    loop = _loop_device()
    if stdin == "block device" and loop is None:
        pytest.skip("no readable loop device to give as stdin")
    names = [*DESCRIPTOR_NAMES, "/dev/null"]
    root = fake_drives(tmp_path / "fake", ["/dev/sdzz -d sat", *(f"{n} -d sat" for n in names)])
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    with open(loop if stdin == "block device" and loop else os.devnull, "rb") as given:
        result = run_diskprobe(["sudoers", "--config", str(config_file(tmp_path))], env,
                               stdin=given.fileno())  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    assert "-- /dev/sdzz" in result.stdout, result.stdout
    for name in names:
        assert f"-- {name}" not in result.stdout, name
        warned = [line for line in result.stderr.splitlines() if f"'{name}'" in line]
        assert len(warned) == 1, (name, result.stderr)
        assert warned[0].startswith("W! sudoers: refused drive name: "), warned


@pytest.mark.parametrize("name", DESCRIPTOR_NAMES)
def test_a_configured_descriptor_name_is_a_config_error(
    tmp_path: Path, fake_host: FakeHost, name: str
) -> None:
    root = fake_drives(tmp_path / "fake", [])
    config = config_file(tmp_path, f'devices = ["{name} -d sat"]\n')
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    result = run_diskprobe(["sudoers", "--config", str(config)], env)
    assert result.returncode == 2 and result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("E! config: ") and name in lines[0], lines
