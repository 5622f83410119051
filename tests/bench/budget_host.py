"""A synthetic host for bench_fleet_budget.py: HOST_PROC, HOST_SYS, HOST_RUN and a mount-prefix
tree (plus a FAKE_SMARTCTL_DIR) built from a fleet_profiles.Profile, moved on one simulated
10 s interval per `step()`.

What changes between steps, as on a real node: every counter moves (diskstats, each process's
io, each cgroup's io.stat, PSI) at rates that drift and follow a daily curve; short-lived tools
start and exit under new PIDs; Kubernetes pods end and are replaced by new ones (new pod_uid,
container ids, cgroups, processes, and volume mounts under /var/lib/kubelet/pods/<uid>/). The
pods are in budget_pods.py, the block devices in budget_disks.py, the cgroup tree in
budget_cgroups.py. Counters advance by rate x
the REAL seconds since the previous step, because the real diskprobe divides by its own
monotonic clock: so the rates it reports (and its min_bytes_per_sec filter) see the rates the
profile means.
"""

from __future__ import annotations

import math
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from budget_cgroups import CgroupTree
from budget_disks import SERVICE_MS, HostCounters, add_block, diskstats_text, write_smart_case
from budget_pods import PodPlanner
from fleet_host_types import Disk, Mount, Profile, Task
from soak_node import stat_line, write_whole

STEP_SEC = 10.0  # one simulated interval: the default agent interval
TICKS = 100  # USER_HZ


@dataclass
class Proc:
    pid: int
    task: Task
    started: int  # ticks after boot (stat field 22)
    ends: int | None  # the step it exits at; None: lives on
    devnos: list[tuple[int, int]]
    read: float = 0.0
    write: float = 0.0
    blkio: float = 0.0  # ticks (stat field 42)


