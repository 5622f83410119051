#!/usr/bin/env python3
"""What timing every block request ([latency], sources/bpf/latency.bt) costs, and whether the
agent's memory stays flat under process and cgroup churn (issue 36).

Not a pytest module (tests/test_bench_timings.py runs both modes once, quickly). As root:

    python tests/bench/bench_latency.py [--rounds 5] [--seconds 10]
    python tests/bench/bench_latency.py --churn 100000 [--cgroups 1000]

Both use a loop device (--direct-io=on) over a 64 MiB file on tmpfs (/dev/shm), where a
request costs the block layer and a memcpy, the worst case for a per-request probe, and the
installed agent: [latency] on, interval 2s, every other collector off. It is ready once its
output holds a point of this loop device (the bench reads the device until one comes); only
this device's points are counted (parallel test workers' devices are seen as well).

Cost: fio (4 KiB random direct reads, psync, iodepth 1, --thread, --seconds) on the raw
device without the agent and with it, the order swapped every round; then one more run with
the agent, with the kernel's BPF run-time stats on (BPF_ENABLE_STATS: they add two clock
reads to every program run, so never in the compared runs). Min and median over the rounds:
- the IOPS ratio on / off;
- the agent's CPU (utime + stime of it and of its bpftrace child, /proc/<pid>/stat) over the
  two runs with it, in % of one core per 10k IOPS;
- BPF ns per request: run_time_ns of bpftrace's tracepoint programs (fdinfo of its program
  fds) over the stats run, per completion; each round's line splits it by program (start,
  merge, complete: bpftrace loads them in the script's order);
- busy CPU ns per request: the machine's busy time (/proc/stat: all but idle, iowait, steal)
  over fio's requests, on minus off: the programs, the tracepoints around them and bpftrace's
  dumps, and the neighbours' noise (it can come out below 0);
- the share of fio's requests the agent reported for the device.

Churn: --churn short-lived processes forked by two workers; each renames itself (prctl
PR_SET_NAME, a comm of its own), makes one 4 KiB O_DIRECT read of the loop device and exits.
They are spread over --cgroups cgroups under the v2 hierarchy (/sys/fs/cgroup/unified on this
hybrid host), bench-latency-<pid>/cN, made one after another: a worker makes one, moves itself
in (its children start there), forks its share, moves back out and removes it, so cgroup ids
come and go. VmRSS of the agent and of bpftrace: before (3 intervals after the start), at
every 10 % of the processes, after (5 intervals after the last); then their min, median and
max, the agent's latency_dropped (summed) and latency_restarts (last). Every cgroup, the loop
device and its file are removed at the end, also after a failure.

Size: the two benchmarks of issue 36 in one file, sharing the device, the agent and their
clean-up; the docstring says how each measures (about 40 lines of it).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import mmap
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DISKPROBE = [str(Path(sys.executable).with_name("diskprobe"))]
OFF = "\n".join(f"[{name}]\nenabled = false" for name in (
    "io", "filesystems", "smart", "pressure", "process_io", "cgroup_io", "jobs"))  # fmt: skip
FILE_BYTES, BLOCK = 64 * 1024 * 1024, 4096
TICK = os.sysconf("SC_CLK_TCK")
SYS_BPF, BPF_ENABLE_STATS = {"x86_64": 321, "aarch64": 280}.get(platform.machine()), 32
AGENT = re.compile(r"^diskprobe_agent,collector=latency\S* \S*latency_restarts=(\d+)i,"
                   r"latency_dropped=(\d+)i")  # fmt: skip


@contextlib.contextmanager
def loop_device():
    image, device = Path(f"/dev/shm/bench-latency-{os.getpid()}.img"), ""
    try:
        image.write_bytes(os.urandom(1 << 20) * (FILE_BYTES >> 20))
        argv = ["losetup", "--find", "--show", "--direct-io=on", str(image)]
        device = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
        yield Path(device).name
    finally:
        for _ in range(20):  # busy for a moment after its last user
            if not device or subprocess.run(["losetup", "-d", device]).returncode == 0:
                break
            time.sleep(0.25)
        image.unlink(missing_ok=True)


def offset(index: int) -> int:
    return index * 7919 * BLOCK % FILE_BYTES  # spread over the file


def stat_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kb(pid: int) -> int:
    with contextlib.suppress(FileNotFoundError):  # it just ended (a restart)
        return int(re.findall(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())[0])
    return 0


def busy_seconds() -> float:
    user, nice, system, _idle, _wait, irq, softirq = map(int, Path("/proc/stat").read_text()
                                                          .split()[1:8])  # fmt: skip
    return (user + nice + system + irq + softirq) / TICK


class Agent:
    """The installed agent, [latency] only; its output in a file, read when asked."""

    def __init__(self, workdir: Path, device: str) -> None:
        config, self.out = workdir / "diskprobe.toml", workdir / "out.txt"
        config.write_text(f'interval = "2s"\nstate_file = "{workdir}/state.json"\n{OFF}\n'
                          "[latency]\nenabled = true\n")  # fmt: skip
        with open(self.out, "wb") as out, open(workdir / "err.txt", "wb") as err:
            self.process = subprocess.Popen([*DISKPROBE, "--config", str(config)], stdout=out,
                                            stderr=err)  # fmt: skip
        self.tagged = re.compile(rf"^diskprobe_latency,device={device},\S* requests=(\d+)i")
        self.bpftrace = 0
        try:
            self._ready(device, workdir / "err.txt")
        except BaseException:
            self.stop()
            raise

    def _ready(self, device: str, errors: Path) -> None:
        fd, buffer, reads = os.open(f"/dev/{device}", os.O_RDONLY | os.O_DIRECT), mmap.mmap(
            -1, BLOCK), 0  # fmt: skip
        deadline = time.monotonic() + 60
        while not self.reported():  # bpftrace attached, and a batch came with this device
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agent not ready: {errors.read_text()}")
            for index in range(reads, reads + 16):
                os.preadv(fd, [buffer], offset(index))
            reads += 16
            time.sleep(0.5)
        os.close(fd)
        self.bpftrace = self.child()

    def child(self) -> int:
        """bpftrace's pid now (a restart starts another); 0 while there is none."""
        tasks = Path(f"/proc/{self.process.pid}/task")  # a thread of the agent started it
        found = "".join(p.read_text() for p in tasks.glob("*/children")).split()
        self.bpftrace = int(found[0]) if found else 0
        return self.bpftrace

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines()

    def reported(self) -> int:
        """Requests of this loop device in the agent's points so far."""
        return sum(int(match[1]) for match in map(self.tagged.match, self.lines()) if match)

    def settle(self, batches: int) -> None:
        """Until `batches` more batches came (what was timed before is then reported)."""
        until = sum(map(bool, map(AGENT.match, self.lines()))) + batches
        while sum(map(bool, map(AGENT.match, self.lines()))) < until and (
                self.process.poll() is None):  # fmt: skip
            time.sleep(0.2)

    def counters(self) -> tuple[int, int]:
        """latency_dropped summed over the batches, latency_restarts of the last one."""
        found = [match for match in map(AGENT.match, self.lines()) if match]
        return sum(int(match[2]) for match in found), int(found[-1][1]) if found else -1

    def cpu(self) -> float:
        return stat_cpu(self.process.pid) + stat_cpu(self.bpftrace)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        deadline = time.monotonic() + 10
        while self.bpftrace and Path(f"/proc/{self.bpftrace}").exists() and (
                time.monotonic() < deadline):  # fmt: skip
            time.sleep(0.05)  # its programs are detached once it is gone


