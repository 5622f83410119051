"""[latency] through sudo: `diskprobe sudoers` writes a rule for exactly `bpftrace -f json <the
script diskprobe ships>`, which the real sudo allows while refusing bpftrace with any other
argument (`-e`, another script, one more word); a script someone else could change gets no
rule; and an unprivileged agent (`nobody`, the venv built from Debian's python3) reads the
kernel's latency through that rule, its bpftrace gone once the agent is SIGKILLed."""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from diskprobe.collectors.latency import SCRIPT
from diskprobe.files import root_only_problem
from sudo_probe import probe_sudo
from test_latency import tmpfs_loop

from ci import HANG_GUARD_SEC, skip_or_fail, wait_until
from helpers import installed_command
from lineproto import parse_lines

BPFTRACE = shutil.which("bpftrace") or "/usr/bin/bpftrace"


def sudoers_text(tmp_path: Path, users: tuple[str, ...] = ("telegraf",)) -> str:
    config = tmp_path / "diskprobe.toml"
    config.write_text("[smart]\nenabled = false\n[latency]\nenabled = true\nuse_sudo = true\n")
    argv = [*installed_command(), "sudoers", "--config", str(config)]
    for user in users:
        argv += ["--user", user]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=HANG_GUARD_SEC)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.root
def test_sudo_allows_exactly_the_shipped_script(tmp_path: Path) -> None:
    text = sudoers_text(tmp_path)
    assert f"DISKPROBE_BPFTRACE = {BPFTRACE} -f json {SCRIPT}" in text
    sudoers = tmp_path / "sudoers"
    sudoers.write_text(text)
    allowed = [[BPFTRACE, "-f", "json", str(SCRIPT)]]
    other = tmp_path / "other.bt"
    other.write_text("BEGIN { exit(); }\n")
    hostile = [[BPFTRACE, "-e", "BEGIN { exit(); }"], [BPFTRACE, "-f", "json", str(other)],
               [BPFTRACE, str(SCRIPT)], [BPFTRACE, "-f", "json", str(SCRIPT), "-v"],
               [BPFTRACE, "-f", "json", "-e", "BEGIN { exit(); }"]]  # fmt: skip
    _, verdicts = probe_sudo(sudoers, allowed + hostile)
    assert verdicts == [True] + [False] * len(hostile), verdicts


def test_a_script_others_could_change_is_no_script_for_sudo(tmp_path: Path) -> None:
    assert root_only_problem(str(SCRIPT)) is None or os.geteuid() != 0
    script = tmp_path / "latency.bt"
    script.write_text("BEGIN { exit(); }\n")
    if os.geteuid() == 0:
        os.chown(script, 65534, 65534)
        assert "belongs to uid 65534" in str(root_only_problem(str(script)))
        os.chown(script, 0, 0)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # past the umask
    (shared / "x.bt").write_text("")
    assert "writable by others" in str(root_only_problem(str(shared / "x.bt")))


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.serial  # a rule in /etc/sudoers.d, which every sudo on the machine reads
def test_an_unprivileged_agent_times_requests_through_sudo(tmp_path: Path) -> None:
    if shutil.which("bpftrace") is None:
        skip_or_fail("bpftrace is not installed (apt-get install bpftrace)")
    rule = Path("/etc/sudoers.d/diskprobe-latency-test")
    rule.write_text(sudoers_text(tmp_path, ("nobody",)))
    rule.chmod(0o440)
    work = Path(tempfile.mkdtemp(prefix="latency-sudo-"))
    try:
        os.chmod(work, 0o777)
        points, children = _run_as_nobody(work)
    finally:
        rule.unlink()
        shutil.rmtree(work, ignore_errors=True)
    assert [p for p in points if p.measurement == "diskprobe_latency"], "no latency point"
    wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in children),
               "the root bpftrace to exit (EPIPE) after the agent's SIGKILL")  # fmt: skip


def _run_as_nobody(work: Path) -> tuple[list, list[int]]:  # type: ignore[type-arg]
    config = work / "diskprobe.toml"
    config.write_text(f'interval = "1s"\nstate_file = "{work / "state.json"}"\n'
                      "[smart]\nenabled = false\n[jobs]\nenabled = false\n"
                      "[latency]\nenabled = true\nuse_sudo = true\n")  # fmt: skip
    agent = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              *installed_command(), "--config", str(config)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, cwd=work)  # fmt: skip
    children: list[int] = []
    try:
        wait_until(lambda: bool(_bpftrace_pids()) or agent.poll() is not None,
                   "sudo's bpftrace to start")  # fmt: skip
        children = _bpftrace_pids()
        time.sleep(2.0)  # attached: it prints a dump a second from then on
        with tmpfs_loop() as device:
            fd = os.open(f"/dev/{device}", os.O_RDONLY | os.O_DIRECT)
            try:
                for index in range(50):  # direct reads: each one a request
                    os.preadv(fd, [mmap.mmap(-1, 4096)], 4096 * index)
                    time.sleep(0.02)
            finally:
                os.close(fd)
            time.sleep(3.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent.pid, signal.SIGKILL)
        out, err = agent.communicate(timeout=HANG_GUARD_SEC)
    assert children, err.decode("utf-8", "replace")
    return parse_lines(out.decode("utf-8").rsplit("\n", 1)[0] + "\n"), children


def _bpftrace_pids() -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            words = cmdline.read_bytes().split(b"\0")
            if words[:1] == [BPFTRACE.encode()] and str(SCRIPT).encode() in words:
                found.append(int(cmdline.parent.name))
    return found