class SyntheticHost:
    def __init__(self, profile: Profile, root: Path, seed: int, churn: bool = True) -> None:
        self.profile, self.root, self.churn = profile, root, churn
        self.rng = random.Random(seed)
        self.proc, self.sys, self.run = root / "proc", root / "sys", root / "run"
        self.prefix, self.smart = root / "rootfs", root / "smart"
        self.step_index, self.next_pid, self.next_mount_id = 0, 1000, 100
        self.procs: dict[int, Proc] = {}
        self.counters = HostCounters()
        self.devnos = {d.name: (d.major, d.minor) for d in profile.disks}
        self.disks: dict[str, tuple[int, int]] = dict(self.devnos)  # + PVC devices (rbdN)
        self.mounts: list[Mount] = list(profile.mounts)
        self.events = {"pods_replaced": 0, "processes_started": 0, "processes_exited": 0}
        self._mountinfo = ""
        self._build()
        self.pods = PodPlanner(self, profile.pods)

    # -- the fixed tree ---------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return {"HOST_PROC": str(self.proc), "HOST_SYS": str(self.sys), "HOST_RUN": str(self.run),
                "HOST_MOUNT_PREFIX": str(self.prefix), "FAKE_SMARTCTL_DIR": str(self.smart),
                "FAKE_SMARTCTL_LOG": os.devnull}  # fmt: skip

    def _build(self) -> None:
        for path in (self.proc / "pressure", self.proc / "sys" / "kernel", self.run / "udev" /
                     "data", self.sys / "dev" / "block", self.smart, self.prefix):  # fmt: skip
            path.mkdir(parents=True, exist_ok=True)
        (self.proc / "stat").write_text("cpu 1 1 1 1\nbtime 1700000000\n")
        (self.proc / "sys" / "kernel" / "task_delayacct").write_text("1\n")
        self.cgroups = CgroupTree(self.sys / "fs" / "cgroup")
        for disk in self.profile.disks:
            self.add_block(disk.name, disk.major, disk.minor, None, disk)
            for suffix in disk.partitions:
                minor = disk.minor + int("".join(c for c in suffix if c.isdigit()))
                self.add_block(disk.name + suffix, disk.major, minor, disk.name, None)
            if disk.smart_case:
                write_smart_case(self.smart, disk)
        for service in self.profile.services:
            self.cgroups.add(f"/system.slice/{service}")
        for task in self.profile.daemons:
            for _ in range(task.copies):
                self.spawn(task, None)
        names = ("kworker/", "ksoftirqd/", "migration/", "rcu_gp", "bash", "sleep", "agetty")
        for index in range(self.profile.idle):
            self.spawn(Task(names[index % len(names)], 0, "/"), None)

    def add_block(self, name: str, major: int, minor: int, parent: str | None,
                  disk: Disk | None) -> None:  # fmt: skip
        add_block(self.sys, self.run, name, major, minor, parent, disk)

    # -- processes and cgroups --------------------------------------------------------------

    def spawn(self, task: Task, life: int | None, devnos: list[tuple[int, int]] | None = None,
              ) -> Proc:  # fmt: skip
        pid, self.next_pid = self.next_pid, self.next_pid + self.rng.randint(1, 40)
        if devnos is None:
            devnos = self._task_devnos(task)
        ends = None if life is None else self.step_index + life
        started = int((3600 + self.step_index * STEP_SEC) * TICKS)
        proc = self.procs[pid] = Proc(pid, task, started, ends, devnos)
        directory = self.proc / str(pid)
        (directory / "task" / str(pid)).mkdir(parents=True)
        (directory / "task" / str(pid) / "stat").symlink_to("../../stat")
        (directory / "status").write_text(f"Name:\t{task.name}\nUid:\t{task.uid}\t{task.uid}\t"
                                          f"{task.uid}\t{task.uid}\n")  # fmt: skip
        (directory / "cmdline").write_bytes(f"/usr/bin/{task.name}\0--serve\0".encode())
        (directory / "cgroup").write_text(f"0::{task.cgroup}\n")
        self._write_proc(proc)
        if task.cgroup != "/":
            self.cgroups.add(task.cgroup)
        self.events["processes_started"] += 1
        return proc

    def _task_devnos(self, task: Task) -> list[tuple[int, int]]:
        if task.device == "*":
            return [devno for name, devno in self.devnos.items() if name.startswith("sd")]
        return [self.devnos[task.device or self.profile.disks[0].name]]

    def _write_proc(self, proc: Proc) -> None:
        stat = stat_line(proc.pid, proc.task.name, proc.started, int(proc.blkio))
        write_whole(self.proc / str(proc.pid) / "stat", stat)
        read, write = int(proc.read), int(proc.write)
        write_whole(self.proc / str(proc.pid) / "io",
                    f"rchar: {read + 4096}\nwchar: {write}\nsyscr: 9\nsyscw: 3\n"
                    f"read_bytes: {read}\nwrite_bytes: {write}\n"
                    "cancelled_write_bytes: 0\n")  # fmt: skip

    def reap(self, proc: Proc) -> None:
        shutil.rmtree(self.proc / str(proc.pid))
        del self.procs[proc.pid]
        self.events["processes_exited"] += 1

    # -- mounts -----------------------------------------------------------------------------

    def mount(self, mount: Mount) -> None:
        self.mounts.append(mount)

    def _write_mountinfo(self) -> None:
        lines = []
        for index, mount in enumerate(self.mounts):
            lines.append(f"{100 + index} 1 {mount.major}:{mount.minor} {mount.root} {mount.path} "
                         f"rw,relatime shared:{index + 1} - {mount.fstype} {mount.source} rw")
        text = "\n".join(lines) + "\n"
        if text != self._mountinfo:
            self._mountinfo = text
            for mount in self.mounts:  # statfs answers for every mount point
                (self.prefix / mount.path.lstrip("/")).mkdir(parents=True, exist_ok=True)
            write_whole(self.proc / "1" / "mountinfo", text)

    # -- one interval -----------------------------------------------------------------------

    def step(self, real_dt: float) -> None:
        """One simulated interval: lifecycle events (with churn), then every counter moves."""
        self.step_index += 1
        if self.churn:
            self.pods.step()
            self._tools()
        for proc in [p for p in self.procs.values() if p.ends is not None and
                     p.ends <= self.step_index]:  # fmt: skip
            self.reap(proc)
        self._move(real_dt)
        self._write_mountinfo()

    def _tools(self) -> None:
        for tool in self.profile.tools:
            if self.rng.random() < tool.per_hour * STEP_SEC / 3600:
                self.spawn(tool.task, self.rng.randint(*tool.life))

    def daily(self) -> float:
        """The load's daily curve: 0.5 at night to 1.5 in the afternoon (simulated time)."""
        hour = (self.step_index * STEP_SEC / 3600 + 9) % 24
        return 1.0 + 0.5 * math.sin((hour - 9) / 24 * 2 * math.pi)

    def _move(self, real_dt: float) -> None:
        # Without churn nothing drifts either: the quick test's "nothing changed" case.
        level, spread = (self.daily(), 0.35) if self.churn else (1.0, 0.0)
        gauss = self.rng.gauss
        for proc in self.procs.values():
            task = proc.task
            if not (task.read or task.write or task.wait):
                continue
            noise = level * math.exp(gauss(0, spread))
            read, write = task.read * noise * real_dt, task.write * noise * real_dt
            proc.read += read
            proc.write += write
            proc.blkio += task.wait * noise * real_dt * TICKS
            self._write_proc(proc)
            share = 1.0 / len(proc.devnos)
            own = self.cgroups.own.get(task.cgroup.strip("/"))
            for devno in proc.devnos:
                kind = next((k for k in SERVICE_MS if self._name(devno).startswith(k)), "sd")
                self.counters.add(devno, read * share, write * share, SERVICE_MS[kind])
                if own is not None:  # whole numbers, as the kernel's: sums stay exact
                    row = own.setdefault(devno, [0.0] * 4)
                    row[0] += int(read * share)
                    row[1] += int(write * share)
                    row[2] += int(read * share / 65536) + 1
                    row[3] += int(write * share / 131072) + 1
        self.counters.busy(real_dt)
        write_whole(self.proc / "diskstats",
                    diskstats_text(self.disks, self.counters, self.profile.disks))  # fmt: skip
        self.cgroups.write()
        some = min(99.0, 2.0 * level * math.exp(gauss(0, spread)))
        total = int(self.step_index * STEP_SEC * some * 1e4)
        write_whole(self.proc / "pressure" / "io",
                    f"some avg10={some:.2f} avg60={some:.2f} avg300={some:.2f} total={total}\n"
                    f"full avg10={some / 2:.2f} avg60={some / 2:.2f} avg300={some / 2:.2f} "
                    f"total={total // 2}\n")  # fmt: skip

    def _name(self, devno: tuple[int, int]) -> str:
        return next((name for name, number in self.disks.items() if number == devno), "sd")
