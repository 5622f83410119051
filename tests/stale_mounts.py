"""The mounts and loop devices a killed earlier test run left behind, removed when a run starts.

The suite's FUSE helpers (tests/fuse_delay.py under tests/failslow_host.py, tests/fuse_hang.py)
are unmounted when their test ends, failed or not. A run killed as a whole (SIGKILL of the
session: a time-out, a closed terminal, the end of a sandbox's session) ends the helpers too
and leaves their mounts behind with nobody serving them: every statfs of them then fails with
ENOTCONN ("Transport endpoint is not connected"), and every later run that lists the host's
mounts (df, `diskprobe doctor`, the CLI tests that expect a clean stderr) meets a broken mount.
Seen once: two /tmp/failslow-*/mnt mounts of a killed run, with their seven loop devices,
failed 13 tests of the next run.

Only the helpers' own mounts are touched (source "fuse_delay" or "fuse_hang" in the mount
table), and only when no helper process serving that mount point is alive: a run beside this
one on the same machine keeps its mounts. Run as root (umount, losetup); as another user it
does nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from diskprobe.sources.mountinfo import Mount, parse_mountinfo

HELPERS = {"fuse_delay": "fuse_delay.py", "fuse_hang": "fuse_hang.py"}  # mount source: script
WORKDIR_PREFIX = "failslow-"  # tests/failslow_host.py's temporary folder, the mount's parent


def _helper_processes(proc: Path) -> list[list[str]]:
    """The command lines of the running helper processes."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "surrogateescape").split("\0")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(os.path.basename(arg) in HELPERS.values() for arg in argv):
            found.append(argv)
    return found


def orphaned(mounts: list[Mount], helpers: list[list[str]]) -> list[Mount]:
    """The helpers' mounts that no running helper serves (its mount point is in its argv)."""
    served = {arg for argv in helpers for arg in argv}
    return [m for m in mounts if m.source in HELPERS and m.mount_point not in served]


def _loop_devices_on(mount_point: str, sys_block: Path) -> list[str]:
    """Loop devices whose backing file lies under `mount_point`."""
    devices = []
    for backing in sys_block.glob("loop*/loop/backing_file"):
        try:
            path = backing.read_text(errors="surrogateescape").strip()
        except OSError:
            continue
        if path.startswith(mount_point.rstrip("/") + "/"):
            devices.append(backing.parent.parent.name)
    return devices


def reap(proc: Path = Path("/proc"), sys_block: Path = Path("/sys/block")) -> list[str]:
    """Detach and unmount what killed runs left; one line per mount removed."""
    if os.geteuid() != 0:
        return []
    mounts = parse_mountinfo((proc / "self" / "mountinfo").read_text(errors="surrogateescape"))
    done = []
    for mount in orphaned(mounts, _helper_processes(proc)):
        loops = _loop_devices_on(mount.mount_point, sys_block)
        for device in loops:
            subprocess.run(["losetup", "-d", f"/dev/{device}"], capture_output=True, timeout=30)
        # -l: a dead FUSE mount may still be "busy"; it goes as soon as nothing uses it.
        unmounted = subprocess.run(["umount", "-l", mount.mount_point], capture_output=True,
                                   timeout=30).returncode == 0  # fmt: skip
        workdir = Path(mount.mount_point).parent
        if unmounted and workdir.name.startswith(WORKDIR_PREFIX):
            shutil.rmtree(workdir, ignore_errors=True)
        state = "unmounted" if unmounted else "could not be unmounted"
        detached = f", loop devices {' '.join(loops)} detached" if loops else ""
        done.append(f"{mount.source} mount {mount.mount_point} of a killed run {state}{detached}")
    return done


if __name__ == "__main__":
    for line in reap():
        print(line)
