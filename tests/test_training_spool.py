"""Where the training output keeps its spool (issue #37, item 10).

`TrainingOutput` without `spool_dir` spools under `$XDG_STATE_HOME/diskprobe/training`, else
under the temp directory: `$TMPDIR/diskprobe-<uid>/training`. Before, that fallback was used
whoever owned `diskprobe-<uid>` (another user could make it first, mode 0777, and then swap
or read the job's batches). Now every directory the spool uses, and every directory above it,
must belong to root or the job's user and be writable by no one else unless sticky (as ssh
checks); otherwise the place is refused with one warning and the training goes on without
points. Each case runs a real training loop (the meter and its output) in a Python process
of its own, with the environment a job would have.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci import skip_or_fail

OTHER_UID = 65534  # nobody
# A training loop: 9 steps in windows of 2, then close(); the server is unreachable, so what
# was stored stays in the spool. Prints the spool it used and "done".
JOB = """
import logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s")
from diskprobe.integrations.input_wait import InputWaitMeter
from diskprobe.integrations.training_output import TrainingOutput

class Clock:
    now = 100.0
    def __call__(self):
        return self.now

clock = Clock()
output = TrainingOutput("http://127.0.0.1:9", "b", job="resnet", timeout=0.2)
meter = InputWaitMeter(window_steps=2, clock=clock, output=output)
meter.start()
for _ in range(9):
    meter.batch_wait(0.03)
    clock.now += 0.04
    meter.step_end()
meter.close()
print(output.spool_dir)
print("done", len(meter.windows))
"""


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A temp directory like /tmp: root's, mode 1777."""
    if os.geteuid() != 0:
        skip_or_fail("needs root to plant a directory owned by another user")
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def run_job(tmp_path: Path, tmpdir: Path, state_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir), "XDG_STATE_HOME": str(state_home),
           "HOME": str(tmp_path / "home")}  # fmt: skip
    for name in ("RANK", "DISKPROBE_JOB", "TORCHELASTIC_RUN_ID", "INFLUX_TOKEN"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-c", JOB], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip


def no_home(tmp_path: Path) -> Path:
    """A state home that cannot be made (under a regular file): the temp fallback is used."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    return blocker / "state"


def warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The warnings but the sender's (the server is down: "write failed ... spooling")."""
    return [line for line in result.stderr.splitlines()
            if line.startswith("WARNING") and "write failed" not in line]  # fmt: skip


def assert_refused_once(result: subprocess.CompletedProcess[str], place: Path) -> None:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout.split("\n")[-2] == "done 4", result.stdout  # the training went on
    (warned,) = warnings(result)
    assert str(place) in warned, warned


def test_a_fallback_parent_another_user_made_is_refused(tmp_path: Path, shared: Path) -> None:
    planted = shared / f"diskprobe-{os.getuid()}"
    planted.mkdir()
    os.chown(planted, OTHER_UID, OTHER_UID)
    planted.chmod(0o777)
    result = run_job(tmp_path, shared, no_home(tmp_path))
    assert_refused_once(result, planted)
    assert list(planted.iterdir()) == []  # nothing made in it, nothing stored there


def test_a_temp_directory_anyone_may_write_without_sticky_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root to make a directory owned by another user")
    wide = tmp_path / "wide"
    wide.mkdir()
    os.chown(wide, OTHER_UID, OTHER_UID)
    wide.chmod(0o777)
    result = run_job(tmp_path, wide, no_home(tmp_path))
    assert_refused_once(result, wide)
    assert list(wide.iterdir()) == []


def test_a_state_home_others_may_write_is_passed_over_for_a_safe_temp_spool(
    tmp_path: Path, shared: Path
) -> None:
    home = tmp_path / "open-home"
    home.mkdir()
    home.chmod(0o777)
    result = run_job(tmp_path, shared, home)
    assert result.returncode == 0 and warnings(result) == [], result.stderr
    spool = shared / f"diskprobe-{os.getuid()}" / "training" / "resnet-rank0"
    assert result.stdout.split("\n")[0] == str(spool), result.stdout
    assert len(list(spool.glob("*.lp"))) == 4  # the windows, kept for the next run
    assert not (home / "diskprobe").exists()
    assert (spool.parent.parent.stat().st_mode & 0o777) == 0o700
