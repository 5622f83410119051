"""`diskprobe diagnose`'s targets, through the installed command (issue 37, items 6, 7, 11).

- `--cgroup` resolves only under HOST_SYS/fs/cgroup (its v2 root, `unified`, `blkio`): a
  directory planted in the current directory is never taken, nor a path outside it or with
  a `..` step (one E! line, exit 2);
- `--pid` takes ASCII digits only (Python's int() reads any script's: `٣` was pid 3);
- a kernel thread (pid 2, kthreadd) is said to be one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci import skip_or_fail
from helpers import installed_command

PF_KTHREAD = 0x00200000


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A process that waits: something real for a cgroup.procs to list."""
    process = subprocess.Popen(["sleep", "600"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait(10)


def _diagnose(*args: str, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [*installed_command(), "diagnose", *args, "--seconds", "0.3", "--format", "json"],
        capture_output=True, text=True, timeout=60, cwd=cwd, env={**os.environ, **(env or {})},
    )  # fmt: skip


def _one_error(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("E! "), done.stderr
    assert says in done.stderr, done.stderr


def _plant(directory: Path, pid: int) -> Path:
    directory.mkdir(parents=True)
    (directory / "cgroup.procs").write_text(f"{pid}\n")
    return directory


def test_a_cgroup_planted_in_the_current_directory_is_not_taken(tmp_path: Path,
                                                                 sleeper: int) -> None:  # fmt: skip
    name = f"planted-{os.getpid()}.slice"  # no cgroup of that name under /sys/fs/cgroup
    _plant(tmp_path / name, sleeper)
    _one_error(_diagnose("--cgroup", name, cwd=tmp_path), f"no cgroup '{name}' under ")


@pytest.mark.parametrize("path", ["{tmp}/planted", "{tmp}/../{tmp_name}/planted",
                                  "/sys/fs/cgroup/../..{tmp}/planted", "../planted"])  # fmt: skip
def test_a_cgroup_path_outside_the_hierarchy_or_with_dot_dot_is_one_error(
    tmp_path: Path, sleeper: int, path: str,
) -> None:
    _plant(tmp_path / "planted", sleeper)
    given = path.format(tmp=tmp_path, tmp_name=tmp_path.name)
    done = _diagnose("--cgroup", given, cwd=tmp_path / "planted")
    _one_error(done, "no '..' steps" if ".." in given else f"no cgroup '{given}' under ")


def _watch(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_a_relative_cgroup_is_found_under_host_sys_only(tmp_path: Path, sleeper: int) -> None:
    """HOST_SYS's unified hierarchy holds `job` (the sleeper); the current directory holds a
    `job` too, listing diskprobe's test process itself: only the first is watched, given as
    `job` or as /proc/<pid>/cgroup writes it, `/job`."""
    sys_root = tmp_path / "sys"
    job = _plant(sys_root / "fs" / "cgroup" / "unified" / "job", sleeper)
    _plant(tmp_path / "cwd" / "job", os.getpid())
    for given in ("job", "/job", str(job)):
        report = _watch(_diagnose("--cgroup", given, cwd=tmp_path / "cwd",
                                  env={"HOST_SYS": str(sys_root)}))  # fmt: skip
        assert report["target"] == f"cgroup {job}", (given, report["target"])
        assert [process["pid"] for process in report["processes"]] == [sleeper]
        assert not any("kernel thread" in note for note in report["notes"])


@pytest.mark.parametrize("pid", ["\u0663", "\uff13", "abc"])  # Arabic-Indic, full-width 3
def test_a_pid_in_digits_other_than_ascii_is_one_error(pid: str) -> None:
    _one_error(_diagnose("--pid", pid), f"diagnose: --pid '{pid}': give a process id")


def _kernel_thread(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return int(stat[stat.rfind(b")") + 2 :].split()[6]) & PF_KTHREAD != 0


def test_a_kernel_thread_is_said_to_be_one() -> None:
    if not _kernel_thread(2):
        skip_or_fail("pid 2 is no kernel thread here (a PID namespace of its own)")
    report = _watch(_diagnose("--pid", "2"))  # idle, or input_cpu: its children run now and then
    assert any(note.startswith("pid 2 (kthreadd) is a kernel thread: ")
               for note in report["notes"]), report["notes"]  # fmt: skip
    text = subprocess.run([*installed_command(), "diagnose", "--pid", "2", "--seconds", "0.3"],
                          capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert "\nnote: pid 2 (kthreadd) is a kernel thread: " in text, text
