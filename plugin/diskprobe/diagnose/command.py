"""`diskprobe diagnose --pid PID | --cgroup PATH [--seconds N] [--format text|json]`."""

from __future__ import annotations

import json
import os
import resource
from typing import Any, TextIO

from diskprobe.collectors.job_evidence import (
    THROTTLE_REACHED,
    Snapshot,
    Throttle,
    device_figures,
    place_faults,
    throttles,
)
from diskprobe.collectors.job_process import thread_facts
from diskprobe.collectors.task_classify import Classifier
from diskprobe.compute.bottleneck import Counts, Shares, Verdict, decide
from diskprobe.compute.bottleneck_advice import ADVICE
from diskprobe.compute.thread_roles import Groups, group_threads
from diskprobe.diagnose.latency import WatchLatency
from diskprobe.diagnose.report import active_io_share, render_text, sentence, shares_dict
from diskprobe.diagnose.watch import Watch, Watched
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.serializers.text import escape_char
from diskprobe.sources.file_places import FilePlaces
from diskprobe.sources.tasks import read_cgroup_procs, read_task_stat

DEFAULT_SECONDS = 10.0
REPORT_FORMATS = ("text", "json")


CGROUP_HIERARCHIES = ((), ("unified",), ("blkio",))  # v2 (or v1's root), hybrid v2, v1 blkio
PF_KTHREAD = 0x00200000  # /proc/<pid>/stat's flags (field 9): a kernel thread
STAT_FLAGS = 6  # its index after "pid (comm) "


def find_cgroup(roots: HostRoots, path: str) -> str | None:
    """The cgroup directory `path` names, only ever under HOST_SYS/fs/cgroup: a path that
    starts there as given; any other, relative or absolute (as /proc/<pid>/cgroup writes
    it), under the v2 root, the hybrid `unified` or the v1 `blkio` hierarchy. Never the
    current directory, never through a `..` step or a link that leads out. None otherwise."""
    root = roots.sys_path("fs", "cgroup")
    if ".." in path.split("/"):
        return None
    given = path.rstrip("/") == root or path.startswith(os.path.join(root, ""))
    candidates = [path] if given else [os.path.join(root, *hierarchy, path.lstrip("/"))
                                       for hierarchy in CGROUP_HIERARCHIES]  # fmt: skip
    inside = os.path.realpath(root)
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real != inside and not real.startswith(os.path.join(inside, "")):
            continue
        if os.path.isfile(os.path.join(real, "cgroup.procs")):
            return candidate
    return None


def _cgroup_problem(roots: HostRoots, cgroup: str) -> str:
    root = roots.sys_path("fs", "cgroup")
    if ".." in cgroup.split("/"):
        return f"diagnose: --cgroup {cgroup!r}: no '..' steps (give a cgroup under {root})"
    return f"diagnose: no cgroup {cgroup!r} under {root} (its own, unified or blkio hierarchy)"


def kernel_thread(roots: HostRoots, pid: int) -> bool:
    """Whether the process is a kernel thread (kthreadd, kworker...): PF_KTHREAD in its stat."""
    try:
        with open(roots.proc_path(str(pid), "stat"), "rb") as handle:
            data = handle.read(4096)
    except OSError:
        return False
    fields = data[data.rfind(b")") + 2 :].split()
    flags = fields[STAT_FLAGS] if len(fields) > STAT_FLAGS else b""
    return flags.isdigit() and int(flags) & PF_KTHREAD != 0


def run_diagnose(pid: int | None, cgroup: str | None, seconds: float, output_format: str,
                 out: TextIO, log: Logger) -> int:  # fmt: skip
    roots = HostRoots.from_env(os.environ)
    directory = find_cgroup(roots, cgroup) if cgroup else None
    if cgroup and directory is None:
        log.error(_cgroup_problem(roots, cgroup))
        return 2
    if pid is not None and read_task_stat(roots, pid, pid) is None:
        log.error(f"diagnose: no process {pid} under {roots.proc}")
        return 2
    first = pid if pid is not None else next(iter(read_cgroup_procs(directory or "")), None)
    if first is None:
        log.error(f"diagnose: the cgroup {directory} has no process")
        return 2
    places = FilePlaces(roots)
    classifier = Classifier(roots, os.uname().machine, places)
    watch = Watch(roots, classifier, pid=pid, cgroup=directory)
    latency = WatchLatency()
    cost = resource.getrusage(resource.RUSAGE_SELF)
    before = Snapshot.take(roots, first)
    watched = watch.run(seconds)
    after = Snapshot.take(roots, first)
    latency.stop()
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = used.ru_utime + used.ru_stime - cost.ru_utime - cost.ru_stime
    report = build_report(watch, watched, places, before, after, roots)
    _add_latency(report, latency, places)
    report["target"] = f"pid {pid}" if pid is not None else f"cgroup {directory}"
    report["cost"] = {"cpu_seconds": round(cpu, 3), "period_sec": 0.1,
                      "cpu_share_of_one_core": round(cpu / watched.seconds, 4)
                      if watched.seconds > 0 else 0.0}  # fmt: skip
    text = (json.dumps(_escaped(report), indent=2, ensure_ascii=False) + "\n"
            if output_format == "json" else render_text(report))  # fmt: skip
    out.write(text)
    out.flush()
    return 0


