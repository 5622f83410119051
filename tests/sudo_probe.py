"""Ask the real sudo what a sudoers file allows, without touching the machine's sudo set-up:
`sudo -n -l -U telegraf COMMAND...` inside `unshare --mount`, with the sudoers, passwd and
group files bind-mounted copies (tests/test_deploy_files.py, tests/faults/test_fault_sudoers.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ci import skip_or_fail


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if path is None:
        skip_or_fail(f"{name} is not installed")
    return path


# The probe runs inside `unshare --mount`: the sudoers, passwd and group files sudo reads are
# bind-mounted copies, visible to this one process tree and gone when it exits.
_PROBE = r"""
import json, subprocess, sys
commands = json.load(open(sys.argv[1]))
def sudo_l(*argv):
    return subprocess.run(["sudo", "-n", "-l", "-U", "telegraf", *argv],
                          capture_output=True, text=True)
listing = sudo_l()
print(json.dumps({"listing": listing.stdout + listing.stderr, "status": listing.returncode,
                  "allowed": [sudo_l(*c).returncode == 0 for c in commands]}))
"""


def probe_sudo(sudoers_file: Path, commands: list[list[str]]) -> tuple[str, list[bool]]:
    """(sudo -l listing for telegraf, whether sudo allows each command) under this file."""
    if os.geteuid() != 0:
        skip_or_fail("needs root: sudo -l -U in a private mount namespace")
    _tool("sudo")
    unshare = _tool("unshare")
    work = Path(tempfile.mkdtemp(prefix="diskprobe-sudoers-"))
    try:
        includes = work / "sudoers.d"
        includes.mkdir()
        shutil.copyfile(sudoers_file, includes / "diskprobe")
        (includes / "diskprobe").chmod(0o440)
        main = work / "sudoers"
        main.write_text(f"Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n@includedir {includes}\n")
        main.chmod(0o440)
        passwd, group = work / "passwd", work / "group"
        shutil.copyfile("/etc/passwd", passwd)
        shutil.copyfile("/etc/group", group)
        if "\ntelegraf:" not in "\n" + passwd.read_text():
            with passwd.open("a") as handle:
                handle.write("telegraf:x:61999:61999::/nonexistent:/usr/sbin/nologin\n")
            with group.open("a") as handle:
                handle.write("telegraf:x:61999:\n")
        (work / "commands.json").write_text(json.dumps(commands))
        script = (
            'mount --bind "$1" /etc/sudoers && mount --bind "$2" /etc/passwd && '
            'mount --bind "$3" /etc/group && shift 3 && exec "$@"'
        )
        result = subprocess.run(
            [unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh",
             str(main), str(passwd), str(group),
             sys.executable, "-c", _PROBE, str(work / "commands.json")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if result.returncode != 0 and "unshare" in result.stderr:
            skip_or_fail(f"no private mount namespace here: {result.stderr.strip()}")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["status"] == 0, report["listing"]
        return report["listing"], report["allowed"]
    finally:
        shutil.rmtree(work)


# Options that change a drive or leak a file (issue #11, item 2), slipped into allowed lines.
SLIPPED = [["-s", "off"], ["-t", "long"], ["--set=standby,now"], ["--set=wcache,off"],
           ["--set=security-freeze"], ["-B", "/etc/shadow"], ["-X"]]  # fmt: skip
# (`-d test` before a disk only prints its type: the regex file allows it as a TYPE word.)


def hostile_lines(smartctl: str, nvme: str, allowed: list[list[str]]) -> list[list[str]]:
    """Every line the issue lists, and each allowed read line with an option slipped in
    (after the program, before `--`, at the end) or its device swapped for another file."""
    lines = [
        ["/bin/sh"], [smartctl, "--scan"], [smartctl, "--version", "-s", "off"],
        [smartctl, "-s", "off", "/dev/sda"], [smartctl, "-t", "long", "/dev/sda"],
        [smartctl, "--set=standby,now", "/dev/sda"], [smartctl, "--set=wcache,off", "/dev/sda"],
        [smartctl, "--set=security-freeze", "/dev/sda"], [smartctl, "-d", "test", "/dev/watchdog"],
        [smartctl, "-B", "/etc/shadow", "/dev/sda"], [smartctl, "--all", "/dev/../etc/shadow"],
        [nvme, "format", "/dev/nvme0"], [nvme, "smart-log", "/dev/nvme0"],
    ]  # fmt: skip
    for line in allowed:
        if "--" not in line:  # --version, --scan-open: with anything added they are refused above
            continue
        cut = line.index("--")
        for extra in SLIPPED:
            lines += [[line[0], *extra, *line[1:]], [*line[:cut], *extra, *line[cut:]],
                      [*line, *extra]]  # fmt: skip
        for other in ("/dev/../etc/shadow", "/dev/watchdog", "/etc/shadow"):
            lines.append([*line[:-1], other])
    return lines
