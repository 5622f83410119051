"""A fake host's /proc and /sys for the agent's job watch (HOST_PROC, HOST_SYS): processes
with their threads' stat, syscall and io, command lines, environments, cgroups, open files
and mount tables, as the kernel prints them. The job collector reads it as it reads a
container's view of a real host (tests/test_jobs_collector.py).

    host = FakeJobsHost(tmp_path)
    host.process(100, ppid=1, cmdline=["python3", "train.py"], env={"RANK": "1"},
                 cgroup="/kubepods.slice/.../cri-containerd-<id>.scope")
    host.thread(100, 100, "S", syscall=FUTEX)        # the loop waits on its runtime
    host.thread(100, 101, "R", rchar=0)              # the runtime's pool runs
    host.open_file(200, 3, host.data_file)           # a worker blocked in read() on it
    host.thread(200, 200, "D", syscall=read_on(3))
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# Each thread's schedstat counts its runs: a thread rewritten by the test has run (the sampler
# reads its stat again only then, as it does on a real host).
# A real /proc/<pid>/stat line (Linux 6.18, `sleep`), 52 fields; comm "(sleep)"; its start
# time (field 22) 1456242 ticks: 14562 s after boot at 100 ticks a second; arg_start (48)
# 140737453161194.
STAT = ("31208 (sleep) S 31202 31202 26485 0 -1 4194304 129 0 7 0 11 3 0 0 20 0 1 0 1456242 "
        "2990080 413 18446744073709551615 94266789998592 94266790016521 140737453153040 0 0 0 "
        "0 6 0 1 0 0 17 0 0 0 5 0 0 94266790030608 94266790031872 94267679760384 "
        "140737453161194 140737453161202 140737453161202 140737453162473 0\n")  # fmt: skip
ARG_START = "140737453161194"  # field 48: where the arguments start; moves at every exec
UPTIME = "20000.00 39000.00\n"  # long after the processes started: all old enough
FUTEX = "202 0x7f0 0x80 0x0 0x0 0x0 0x0 0x7ffc 0x7f49"
POLL = "7 0x7ffc 0x2 0xffffffff 0x0 0x0 0x0 0x7ffc 0x7f49"
RUNNING = "running"
MOUNT_ID = 36


def read_on(fd: int) -> str:
    return f"0 {fd:#x} 0x7f49 0x40000 0x0 0x0 0x0 0x7ffc 0x7f49"


class FakeJobsHost:
    def __init__(self, root: Path) -> None:
        self.proc, self.sys = root / "proc", root / "sys"
        self.data = root / "data"
        self.data.mkdir(parents=True)
        self.data_file = self.data / "sample-000.bin"
        self.data_file.write_bytes(b"\0" * 4096)
        device = os.stat(self.data_file).st_dev
        self.devno = f"{os.major(device)}:{os.minor(device)}"
        self.proc.mkdir(parents=True)
        (self.proc / "uptime").write_text(UPTIME)
        (self.proc / "diskstats").write_text(
            f" {self.devno.replace(':', ' ')} fakedisk 5 0 40 9 0 0 0 0 0 9 9 0 0 0 0 0 0\n")
        (self.sys / "dev" / "block").mkdir(parents=True)
        (self.sys / "dev" / "block" / self.devno).symlink_to(
            "../../devices/virtual/block/fakedisk")

    @property
    def env(self) -> dict[str, str]:
        return {"HOST_PROC": str(self.proc), "HOST_SYS": str(self.sys)}

    def process(self, pid: int, ppid: int, cmdline: list[str], env: dict[str, str] | None = None,
                cgroup: str = "/", comm: str = "python3") -> None:  # fmt: skip
        base = self.proc / str(pid)
        (base / "task").mkdir(parents=True)
        (base / "fd").mkdir()
        (base / "fdinfo").mkdir()
        (base / "cmdline").write_bytes(b"".join(os.fsencode(word) + b"\0" for word in cmdline))
        (base / "environ").write_bytes(b"".join(os.fsencode(f"{key}={value}") + b"\0"
                                                for key, value in (env or {}).items()))
        (base / "cgroup").write_bytes(os.fsencode(f"0::{cgroup}\n"))
        (base / "comm").write_bytes(os.fsencode(comm) + b"\n")
        (base / "io").write_text(_io(0, 0))
        mount_point = os.fsencode(self.data).replace(b" ", b"\\040")
        (base / "mountinfo").write_bytes(b"%d 25 %s / %s rw - ext4 /dev/fakedisk rw\n"
                                         % (MOUNT_ID, self.devno.encode(), mount_point))
        self.thread(pid, pid, "S", ppid=ppid, comm=comm, syscall=POLL)

    def thread(self, pid: int, tid: int, state: str, syscall: str = FUTEX, ppid: int = 1,
               comm: str = "python3", rchar: int = 0, arg_start: str = ARG_START) -> None:
        task = self.proc / str(pid) / "task" / str(tid)
        task.mkdir(parents=True, exist_ok=True)
        if tid == pid and (task / "stat").exists():
            ppid = int((task / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        line = STAT.replace("31208 (sleep) S 31202", f"{tid} ({comm}) {state} {ppid}")
        (task / "stat").write_bytes(os.fsencode(line.replace(ARG_START, arg_start)))
        (task / "syscall").write_text(syscall + "\n")
        (task / "io").write_text(_io(rchar, 0))
        runs = int((task / "schedstat").read_text().split()[2]) if (task / "schedstat").exists() \
            else 0  # fmt: skip
        (task / "schedstat").write_text(f"1000 2000 {runs + 1}\n")  # it ran, to be rewritten
        (task / "comm").write_bytes(os.fsencode(comm) + b"\n")

    def open_file(self, pid: int, fd: int, target: Path) -> None:
        (self.proc / str(pid) / "fd" / str(fd)).symlink_to(target)
        (self.proc / str(pid) / "fdinfo" / str(fd)).write_text(
            f"pos:\t0\nflags:\t0100000\nmnt_id:\t{MOUNT_ID}\n")

    def io(self, pid: int, read_bytes: int, write_bytes: int = 0) -> None:
        (self.proc / str(pid) / "io").write_text(_io(read_bytes, write_bytes))

    def execs(self, pid: int, cmdline: list[str], env: dict[str, str]) -> None:
        """The process exec's another program: same pid and start time, new arguments (at a
        new address: arg_start moves), a new environment; its files rewritten in place."""
        base = self.proc / str(pid)
        (base / "cmdline").write_bytes(b"".join(os.fsencode(word) + b"\0" for word in cmdline))
        (base / "environ").write_bytes(b"".join(os.fsencode(f"{key}={value}") + b"\0"
                                                for key, value in env.items()))
        self.thread(pid, pid, "R", RUNNING, arg_start="140737453170000")

    def remove(self, pid: int) -> None:
        shutil.rmtree(self.proc / str(pid))


def _io(read_bytes: int, write_bytes: int) -> str:
    return (f"rchar: {read_bytes}\nwchar: {write_bytes}\nsyscr: 1\nsyscw: 0\n"
            f"read_bytes: {read_bytes}\nwrite_bytes: {write_bytes}\ncancelled_write_bytes: 0\n")