def build_report(watch: Watch, watched: Watched, places: FilePlaces, before: Snapshot,
                 after: Snapshot, roots: HostRoots) -> dict[str, Any]:  # fmt: skip
    for process in watched.processes.values():
        place_faults(process, places, before, after)
    job = [process for process in watched.processes.values() if process.pid not in watch.wrappers]
    groups = group_threads(thread_facts(job, watched.main_pid))
    main, workers = groups.main, groups.workers
    found = throttles(roots, places.devices, before, after, watched.seconds)
    held = {place for place, throttle in found.items() if throttle.reached >= THROTTLE_REACHED}
    verdict = decide(main, workers, watched.ticks, held, watched.ended, groups.runtime)
    report = _base(verdict, watched, groups, watch.wrappers)
    _add_place(report, verdict, watch, watched, before, after)
    if verdict.place is not None and verdict.place in found:
        report["throttle"] = _throttle(found[verdict.place])
    report["waiters_io_share"] = round(active_io_share(main if verdict.waiters == "main"
                                                       else workers), 3)  # fmt: skip
    report["sentence"] = sentence(verdict, report)
    report["notes"] = _notes(watched, roots)
    return report


def _base(verdict: Verdict, watched: Watched, groups: Groups,
          wrappers: set[int]) -> dict[str, Any]:  # fmt: skip
    processes = []
    for process in sorted(watched.processes.values(), key=lambda p: p.pid):
        threads = Counts()
        threads.add(process.main)
        threads.add(process.others)
        spread = Shares.of(threads, watched.ticks)  # thread-equivalents over its threads
        ticks = process.cpu_ticks
        reading = _io_rate(process.io[0], process.io[1], watched.seconds)
        processes.append({
            "pid": process.pid, "comm": process.comm,
            "role": "main" if process.pid == watched.main_pid
            else "wrapper" if process.pid in wrappers else "worker",
            "threads": len(process.threads), "shares": shares_dict(Shares.of(process.main,
                                                                          process.main.samples)),
            "threads_running": round(spread.running, 3),
            "threads_io_wait": round(spread.io_wait, 3),
            "cpu_cores": round(ticks / os.sysconf("SC_CLK_TCK") / watched.seconds, 3)
            if watched.seconds > 0 else 0.0,
            "read_bytes_per_sec": reading[0], "write_bytes_per_sec": reading[1],
            "ended": process.ended_at is not None,
        })  # fmt: skip
    return {"bottleneck": verdict.bottleneck, "reasons": verdict.reasons,
            "advice": ADVICE[verdict.bottleneck], "pid": watched.main_pid,
            "seconds": round(watched.seconds, 3), "samples": watched.ticks,
            "main": {"pid": watched.main_pid,
                     "shares": shares_dict(Shares.of(groups.main, groups.main.samples)),
                     "waits_on_own_threads": round(groups.main.thread_waits
                                                   / max(1, groups.main.samples), 3)},
            "workers": shares_dict(Shares.of(groups.workers, watched.ticks)),
            "runtime": shares_dict(Shares.of(groups.runtime, watched.ticks)),
            "processes": processes}  # fmt: skip


def _add_place(report: dict[str, Any], verdict: Verdict, watch: Watch, watched: Watched,
               before: Snapshot, after: Snapshot) -> None:  # fmt: skip
    place = verdict.place
    if place is None:
        return
    report.update(device=place.device, mount_point=place.mount_point, fstype=place.fstype,
                  remote=place.remote, direction=verdict.direction,
                  waiters=verdict.waiters)  # fmt: skip
    paths = [path for (where, path), _ in watch.paths.most_common() if where == place][:5]
    for process in watched.processes.values():
        paths += [path for path in process.fault_paths if path not in paths]
    report["paths"] = paths[:5]
    figures = device_figures(place.device, before, after, watched.seconds) if place.device else None
    if figures is not None:
        report["device_iostat"] = {key: round(value, 3) if isinstance(value, float) else value
                                   for key, value in figures.items()}  # fmt: skip


def _add_latency(report: dict[str, Any], latency: WatchLatency, places: FilePlaces) -> None:
    """The verdict's device's per-request latency over the watch, or a note why not."""
    place = next((p for p in places.devices if p.device == report.get("device")), None)
    found = latency.on(places.devices[place], report.get("direction") or "read") if place \
        else None  # fmt: skip
    if found is not None:
        report["device_latency"] = found
    elif latency.note and place is not None:
        report["notes"].append(latency.note)


def _throttle(throttle: Throttle) -> dict[str, Any]:
    limit = throttle.limit
    return {"cgroup": limit.cgroup, "device": f"{limit.device[0]}:{limit.device[1]}",
            "limit": limit.key, "value": limit.value, "rate": round(throttle.rate, 1),
            "reached": round(throttle.reached, 3)}  # fmt: skip


def _io_rate(first: tuple[int, int] | None, last: tuple[int, int] | None,
             seconds: float) -> tuple[float, float]:  # fmt: skip
    if first is None or last is None or seconds <= 0:
        return 0.0, 0.0
    return round((last[0] - first[0]) / seconds, 1), round((last[1] - first[1]) / seconds, 1)


def _notes(watched: Watched, roots: HostRoots) -> list[str]:
    notes = []
    if kernel_thread(roots, watched.main_pid):
        main = watched.processes.get(watched.main_pid)
        name = f" ({main.comm})" if main is not None and main.comm else ""
        notes.append(f"pid {watched.main_pid}{name} is a kernel thread: it has no files, data "
                     "loader or training loop of its own to watch; give the pid of the job's "
                     "process (or its cgroup)")  # fmt: skip
    if watched.unreadable_syscalls:
        notes.append(f"{watched.unreadable_syscalls} samples could not read the blocked call "
                     "(/proc/<tid>/syscall needs root or CAP_SYS_PTRACE): uninterruptible "
                     "waits were counted as file waits on an unknown device")  # fmt: skip
    return notes


def _escaped(value: Any) -> Any:
    """Names from the system (comm, paths) may hold bytes that are not UTF-8: those bytes are
    written %XX (serializers/text.py), the rest of the text as it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join(map(escape_char, value))
        return value
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    return value
