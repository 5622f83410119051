"""`diskprobe diagnose`'s parts that need no real job: the kernel-file parsers, the verdict
rule one branch at a time, cgroup limits on a fake v2 tree, a whole fake /proc tree (a
container's HOST_PROC) through the installed command, and the command's bad input."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from diskprobe.collectors.job_evidence import Snapshot, throttles
from diskprobe.collectors.task_classify import Classifier
from diskprobe.compute.bottleneck import Counts, decide
from diskprobe.roots import HostRoots
from diskprobe.sources.cgroup_limits import job_cgroup, parse_io_max, parse_v1_limit
from diskprobe.sources.file_places import FilePlaces, Place
from diskprobe.sources.tasks import (
    OpenFile,
    parse_fdinfo,
    parse_mapped_files,
    parse_syscall,
    parse_task_stat,
)

from helpers import installed_command

# A real /proc/<pid>/stat line (Linux 6.18, `sleep`), 52 fields; comm "(sleep)".
STAT = (b"31208 (sleep) S 31202 31202 26485 0 -1 4194304 129 0 7 0 11 3 0 0 20 0 1 0 1456242 "
        b"2990080 413 18446744073709551615 94266789998592 94266790016521 140737453153040 0 0 0 "
        b"0 6 0 1 0 0 17 0 0 0 5 0 94266790030608 94266790031872 94267679760384 "
        b"140737453161194 140737453161202 140737453161202 140737453162473 0\n")  # fmt: skip
DATA, DISK, FAST = Place("nvme0n1", "/mnt/data"), Place("nvme0n1", "/mnt/data"), Place("sda")


def test_task_stat_fields_follow_the_last_parenthesis() -> None:
    stat = parse_task_stat(STAT.replace(b"(sleep)", b"(a) b) S 9 (c)"))
    assert stat is not None
    assert (stat.state, stat.ppid, stat.major_faults, stat.cpu_ticks) == ("S", 31202, 7, 14)
    assert (stat.start_ticks, stat.blkio_ticks) == (1456242, 5)


def test_a_short_or_broken_task_stat_is_no_task() -> None:
    words = STAT.split()
    assert parse_task_stat(b" ".join(words[:21])) is None  # no starttime (field 22)
    assert parse_task_stat(b" ".join(words[:22])) is not None  # 22 fields: no blkio ticks
    assert parse_task_stat(STAT.replace(b" 11 3 ", b" x 3 ")) is None
    assert parse_task_stat(STAT.replace(b" 11 3 ", b" \xd9\xa1 3 ")) is None  # Arabic one
    assert parse_task_stat(b"") is None


def test_syscall_file_forms() -> None:
    line = "0 0x3 0x7f495c067000 0x20000 0x7f495c0fab60 0xffffffff 0x0 0x7fff77e8f5c8 0x7f49"
    call = parse_syscall(line)
    assert not isinstance(call, str) and call is not None
    assert (call.number, call.args[0], call.args[2]) == (0, 3, 0x20000)
    assert parse_syscall("running\n") == "running"
    fault = parse_syscall("-1 0x7fff77e8f5c8 0x7f495c1e32ad")
    assert not isinstance(fault, str) and fault is not None and fault.number == -1
    for bad in ("", "x 0x1", "0 0x1 0x2", "-2 0x1", "0 zz 0 0 0 0 0", "\udcff"):
        assert parse_syscall(bad) is None, bad


def test_fdinfo_names_the_mount_without_touching_the_file() -> None:
    assert parse_fdinfo("pos:\t0\nflags:\t0100000\nmnt_id:\t24\nino:\t3\n") == (24, 3)
    assert parse_fdinfo("pos:\t0\nflags:\t02\n") == (None, 0)  # before Linux 3.15
    assert parse_fdinfo("mnt_id:\t-1\nino: x\n") == (None, 0)


def test_mapped_files_leave_out_code_and_anonymous_memory() -> None:
    maps = ("7f2a1c000000-7f2a1c200000 r--s 00000000 07:00 12 /mnt/data/train.arrow\n"
            "7f2a1c200000-7f2a1c300000 r--s 00200000 07:00 12 /mnt/data/train.arrow\n"
            "7f2a00000000-7f2a00100000 r-xp 00000000 fd:01 99 /usr/lib/libc.so.6\n"
            "7f2a00100000-7f2a00200000 rw-p 00000000 00:00 0 \n"
            "55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0 [heap]\n")  # fmt: skip
    assert parse_mapped_files(maps) == {"/mnt/data/train.arrow": ((7, 0), 0x300000)}


def test_cgroup_limit_files() -> None:
    assert parse_io_max("8:16 rbps=2097152 wbps=max riops=max wiops=120\nbad\n") == {
        (8, 16): {"rbps": 2097152, "wiops": 120}}
    assert parse_v1_limit("7:0 1048576\n7:1 x\n8:0\n") == {(7, 0): 1048576}


def counts(running: int = 0, sleeping: int = 0, blocked: int = 0, **waits: int) -> Counts:
    found = Counts(samples=running + sleeping + blocked + sum(waits.values()), running=running,
                   sleeping=sleeping, blocked=blocked)  # fmt: skip
    places = {"read": ("read", DATA), "write": ("write", DATA), "remote": ("read",
              Place(None, "/mnt/s3", True)), "unknown": ("read", Place(None))}  # fmt: skip
    for name, samples in waits.items():
        found.file_waits[places[name]] = samples
    return found


def test_each_branch_of_the_verdict() -> None:
    def verdict(main: Counts, workers: Counts, throttled: frozenset[Place] = frozenset(),
                ended: str | None = None) -> str:  # fmt: skip
        return decide(main, workers, 100, set(throttled), ended).bottleneck

    nothing = Counts()
    assert verdict(counts(running=60, read=40), nothing) == "compute"
    assert verdict(counts(running=40, read=60), nothing) == "disk"
    assert verdict(counts(running=40, write=60), nothing) == "checkpoint"
    assert verdict(counts(running=40, remote=60), nothing) == "remote_fs"
    assert verdict(counts(running=40, read=60), nothing, frozenset({DATA})) == "throttled"
    assert verdict(counts(sleeping=90, running=10), counts(read=150, running=50)) == "disk"
    assert verdict(counts(sleeping=90, running=10), counts(read=50, running=150)) == "input_cpu"
    assert verdict(counts(sleeping=99, running=1), counts(sleeping=400)) == "idle"
    assert verdict(counts(sleeping=70, running=30), counts(sleeping=400)) == "compute"
    assert verdict(counts(running=90), nothing, ended="process 4 ended") == "unknown"
    assert verdict(nothing, nothing) == "unknown"
    assert verdict(counts(sleeping=70, read=20, running=10), nothing) == "disk"
    unnamed = decide(counts(running=10, unknown=60), nothing, 100, set())  # no syscall access
    assert (unnamed.bottleneck, unnamed.place) == ("disk", Place(None))


def test_io_verdict_goes_to_the_kind_with_most_waits() -> None:
    main = counts(sleeping=90, running=10)
    workers = counts(write=100, read=60, remote=50)  # writes hold most: checkpoint
    result = decide(main, workers, 100, set())
    assert (result.bottleneck, result.direction, result.place) == ("checkpoint", "write", DATA)
    assert result.waiters == "workers"


def test_an_accelerator_ioctl_is_compute_not_idle(tmp_path: Path) -> None:
    classifier = Classifier(HostRoots(), "x86_64", FilePlaces(HostRoots()))
    gpu = OpenFile("/dev/nvidia0", (0, 6), 1, False, True, (195, 0))
    ioctl = classifier._by_kind(1, "S", classifier_kind("ioctl"), gpu)
    assert ioctl.kind == "accelerator"
    null = OpenFile("/dev/null", (0, 6), 1, False, True, (1, 3))
    assert classifier._by_kind(1, "S", classifier_kind("ioctl"), null).kind == "sleeping"


def classifier_kind(name: str):  # type: ignore[no-untyped-def]
    from diskprobe.compute.syscalls import X86_64

    return next(kind for kind in X86_64.values() if kind.name == name)


def test_a_v2_limit_on_a_parent_cgroup_reached_by_the_job(tmp_path: Path) -> None:
    """A pod's cgroup under kubepods, io.max set on kubepods: it holds for the pod."""
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "cgroup").write_text("0::/kubepods/pod1\n")
    pod = sys_root / "fs" / "cgroup" / "kubepods" / "pod1"
    pod.mkdir(parents=True)
    (pod.parent / "io.max").write_text("259:0 rbps=1048576 wbps=max riops=max wiops=max\n")
    (pod / "io.max").write_text("")
    roots = HostRoots(proc=str(proc), sys=str(sys_root))
    cgroup = job_cgroup(roots, 42)
    assert cgroup is not None and cgroup.version == 2
    before = Snapshot({}, cgroup, {(259, 0): (0, 0, 0, 0, 0)})
    after = Snapshot({}, cgroup, {(259, 0): (4 * 1000 * 1000, 0, 100, 0, 0)})  # 1 MB/s
    found = throttles(roots, {DATA: (259, 0)}, before, after, 4.0)
    assert found[DATA].limit.key == "rbps" and found[DATA].limit.cgroup == str(pod.parent)
    assert found[DATA].reached == pytest.approx(1e6 / 1048576)
    assert throttles(roots, {FAST: (8, 0)}, before, after, 4.0) == {}


