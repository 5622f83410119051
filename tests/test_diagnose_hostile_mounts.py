"""A job cannot hang `diagnose` through a mount source it controls (issue 37, item 1).

The job runs in a mount namespace of its own and mounts an overlay (anonymous device number:
diagnose looks at the mount's source for the disk) whose source text leads to a FUSE file
whose server no longer answers getattr: `/dev/../<the file>`, or a symlink in /dev/shm (a
tmpfs any user writes) to it. Its loaders read the overlay's files (on the slow loop device:
they wait in D state, so diagnose places those waits). Before the fix, diagnose stat()ed the
source and sat in D state in the FUSE request, unkillable, for as long as the server hung;
now it decides from the text, by lstat and readlink inside devtmpfs only, and reports.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose_host import DatasetHost, dataset_host

from ci import HANG_GUARD_SEC, skip_or_fail
from helpers import installed_command

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.xdist_group("test_diagnose_hostile_mounts")]  # fmt: skip

JOB = Path(__file__).with_name("diagnose_job.py")
DELAY_MS = 4.0
HUNG_MS = 3_600_000.0  # the server answers getattr of that file in an hour: wedged


@pytest.fixture(scope="module")
def host() -> Iterator[DatasetHost]:
    with dataset_host(skip_or_fail, delay_ms=DELAY_MS) as slow:
        yield slow


@contextlib.contextmanager
def wedged_getattr(host: DatasetHost) -> Iterator[Path]:
    """The FUSE file whose getattr never answers while inside; answered again after."""
    slow, stuck = host.slow, host.fuse_file
    table = {name: DELAY_MS for name in slow.files}

    def write(extra: dict[str, object]) -> None:
        temp = slow.delay_file.with_suffix(".tmp")
        temp.write_text(json.dumps({**table, **extra}))
        os.replace(temp, slow.delay_file)
        time.sleep(0.1)  # the daemon polls every 20 ms

    write({stuck.name: HUNG_MS, "@getattr": [stuck.name]})
    try:
        time.sleep(1.5)  # past libfuse's 1 s attribute cache: a stat now asks the server
        yield stuck
    finally:
        write({})


@contextlib.contextmanager
def overlay_job(host: DatasetHost, source: str, work: Path) -> Iterator[int]:
    """diagnose_job.py's loaders reading the dataset through an overlay mounted, in the job's
    own mount namespace, with `source` as its source text."""
    upper, workdir, merged = work / "upper", work / "work", work / "merged"
    for directory in (upper, workdir, merged):
        directory.mkdir()
    options = f"lowerdir={host.data},upperdir={upper},workdir={workdir}"
    script = ('mount -t overlay "$1" -o "$2" "$3" && exec "$4" "$5" files "$3" 2')
    job = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            script, "sh", source, options, str(merged), sys.executable,
                            str(JOB)], stdout=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        assert job.stdout is not None and job.stdout.readline().strip() == b"ready"
        time.sleep(1.0)  # the loaders wait on the overlay's reads
        yield job.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait(HANG_GUARD_SEC)


def diagnose(pid: int) -> dict[str, object]:
    done = subprocess.run([*installed_command(), "diagnose", "--pid", str(pid), "--seconds",
                           "3", "--format", "json"], capture_output=True,
                          timeout=HANG_GUARD_SEC)  # a stat() of the source would hang here
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("through", ["dotdot", "shm-symlink"])
def test_a_mount_source_leading_to_a_wedged_fuse_file_does_not_hang_diagnose(
    host: DatasetHost, tmp_path: Path, through: str
) -> None:
    link = Path("/dev/shm") / f"diskprobe-evil-{os.getpid()}"
    with wedged_getattr(host) as stuck:
        source = f"/dev/..{stuck}"
        if through == "shm-symlink":
            link.symlink_to(stuck)
            source = str(link)
        try:
            with overlay_job(host, source, tmp_path) as pid:
                report = diagnose(pid)
        finally:
            link.unlink(missing_ok=True)
    assert report["bottleneck"] == "disk", report["reasons"]
    assert str(report["mount_point"]).endswith("merged") and report["device"] is None
