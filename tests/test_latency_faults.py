"""[latency] when its kernel side misbehaves, through the installed agent with a fake bpftrace
(tests/fake_bpftrace/bpftrace: a real process printing what Debian's bpftrace 0.17 prints, or
its failures): missing, refused (not root), no tracepoint, dying, stalled, hung, flooding,
printing garbage; a comm with bytes that are not UTF-8; a device gone before it was named.
Each time the other collectors go on, the agent stops on SIGTERM, and an I! line says once
why latency is off. The real bpftrace's death with the agent is at the end (root)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from ci import HANG_GUARD_SEC, skip_or_fail, wait_until
from helpers import installed_command
from lineproto import Point, parse_lines

pytestmark = pytest.mark.slow  # each case runs the agent for seconds

FAKE = Path(__file__).with_name("fake_bpftrace") / "bpftrace"
RUN_BATCHES = 4
IO_BATCH = b"diskprobe_agent,collector=io"
GONE_DEV = 250 << 20 | 999  # no such device: it vanished before it could be named


def a_device() -> tuple[str, int]:
    """A block device of this machine: its name and the kernel's dev_t (major << 20 | minor)."""
    for name in sorted(os.listdir("/sys/block")):
        major, _, minor = Path(f"/sys/block/{name}/dev").read_text().strip().partition(":")
        return name, int(major) << 20 | int(minor)
    raise AssertionError("no block device")


def maps(dev: int) -> dict[str, object]:
    both = {f"{dev},R": {"count": 20, "average": 1500, "total": 30000},
            f"{GONE_DEV},R": {"count": 5, "average": 1000, "total": 5000}}  # fmt: skip
    return {"@hist": {f"{dev},R,40": 12, f"{dev},R,41": 8, f"{GONE_DEV},R,40": 5},
            "@dev": both, "@max": {f"{dev},R": 3000, f"{GONE_DEV},R": 1000},
            "@proc": {f"0,{dev},R,\uffffffffok": both[f"{dev},R"]},
            "@cgroup": {f"1,{dev},R,40": 20}, "@all": 30, "@unmatched": 1}  # fmt: skip


def run_agent(tmp_path: Path, mode: str, batches: int = RUN_BATCHES,
              path: str = str(FAKE)) -> tuple[list[Point], str]:  # fmt: skip
    """The agent at a 1 s interval until it wrote `batches` batches of [io] (its cadence, not a
    wall-clock time: a loaded machine starts it slowly), then SIGTERM."""
    dump = tmp_path / "maps.json"
    dump.write_text(json.dumps(maps(a_device()[1])))
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'interval = "1s"\nstate_file = "{tmp_path / "state.json"}"\n'
                      "[smart]\nenabled = false\n[jobs]\nenabled = false\n"
                      f'[latency]\nenabled = true\nbpftrace_path = "{path}"\n')  # fmt: skip
    env = {**os.environ, "FAKE_BPFTRACE": mode.replace("FILE", str(dump)),
           "FAKE_BPFTRACE_PIDS": str(tmp_path / "pids")}  # fmt: skip
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        agent = subprocess.Popen([*installed_command(), "--config", str(config)], env=env,
                                 stdout=stdout, stderr=stderr)  # fmt: skip
    try:
        wait_until(lambda: out.read_bytes().count(IO_BATCH) >= batches or (
            agent.poll() is not None), f"{batches} batches")  # fmt: skip
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=HANG_GUARD_SEC)  # a hang here is the bug
    errors = err.read_bytes().decode("utf-8", "replace")
    assert agent.returncode == 0, errors
    return parse_lines(out.read_text(encoding="utf-8")), errors


def of(points: list[Point], measurement: str) -> list[Point]:
    return [point for point in points if point.measurement == measurement]


def agent_field(points: list[Point], name: str) -> list[int]:
    return [int(p.fields[name]) for p in of(points, "diskprobe_agent")
            if p.tags["collector"] == "latency" and name in p.fields]  # fmt: skip


def test_dumps_become_points_a_hostile_comm_escaped_a_vanished_device_left_out(
    tmp_path: Path,
) -> None:
    points, err = run_agent(tmp_path, "dumps FILE")
    name, _ = a_device()
    latency = of(points, "diskprobe_latency")
    assert latency and {p.tags["device"] for p in latency} == {name}, latency
    assert all(int(p.fields["requests"]) % 20 == 0 for p in latency)  # whole dumps only
    processes = of(points, "diskprobe_process_latency")
    assert processes and {p.tags["process"] for p in processes} == {"%FFok"}
    assert sum(agent_field(points, "latency_dropped")) > 0  # 30 timed, at most 25 in a map
    assert of(points, "diskprobe_io"), "the other collectors went on"
    assert "E! " not in err and "W! " not in err, err


