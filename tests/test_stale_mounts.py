"""tests/stale_mounts.py on a real killed run: a fuse_delay mount whose daemon got SIGKILL.

The scenario runs in a private mount namespace (`unshare --mount`), so the dead mount it makes
is seen by no other test; its loop device is global but idle, and detached by the reaper (or by
the scenario's own clean-up if the reaper failed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci import skip_or_fail

pytestmark = pytest.mark.root

TESTS = Path(__file__).parent

SCENARIO = r"""
import errno, json, os, signal, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import stale_mounts

base = Path(sys.argv[2])
dead, live = base / "failslow-dead" / "mnt", base / "live" / "mnt"
daemons = {}
for mount_point in (dead, live):
    mount_point.mkdir(parents=True)
    daemons[mount_point] = subprocess.Popen(
        [sys.executable, str(Path(sys.argv[1]) / "fuse_delay.py"), str(mount_point),
         "--files", "disk0", "--size", str(1 << 20), "--delays", str(base / "none.json")])
(base / "none.json").write_text("{}")
deadline = time.monotonic() + 10
while not all(os.path.ismount(m) for m in daemons) and time.monotonic() < deadline:
    time.sleep(0.05)
loop = subprocess.run(["losetup", "--find", "--show", str(dead / "disk0")],
                      capture_output=True, text=True, check=True).stdout.strip()
try:
    daemons[dead].send_signal(signal.SIGKILL)
    daemons[dead].wait()
    try:
        os.statvfs(dead)
        before = "answers"
    except OSError as error:
        before = errno.errorcode[error.errno]
    lines = stale_mounts.reap()
    print(json.dumps({
        "before": before, "lines": lines, "loop": os.path.basename(loop),
        "dead_mounted": os.path.ismount(dead), "workdir_left": dead.parent.exists(),
        "loop_bound": os.path.exists(f"/sys/block/{os.path.basename(loop)}/loop/backing_file"),
        "live_mounted": os.path.ismount(live), "live_answers": os.statvfs(live).f_blocks > 0,
    }))
finally:
    subprocess.run(["losetup", "-d", loop], capture_output=True)
    daemons[live].terminate()
    daemons[live].wait(10)
    for mount_point in daemons:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
"""


def test_a_killed_runs_fuse_mount_is_unmounted_and_a_live_one_kept(tmp_path: Path) -> None:
    if os.geteuid() != 0 or not Path("/dev/fuse").exists() or shutil.which("unshare") is None:
        skip_or_fail("needs root, /dev/fuse and unshare (util-linux)")
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", SCENARIO,
         str(TESTS), str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    dead = tmp_path / "failslow-dead" / "mnt"
    assert seen["before"] == "ENOTCONN"  # the state a killed run leaves
    assert seen["lines"] == [
        f"fuse_delay mount {dead} of a killed run unmounted, loop devices {seen['loop']} detached"
    ]
    assert (seen["dead_mounted"], seen["workdir_left"], seen["loop_bound"]) == (False,) * 3
    assert (seen["live_mounted"], seen["live_answers"]) == (True, True)