def fio(device: str, seconds: float) -> dict[str, float]:
    argv = ["fio", f"--filename=/dev/{device}", "--direct=1", "--ioengine=psync",
            "--iodepth=1", "--bs=4k", "--rw=randread", "--time_based", f"--runtime={seconds:g}",
            "--norandommap", "--randrepeat=0", "--thread", "--name=read",
            "--output-format=json"]  # fmt: skip
    busy, started = busy_seconds(), time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    wall, read = time.monotonic() - started, json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return {"iops": float(read["iops"]), "ios": int(read["total_ios"]), "wall": wall,
            "busy": busy_seconds() - busy}  # fmt: skip


def programs(pid: int) -> dict[int, tuple[int, int]]:
    """bpftrace's tracepoint programs: prog_id -> (run_time_ns, run_cnt)."""
    found = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == "anon_inode:bpf-prog":
                info = dict(re.findall(r"(\w+):\s+(\S+)", Path(f"/proc/{pid}/fdinfo/{fd.name}")
                                       .read_text()))  # fmt: skip
                if info.get("prog_type") == "5":  # BPF_PROG_TYPE_TRACEPOINT
                    found[int(info["prog_id"])] = (int(info["run_time_ns"]), int(info["run_cnt"]))
    return found


@contextlib.contextmanager
def bpf_stats():
    """The kernel's BPF run-time stats, on while the fd BPF_ENABLE_STATS gives is open."""
    attr = ctypes.create_string_buffer(16)  # enable_stats.type = BPF_STATS_RUN_TIME (0)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, len(attr)) if SYS_BPF else -1
    if fd < 0:
        raise OSError(ctypes.get_errno(), "BPF_ENABLE_STATS")
    try:
        yield
    finally:
        os.close(fd)