def fake_job(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """HOST_PROC and HOST_SYS of a container's view: a trainer (pid 100) waiting on a futex,
    its worker (200, comm with a byte that is no UTF-8) blocked in read() on a dataset
    file, a worker whose stat is cut short (300), and a thread of garbage (100/task/101)."""
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    data = tmp_path / "data set \udcff"  # a space (\040 in mountinfo), a byte not UTF-8
    data.mkdir()
    (data / "x.bin").write_bytes(b"\0" * 4096)
    device = os.stat(data / "x.bin").st_dev
    devno = f"{os.major(device)}:{os.minor(device)}"
    line = STAT.decode()
    tasks = {(100, 100): ("trainer", "S", 1, "202 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0"),
             (100, 101): ("trainer", "S", 1, "garbage"),
             (200, 200): ("\udcffworker", "D", 100, "0 0x3 0x0 0x1000 0x0 0x0 0x0 0x0 0x0"),
             (1, 1): ("init", "S", 0, "running")}  # fmt: skip
    for (pid, tid), (comm, state, ppid, syscall) in tasks.items():
        task = proc / str(pid) / "task" / str(tid)
        task.mkdir(parents=True)
        text = line.replace("31208 (sleep) S 31202", f"{tid} ({comm}) {state} {ppid}")
        (task / "stat").write_bytes(os.fsencode(text))
        (task / "syscall").write_text(syscall + "\n")
        (proc / str(pid) / "comm").write_bytes(os.fsencode(comm) + b"\n")
    (proc / "300" / "task" / "300").mkdir(parents=True)
    (proc / "300" / "task" / "300" / "stat").write_text("300 (short) D 100 1 2 3\n")
    (proc / "200" / "fd").mkdir()
    (proc / "200" / "fd" / "3").symlink_to(data / "x.bin")
    (proc / "200" / "fdinfo").mkdir()  # mnt_id 36: the mount line below, the file unstat()ed
    (proc / "200" / "fdinfo" / "3").write_text("pos:\t0\nflags:\t0100000\nmnt_id:\t36\n")
    mount_point = os.fsencode(data).replace(b" ", b"\\040")
    (proc / "200" / "mountinfo").write_bytes(
        b"36 25 %s / %s rw - ext4 /dev/fakedisk rw\n" % (devno.encode(), mount_point))
    (proc / "diskstats").write_text(f" {devno.replace(':', ' ')} fakedisk 5 0 40 9 0 0 0 0 0 "
                                    "9 9 0 0 0 0 0 0\n")  # fmt: skip
    (sys_root / "dev" / "block").mkdir(parents=True)
    (sys_root / "dev" / "block" / devno).symlink_to("../../devices/virtual/block/fakedisk")
    return {"HOST_PROC": str(proc), "HOST_SYS": str(sys_root)}, data


def test_a_container_view_through_host_proc_and_host_sys(tmp_path: Path) -> None:
    env, data = fake_job(tmp_path)
    done = subprocess.run(
        [*installed_command(), "diagnose", "--pid", "100", "--seconds", "0.5", "--format",
         "json"], capture_output=True, env={**os.environ, **env}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.decode("utf-8"))
    assert report["bottleneck"] == "disk", report["reasons"]
    shown = str(data).replace("\udcff", "%FF")  # the byte that is not UTF-8, escaped
    assert (report["device"], report["mount_point"]) == ("fakedisk", shown)
    assert report["paths"] == [f"{shown}/x.bin"] and report["waiters"] == "workers"
    comms = {process["pid"]: process["comm"] for process in report["processes"]}
    assert comms == {100: "trainer", 200: "%FFworker"}  # 300's short stat: left out


@pytest.mark.parametrize(("argv", "says"), [
    (["diagnose"], "give one of --pid PID or --cgroup PATH"),
    (["diagnose", "--pid", "1", "--cgroup", "/x"], "give one of --pid PID or --cgroup PATH"),
    (["diagnose", "--pid", "999999999"], "no process 999999999"),
    (["diagnose", "--cgroup", "no/such/cgroup"], "no cgroup 'no/such/cgroup'"),
    (["diagnose", "--cgroup", "x/../../tmp"], "--cgroup 'x/../../tmp': no '..' steps"),
    (["diagnose", "--pid", "\u0663"], "--pid '\u0663': give a process id"),  # int() took it as 3
    (["diagnose", "--pid", "abc"], "--pid 'abc': give a process id"),
    (["diagnose", "--pid", "1", "--seconds", "0"], "--seconds 0: give 0.2 to 86400"),
    (["diagnose", "--pid", "1", "--format", "influx"], "--format influx: give text or json"),
    (["--once", "--format", "json"], "--format json is for `diskprobe diagnose`"),
])  # fmt: skip
def test_bad_diagnose_input_is_one_line_and_exit_2(argv: list[str], says: str) -> None:
    done = subprocess.run([*installed_command(), *argv], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("E! "), done.stderr
    assert says in done.stderr


@pytest.mark.parametrize(("waiters", "said"), [
    ("main", "its main thread spends 97% of its active time waiting on it"),
    ("workers", "its workers spend 97% of their active time waiting on it"),
])  # fmt: skip
def test_the_sentence_agrees_in_number_with_whose_waits_decided(waiters: str, said: str) -> None:
    from diskprobe.compute.bottleneck import Verdict
    from diskprobe.diagnose.report import sentence

    report = {"main": {"shares": {"running": 0.01, "io_wait": 0.97, "sleeping": 0.02,
                                  "blocked": 0.0}},
              "device": "sdb", "mount_point": "/data", "waiters_io_share": 0.97}  # fmt: skip
    text = sentence(Verdict("disk", [], None, "read", waiters), report)
    assert text.startswith(f"sdb holds /data, which the job reads from; {said}"), text