@pytest.mark.parametrize(("mode", "path", "says"), [
    ("root", str(FAKE), "bpftrace runs only as root"),
    ("tracepoint", str(FAKE), "no block:block_io_start tracepoint"),
    ("hang", "/nonexistent/bpftrace", "cannot start /nonexistent/bpftrace"),
])  # fmt: skip
def test_a_tool_that_cannot_run_is_one_info_line_and_the_rest_goes_on(
    tmp_path: Path, mode: str, path: str, says: str
) -> None:
    points, err = run_agent(tmp_path, mode, path=path)
    assert not of(points, "diskprobe_latency") and of(points, "diskprobe_io")
    lines = [line for line in err.splitlines() if line.startswith("I! latency: off: ")]
    assert len(lines) == 1 and says in lines[0], err
    assert set(agent_field(points, "latency_restarts")) == {0}  # never tried again


def test_a_dying_child_is_restarted_and_counted(tmp_path: Path) -> None:
    points, _ = run_agent(tmp_path, "dumps FILE 2", batches=6)
    assert max(agent_field(points, "latency_restarts")) >= 1
    assert (tmp_path / "pids").read_text().count("\n") >= 2
    assert of(points, "diskprobe_latency")


def test_a_stalled_child_leaves_no_stale_points(tmp_path: Path) -> None:
    """Two dumps, then silence: their requests are counted once, never again."""
    points, _ = run_agent(tmp_path, "stall FILE", batches=5)
    requests = [int(p.fields["requests"]) for p in of(points, "diskprobe_latency")]
    assert sum(requests) == 2 * 20, requests


@pytest.mark.parametrize("mode", ["hang", "flood", "garbage FILE"])
def test_hung_flooding_or_garbled_output_never_stops_the_loop(tmp_path: Path, mode: str) -> None:
    points, err = run_agent(tmp_path, mode)
    batches = [p for p in of(points, "diskprobe_agent") if p.tags["collector"] == "io"]
    assert len(batches) >= 2, err  # the loop kept its cadence
    if mode.startswith("garbage"):
        assert of(points, "diskprobe_latency"), "valid dumps between the garbage were kept"
    else:
        assert not of(points, "diskprobe_latency")


@pytest.mark.root
@pytest.mark.parametrize("through", ["direct", "grandchild"])
def test_bpftrace_dies_with_a_sigkilled_agent(tmp_path: Path, through: str) -> None:
    """The agent's process group SIGKILLed: a direct bpftrace child dies by PDEATHSIG; one
    behind another process (as behind sudo, where PDEATHSIG does not reach) by EPIPE."""
    real = shutil.which("bpftrace")
    if os.geteuid() != 0 or real is None:
        skip_or_fail("needs root and bpftrace (apt-get install bpftrace)")
    path = real
    if through == "grandchild":
        path = str(tmp_path / "wrapper")
        Path(path).write_text(f'#!/bin/sh\n{real} "$@" &\necho $! > {tmp_path}/pids\nwait\n')
        os.chmod(path, 0o755)
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'interval = "1s"\nstate_file = "{tmp_path / "state.json"}"\n'
                      f'[latency]\nenabled = true\nbpftrace_path = "{path}"\n')  # fmt: skip
    agent = subprocess.Popen([*installed_command(), "--config", str(config)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    assert agent.stdout is not None
    wait_until(lambda: b"diskprobe_agent,collector=latency" in agent.stdout.readline(),
               "the agent's first batch")  # fmt: skip
    children = _bpftrace_of(agent.pid, tmp_path)
    assert children, "no bpftrace under the agent"
    os.killpg(agent.pid, signal.SIGKILL)
    agent.wait(HANG_GUARD_SEC)
    wait_until(lambda: not any(_alive(pid) for pid in children), "bpftrace to exit")


def _bpftrace_of(agent: int, work: Path) -> list[int]:
    pids = [int(word) for word in (work / "pids").read_text().split()] \
        if (work / "pids").exists() else []  # fmt: skip
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = stat.read_bytes()
            if int(text.rsplit(b")", 1)[1].split()[1]) == agent:
                pids.append(int(stat.parent.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"
