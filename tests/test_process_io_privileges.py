"""The process_io I! line about unreadable /proc/<pid>/io fits diskprobe's own situation.

The kernel lets a reader see another user's /proc/<pid>/io with CAP_SYS_PTRACE, unless a
security module or the target's parent user namespace refuses it: "run as root" is advice
only for a reader that is not root. Each situation is built for real (a user namespace, a
capability bounding set) and the installed command run in it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.sources.privileges import (
    CAP_SYS_PTRACE,
    has_capability,
    parse_effective_capabilities,
    ptrace_read_advice,
)

from ci import skip_or_fail
from helpers import installed_command

ALL_CAPS = "000001ffffffffff"
NO_PTRACE = f"{int(ALL_CAPS, 16) & ~(1 << CAP_SYS_PTRACE):016x}"
STATUS = "Name:\tdiskprobe\nUmask:\t0022\nCapPrm:\t{0}\nCapEff:\t{0}\nCapBnd:\t{0}\n"
CONFIG = """interval = "1s"
state_file = "{state}"
[io]
enabled = false
[filesystems]
enabled = false
[smart]
enabled = false
[pressure]
enabled = false
[cgroup_io]
enabled = false
"""


def _status(tmp_path: Path, mask: str) -> str:
    path = tmp_path / "status"
    path.write_text(STATUS.format(mask))
    return str(path)


def test_effective_capabilities_from_a_status_file(tmp_path: Path) -> None:
    assert parse_effective_capabilities(STATUS.format("0000000000080000")) == 1 << 19
    assert parse_effective_capabilities("CapEff:\tzz\n") is None
    assert parse_effective_capabilities("Name:\tx\n") is None
    assert has_capability(CAP_SYS_PTRACE, _status(tmp_path, ALL_CAPS)) is True
    assert has_capability(CAP_SYS_PTRACE, _status(tmp_path, NO_PTRACE)) is False
    assert has_capability(CAP_SYS_PTRACE, str(tmp_path / "missing")) is None


def test_advice_for_each_situation(tmp_path: Path) -> None:
    user = ptrace_read_advice(_status(tmp_path, "0"), euid=1000)
    assert user == "run as root or with CAP_SYS_PTRACE to see them"
    capped_root = ptrace_read_advice(_status(tmp_path, NO_PTRACE), euid=0)
    assert capped_root.startswith("root without CAP_SYS_PTRACE")
    assert "run as root" not in capped_root
    full_root = ptrace_read_advice(_status(tmp_path, ALL_CAPS), euid=0)
    assert full_root.startswith("refused although diskprobe holds CAP_SYS_PTRACE as root")
    capped_user = ptrace_read_advice(_status(tmp_path, ALL_CAPS), euid=1000)
    assert capped_user.startswith("refused although diskprobe holds CAP_SYS_PTRACE:")


def _denied_line(argv: list[str], tmp_path: Path) -> str:
    config = tmp_path / "diskprobe.toml"
    config.write_text(CONFIG.format(state=tmp_path / "state.json"))
    done = subprocess.run(
        [*argv, *installed_command(), "--once", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "processes are unreadable" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("I! process_io: ")
    return lines[0]


@pytest.fixture
def foreign_process() -> Iterator[int]:
    """A process of another user (nobody): root without CAP_SYS_PTRACE may not read its io."""
    sleeper = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60"]
    )
    try:
        yield sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.root
def test_root_in_a_user_namespace_is_not_told_to_run_as_root(tmp_path: Path) -> None:
    """A rootless container: root with every capability, but only in its own user
    namespace, so the host's processes stay refused (as PID 1 is to root on some VMs)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail("needs root and unshare (util-linux)")
    line = _denied_line(["unshare", "--user", "--map-root-user"], tmp_path)
    assert "refused although diskprobe holds CAP_SYS_PTRACE as root" in line
    assert "run as root" not in line


@pytest.mark.root
def test_root_without_cap_sys_ptrace_is_told_to_add_it(
    tmp_path: Path, foreign_process: int
) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        skip_or_fail("needs root and setpriv (util-linux)")
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"]
    line = _denied_line(drop, tmp_path)
    assert "root without CAP_SYS_PTRACE" in line and "--cap-add SYS_PTRACE" in line
    assert "run as root" not in line