def cost_round(device: str, seconds: float, workdir: Path, on_first: bool) -> dict[str, float]:
    runs = {} if on_first else {"off": fio(device, seconds)}
    agent = Agent(workdir, device)
    try:
        before, cpu = agent.reported(), agent.cpu()
        runs["on"] = fio(device, seconds)
        first = programs(agent.bpftrace)
        with bpf_stats():
            runs["stats"] = fio(device, seconds)
            last = programs(agent.bpftrace)
        cpu = agent.cpu() - cpu
        agent.settle(2)
        reported, (dropped, restarts) = agent.reported() - before, agent.counters()
    finally:
        agent.stop()
    on, stats, off = runs["on"], runs["stats"], runs.get("off") or fio(device, seconds)
    ns = [last[key][0] - first[key][0] for key in sorted(last)]
    completed = max(last[key][1] - first[key][1] for key in last)
    print(f"  off {off['iops']:6.0f} IOPS  on {on['iops']:6.0f}  ratio "
          f"{on['iops'] / off['iops']:.3f}  BPF ns per request "
          + " + ".join(f"{n / completed:.0f}" for n in ns)
          + f"  latency_dropped {dropped} restarts {restarts}", flush=True)  # fmt: skip
    ios, wall = on["ios"] + stats["ios"], on["wall"] + stats["wall"]
    return {"ratio": on["iops"] / off["iops"], "cpu": 100 * cpu / wall / (ios / wall / 1e4),
            "bpf": sum(ns) / completed, "seen": 100 * reported / ios,
            "busy": 1e9 * (on["busy"] / on["ios"] - off["busy"] / off["ios"])}  # fmt: skip


def churn_worker(device: str, group: Path, cgroups: range, per: int, done) -> None:  # type: ignore[no-untyped-def]
    prctl, mine = ctypes.CDLL(None).prctl, str(os.getpid()).encode()
    fd, buffer = os.open(f"/dev/{device}", os.O_RDONLY | os.O_DIRECT), mmap.mmap(-1, BLOCK)
    for cgroup in cgroups:
        path = group / f"c{cgroup}"
        path.mkdir()
        (path / "cgroup.procs").write_bytes(mine)
        for index in range(cgroup * per, (cgroup + 1) * per):
            if os.fork() == 0:
                prctl(15, f"lat{index:07d}".encode(), 0, 0, 0)  # PR_SET_NAME
                os.preadv(fd, [buffer], offset(index))
                os._exit(0)
            os.wait()
        (group / "cgroup.procs").write_bytes(mine)
        path.rmdir()
        with done.get_lock():
            done.value += per


