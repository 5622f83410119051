"""The README's first command, verbatim, from a fresh clone: as root with no sudo on the
machine's PATH, and as an unprivileged user with sudo; both must build the venv on Debian's
/usr/bin/python3 even with another `python3` first on PATH (a pyenv build, as root's here).

Each run happens in its own mount namespace with a tmpfs on /opt/diskprobe, so the command's
own path is used as written and the host's /opt/diskprobe (if any) is never touched. Both
run in the serial lane: they run apt-get and add a user and a sudoers file.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from ci import skip_or_fail
from lineproto import parse_lines

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "/opt/diskprobe"  # where the README's command installs
USER = "dp-install-test"
SUDOERS = Path("/etc/sudoers.d") / USER
TOOLS = ("git", "unshare", "runuser", "useradd", "userdel", "visudo", "sudo")
CHECKS = f"""
status=$?
echo "== checks =="
cat {PREFIX}/pyvenv.cfg
{PREFIX}/bin/python -c 'import sys; print("base_executable =", sys._base_executable)'
exit $status
"""

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.serial]


def readme_install_command() -> str:
    return re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text())[0]


def fresh_clone(into: Path) -> Path:
    """A clone of this repository; with uncommitted changes to tracked files, the tree as it
    stands (`git stash create` makes a commit of it without touching the work tree)."""
    source = into / "diskprobe"
    stash = _git("stash", "create").stdout.strip()
    if stash:
        source.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", stash],
                                 capture_output=True, check=True)  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    else:
        _git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(source))
    return source


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args],
                          capture_output=True, text=True, check=True)  # fmt: skip


def decoy_python(into: Path) -> Path:
    """A folder whose `python3` is a working interpreter that is not /usr/bin/python3 (a
    copy of its binary, which finds the same standard library): a command that says plain
    `python3` builds its venv on it, and the test sees that."""
    decoy = into / "decoy-bin"
    decoy.mkdir()
    shutil.copy2(os.path.realpath("/usr/bin/python3"), decoy / "python3")
    return decoy


def without_sudo(into: Path) -> Path:
    """/usr/bin without sudo: symlinks to everything else in it."""
    farm = into / "usr-bin-without-sudo"
    farm.mkdir()
    for entry in os.scandir("/usr/bin"):
        if entry.name != "sudo":
            (farm / entry.name).symlink_to(entry.path)
    return farm


def run_in_namespace(inner: list[str]) -> subprocess.CompletedProcess[str]:
    """`inner` in a private mount namespace with a fresh tmpfs on /opt/diskprobe."""
    made = not os.path.exists(PREFIX)
    os.makedirs(PREFIX, exist_ok=True)
    script = f'mount -t tmpfs -o mode=0755 diskprobe-install-test {PREFIX} && exec "$@"'
    try:
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *inner],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    finally:
        if made:
            os.rmdir(PREFIX)


def assert_installed_and_ran(result: subprocess.CompletedProcess[str]) -> None:
    output, _, checks = result.stdout.partition("== checks ==")
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    batch = [line for line in output.splitlines() if line.startswith("diskprobe_")]
    assert {p.measurement for p in parse_lines("\n".join(batch))} >= {"diskprobe_io"}
    config = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition("=") for line in checks.splitlines())
        if value
    )
    assert config["home"] == "/usr/bin", checks
    assert os.path.realpath(config["base_executable"]) == os.path.realpath("/usr/bin/python3")


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A 0755 folder outside root's 0700 pytest tmp, which another user can enter."""
    for tool in TOOLS:
        if shutil.which(tool) is None:
            skip_or_fail(f"{tool} is not installed (tests/run.sh installs it)")
    if os.geteuid() != 0:
        skip_or_fail("the install test needs root (mount namespaces, users, apt-get)")
    path = Path(tempfile.mkdtemp(prefix="diskprobe-install-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_readme_install_command_as_root_without_sudo(workdir: Path) -> None:
    source = fresh_clone(workdir)
    path = f"{decoy_python(workdir)}:{without_sudo(workdir)}:/usr/sbin:/sbin"
    assert shutil.which("sudo", path=path) is None
    assert shutil.which("python3", path=path) != "/usr/bin/python3"
    command = readme_install_command() + "\n" + CHECKS
    env = ["env", "-i", f"PATH={path}", "HOME=/root", "LANG=C.UTF-8"]
    result = run_in_namespace(["sh", "-c", f"cd {source} && exec {' '.join(env)} bash -c "
                               + shlex.quote(command)])  # fmt: skip
    assert_installed_and_ran(result)


@pytest.fixture
def sudo_user() -> Iterator[str]:
    """An unprivileged user who may run anything through sudo (no password): an admin's
    account on a fresh server."""
    subprocess.run(["userdel", "-r", USER], capture_output=True, check=False)  # a leftover
    subprocess.run(["useradd", "-m", "-s", "/bin/bash", USER], check=True)
    try:
        rule = f"{USER} ALL=(ALL:ALL) NOPASSWD: ALL\n"
        SUDOERS.write_text(rule)
        SUDOERS.chmod(0o440)
        subprocess.run(["visudo", "-cf", str(SUDOERS)], capture_output=True, check=True)
        yield USER
    finally:
        SUDOERS.unlink(missing_ok=True)
        subprocess.run(["userdel", "-r", USER], capture_output=True, check=False)


def test_readme_install_command_as_a_user_with_sudo(workdir: Path, sudo_user: str) -> None:
    source = fresh_clone(workdir)
    account = pwd.getpwnam(sudo_user)
    subprocess.run(["chown", "-R", f"{account.pw_uid}:{account.pw_gid}", str(source)], check=True)
    path = f"{decoy_python(workdir)}:/usr/local/bin:/usr/bin:/bin"
    command = readme_install_command() + "\n" + CHECKS
    env = ["env", "-i", f"PATH={path}", f"HOME={account.pw_dir}", "LANG=C.UTF-8"]
    # sh (dash on Debian), not bash: the command must not depend on the user's shell
    inner = f"cd {source} && exec {' '.join(env)} sh -c {shlex.quote(command)}"
    result = run_in_namespace(["runuser", "-u", sudo_user, "--", "sh", "-c", inner])
    assert_installed_and_ran(result)
