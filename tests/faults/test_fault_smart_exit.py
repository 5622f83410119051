"""A smartctl read that brought no drive data, whatever its exit bits (issue #37, item 5).

smartctl(8) defines exit bit 2 as "some SMART or other ATA command to the disk failed" (or a
checksum error): a command failure like bits 0 and 1, not a disk condition. Before, an exit of
4 with no drive data in the output sent `exit_status=4` alone: no W!, and `exec_failures` did
not count it, while 1 and 2 were both. Now a read that brought no drive data (no model,
serial, counter or attribute; a drive left asleep aside) is one W! and one exec failure,
whatever bit is set, through the JSON path (smartctl >= 7.0) and the text path (older
smartctl) alike. Run through the installed command with the fake smartctl.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultlib import FAKE_SMARTCTL, FakeHost, assert_no_traceback, run_diskprobe

DEVICE = "/dev/sda -d sat"
MESSAGE = "Read SMART Data failed: Input/output error"
VERSION_66 = "smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.19.0-6-amd64] (local build)\n"


def json_answer(status: int) -> str:
    """smartctl --json when it could say no more than one message: no drive data."""
    document = {
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 3], "argv": ["smartctl", "--json=c", "--all"],
                     "messages": [{"string": MESSAGE, "severity": "error"}],
                     "exit_status": status},
        "local_time": {"time_t": 1700000000, "asctime": "Tue Nov 14 22:13:20 2023 UTC"},
    }  # fmt: skip
    return json.dumps(document)


def no_data_drive(root: Path, status: int, text_path: bool) -> None:
    case = root / "drive0"
    case.mkdir(parents=True)
    (case / "device").write_text(DEVICE + "\n")
    (case / "exit_status").write_text(f"{status}\n")
    if text_path:  # an old smartctl: no JSON, the text parser reads its answer
        (root / "version").write_text(VERSION_66)
        (case / "response.txt").write_text(VERSION_66 + "\n" + MESSAGE + "\n")
    else:
        (case / "response.json").write_text(json_answer(status))


def smart_agent_fields(stdout: str) -> dict[str, str]:
    (line,) = [line for line in stdout.splitlines()
               if line.startswith("diskprobe_agent,collector=smart,")]  # fmt: skip
    return dict(pair.split("=", 1) for pair in line.split(" ")[1].split(","))


@pytest.mark.parametrize("text_path", [False, True], ids=["json", "text"])
@pytest.mark.parametrize("status", [4, 4 | 64, 0])
def test_a_read_without_drive_data_is_said_and_counted_whatever_bit(
    fake_host: FakeHost, tmp_path: Path, status: int, text_path: bool
) -> None:
    root = tmp_path / "fake"
    no_data_drive(root, status, text_path)
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n[smart]\n'
                      f'smartctl_path = "{FAKE_SMARTCTL}"\ndevices = ["{DEVICE}"]\n')  # fmt: skip
    env = {**fake_host.env(), "FAKE_SMARTCTL_DIR": str(root)}
    result = run_diskprobe(["--config", str(config), "--once", "--interval", "100ms"], env)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    points = [line for line in result.stdout.splitlines() if line.startswith("diskprobe_smart,")]
    assert len(points) == 1, result.stdout
    assert points[0].split(" ")[1] == f"exit_status={status}i", points  # that alone: a failure
    warned = [line for line in result.stderr.splitlines() if line.startswith("W! smart")]
    assert len(warned) == 1 and DEVICE in warned[0], result.stderr
    fields = smart_agent_fields(result.stdout)
    assert fields["exec_failures"] == "1i" and fields["errors"] == "1i", fields