def churn(device: str, processes: int, cgroups: int, workdir: Path) -> None:
    root = next(p for p in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
                if (p / "cgroup.controllers").exists())  # fmt: skip
    group, per, table = root / f"bench-latency-{os.getpid()}", processes // cgroups, []
    context, agent = multiprocessing.get_context("fork"), Agent(workdir, device)
    done, workers = context.Value("q", 0), []

    def checkpoint(label: str) -> None:
        child = agent.child()  # after a restart: the new one's (the agent says latency_restarts)
        table.append((rss_kb(agent.process.pid), rss_kb(child) if child else 0))
        print(f"  {label:<6} {done.value:>8} processes  VmRSS agent {table[-1][0]:>7} kB  "
              f"bpftrace {table[-1][1]:>7} kB", flush=True)  # fmt: skip

    try:
        agent.settle(3)
        checkpoint("before")
        group.mkdir()
        started, made = time.monotonic(), agent.reported()
        workers = [context.Process(target=churn_worker, args=(
            device, group, range(w, cgroups, 2), per, done)) for w in range(2)]  # fmt: skip
        for worker in workers:
            worker.start()
        while any(worker.is_alive() for worker in workers):
            if len(table) * per * cgroups / 10 <= done.value < per * cgroups:
                checkpoint("during")
            time.sleep(0.1)
        took = time.monotonic() - started
        agent.settle(5)
        checkpoint("after")
        reported, (dropped, restarts) = agent.reported() - made, agent.counters()
    finally:
        for worker in workers:
            worker.terminate()  # done by now, unless the bench failed
            worker.join(60)
        for path in [*group.glob("c*"), group] if group.exists() else []:
            with contextlib.suppress(OSError):
                path.rmdir()
        agent.stop()
    if restarts:
        print("the agent's stderr:", (workdir / "err.txt").read_text()[-2000:])
    print(f"{done.value} processes in {took:.1f} s, {cgroups} cgroups of {per}; the agent "
          f"reported {reported} requests of {device}; latency_dropped {dropped}, "
          f"latency_restarts {restarts}")  # fmt: skip
    for column, name in enumerate(("agent VmRSS, kB", "bpftrace VmRSS, kB")):
        values = [row[column] for row in table]
        print(f"{name:<36} min {min(values)}  median {statistics.median(values):.0f}  "
              f"max {max(values)}  after - before {values[-1] - values[0]}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--churn", type=int, default=0, help="processes (the churn mode)")
    parser.add_argument("--cgroups", type=int, default=1000)
    args = parser.parse_args()
    with loop_device() as device, tempfile.TemporaryDirectory(prefix="bench-latency-") as work:
        if args.churn:
            churn(device, args.churn, min(args.cgroups, args.churn), Path(work))
            return
        print(f"fio on {device}: 4 KiB random direct reads, iodepth 1, {args.seconds:g} s a run")
        rounds = [cost_round(device, args.seconds, Path(work), index % 2 == 1)
                  for index in range(args.rounds)]  # fmt: skip
    for key, name in (("ratio", "IOPS ratio, on / off"),
                      ("cpu", "agent CPU, % of a core per 10k IOPS"),
                      ("bpf", "BPF ns per request"), ("busy", "busy CPU ns per request, on - off"),
                      ("seen", "reported for the device, % of fio's")):  # fmt: skip
        values = [figures[key] for figures in rounds]
        print(f"{name:<36} min {min(values):.3f}  median {statistics.median(values):.3f}")


if __name__ == "__main__":
    main()
