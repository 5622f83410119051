"""`diskprobe doctor`: a one-shot self-check that says what is wrong and how to fix it.

Run it as the agent's user (`sudo -u telegraf diskprobe doctor`): it checks what that user
can see and read, prints one line per check, and exits 1 when any check failed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, TextIO

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.smart import PERMISSION_HELP
from diskprobe.config import AgentConfig
from diskprobe.doctor_latency import check_latency
from diskprobe.log import Logger, terminal_safe
from diskprobe.roots import HostRoots
from diskprobe.serializers.text import readable_text as shown
from diskprobe.smart import json_parser
from diskprobe.smart.devices import parse_scan
from diskprobe.smart.reader import read_json, smartctl_version
from diskprobe.smart.runner import CommandRunner
from diskprobe.sources.delayacct import delay_accounting
from diskprobe.sources.job_procs import accelerator_nodes_present
from diskprobe.sources.mountinfo import read_mountinfo
from diskprobe.sources.privileges import CAP_SYS_PTRACE, has_capability, ptrace_read_advice
from diskprobe.state import StateStore

CONTAINER_MARKERS = ("docker", "kubepods", "containerd", "libpod", "lxc")
OVERLAY_ROOTS = ("overlay", "aufs", "fuse-overlayfs")


@dataclass
class Report:
    out: TextIO
    failures: int = 0
    warnings: int = 0
    lines: list[str] = field(default_factory=list)

    def line(self, status: str, text: str) -> None:
        """One line, whatever `text` holds: names from the system in it are shown() by the
        checks (a control character as %XX, `%` as %25); any control character left (an
        error's text) is written %XX here, so nothing can forge a line or drive the terminal."""
        self.failures += status == "FAIL"
        self.warnings += status == "WARN"
        self.out.write(f"{status:<5}{terminal_safe(text)}\n")


def in_container(proc: str = "/proc") -> bool:
    """Heuristics: /.dockerenv, /run/.containerenv, or a container cgroup for PID 1."""
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open(os.path.join(proc, "1", "cgroup"), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return False
    return any(marker in text for marker in CONTAINER_MARKERS)


def root_fstype(roots: HostRoots) -> str:
    try:
        mounts = read_mountinfo(roots)
    except OSError:
        return ""
    return next((m.fstype for m in reversed(mounts) if m.mount_point == "/"), "")


def check_roots(report: Report, roots: HostRoots, env: dict[str, str]) -> None:
    prefix = f", mounts under {shown(roots.mount_prefix)}" if roots.mount_prefix else ""
    report.line("INFO", f"reading /proc at {shown(roots.proc)}, /sys at {shown(roots.sys)}, "
                        f"/run at {shown(roots.run)}{prefix}")  # fmt: skip
    if "HOST_PROC" not in env and in_container():
        # An overlay root is a container image: its mounts are not the host's volumes.
        status = "FAIL" if root_fstype(roots) in OVERLAY_ROOTS else "WARN"
        report.line(
            status,
            "this looks like a container and HOST_PROC is not set: diskprobe "
            "then sees the container's mounts, not the host's. Mount the host's /proc, "
            "/sys and / read-only (e.g. at /hostfs/proc, /hostfs/sys, /hostfs) and set "
            "HOST_PROC, HOST_SYS and HOST_MOUNT_PREFIX=/hostfs",
        )
    for path in (roots.proc_path("diskstats"), roots.proc_path("1", "mountinfo")):
        status = "OK" if os.access(path, os.R_OK) else "FAIL"
        report.line(status, f"{shown(path)} {'readable' if status == 'OK' else 'NOT readable'}")


def check_io(report: Report, config: AgentConfig, roots: HostRoots, log: Logger) -> None:
    io = IoCollector(config.io, CollectorContext(roots=roots, log=log))
    io.collect()
    devices = sorted({m.tags["device"] for m in io.collect().metrics})
    listed = " ".join(map(shown, devices)) or "(none)"
    report.line("OK" if devices else "WARN", f"I/O: {len(devices)} devices after filters: {listed}")


def check_filesystems(
    report: Report, config: AgentConfig, roots: HostRoots, log: Logger, state: StateStore
) -> None:
    context = CollectorContext(roots=roots, log=log, state=state)
    filesystems = FilesystemsCollector(config.filesystems, context)
    try:
        metrics = filesystems.collect().metrics
    finally:
        filesystems.close()
    for metric in metrics:
        if metric.fields.get("responsive") is False:
            report.line("FAIL", f"mount {shown(metric.tags['path'])} does not answer statfs "
                                "(stuck)")  # fmt: skip
    paths = " ".join(shown(m.tags["path"]) for m in metrics)
    report.line("OK" if metrics else "WARN", f"filesystems: {len(metrics)} mounts: {paths}")


def check_smart(report: Report, config: AgentConfig) -> None:
    runner = CommandRunner(config.smart.smartctl_path, config.smart.timeout, config.smart.use_sudo)
    path = runner.resolved()
    if path is None:
        report.line(
            "FAIL",
            f"smartctl not found ({config.smart.smartctl_path}): install "
            "smartmontools, or set [smart] smartctl_path",
        )
        return
    version = smartctl_version(runner)
    report.line("OK", f"smartctl {shown(path)}, version "
                      f"{'.'.join(map(str, version or ())) or '?'}")  # fmt: skip
    specs = parse_scan(runner.run(["--scan-open"]).stdout)
    report.line("INFO", f"SMART drives found by --scan-open: {len(specs)}")
    if not specs:
        report.line(
            "INFO",
            "no SMART-capable drives: virtual disks (virtio, Xen, VMware) and many USB "
            "bridges have none; I/O and filesystem metrics are unaffected, and "
            "[smart] enabled = false stops the scans",
        )
    for spec in specs:
        try:
            read = read_json(spec, runner, config.smart.nocheck)
        except json_parser.NotSmartctlJson:
            report.line("WARN", f"{shown(str(spec))}: smartctl gave no JSON (older than 7.0?)")
            continue
        name = shown(str(spec))
        if read.permission:
            report.line("FAIL", f"{name}: no permission: "
                                + PERMISSION_HELP.format(smartctl=shown(path)))  # fmt: skip
        elif read.problem:
            report.line("FAIL", f"{name}: {shown(read.problem)}")
        else:
            health = read.health
            report.line("OK", f"{name}: {shown(health.model)} {shown(health.serial)} "
                              f"power_mode={shown(health.power_mode)}")  # fmt: skip


DELAYACCT_ADVICE = (
    "process_io cannot rank processes by time blocked on disk (blkio_wait_ratio): turn delay "
    "accounting on at boot, with the kernel parameter `delayacct` or "
    "`kernel.task_delayacct = 1` in /etc/sysctl.d/ (`sysctl -w kernel.task_delayacct=1` now: "
    "only processes started after it are counted). Its cost: a timestamp at the start and end "
    "of each wait the kernel accounts (block I/O, swap-in, reclaim, run queue), off by default "
    "since Linux 5.14 for that reason"
)


def check_delay_accounting(report: Report, config: AgentConfig, roots: HostRoots) -> None:
    if not config.process_io.enabled:
        return
    state = delay_accounting(roots)
    if state is None:
        report.line("INFO", "no kernel.task_delayacct (kernel before 5.14): delay accounting is "
                            "on unless booted with nodelayacct")  # fmt: skip
    elif state:
        report.line("OK", "delay accounting on: process_io reports blkio_wait_ratio")
    else:
        report.line("INFO", f"kernel.task_delayacct = 0: {DELAYACCT_ADVICE}")


def check_jobs(report: Report, config: AgentConfig) -> None:
    """What [jobs] will find, and whether it may read what their threads wait on."""
    jobs = config.jobs
    if not jobs.enabled:
        return
    found = ["processes holding an accelerator open"] if accelerator_nodes_present() else []
    found += [f"{len(jobs.match)} match pattern(s)"] if jobs.match else []
    found += [f"{len(jobs.cgroups)} cgroup glob(s)"] if jobs.cgroups else []
    if not found:
        report.line("INFO", "jobs: no accelerator node under /dev and no [jobs] match or "
                            "cgroups: no training job to watch")  # fmt: skip
        return
    if not has_capability(CAP_SYS_PTRACE):  # even root: a container drops it
        report.line("WARN", f"jobs: what other users' jobs' threads wait on is unreadable "
                            f"({ptrace_read_advice()}); their verdicts will rest on thread "
                            "states")  # fmt: skip
        return
    report.line("OK", f"jobs: watching {', '.join(found)}; CAP_SYS_PTRACE: blocked calls readable")


def check_state(report: Report, config: AgentConfig, log: Logger) -> StateStore:
    state = StateStore(config.state_file, log, config.state_save_interval)
    if state.path is None:
        report.line(
            "WARN",
            f"state file: nothing writable ({config.state_file}); forecasts "
            "and drive baselines will not survive restarts",
        )
    else:
        report.line("OK", f"state file: {shown(str(state.path))}")
    return state


def _guarded(report: Report, what: str, check: Callable[[], object]) -> None:
    """A check that raises is a failed check, never a traceback."""
    try:
        check()
    except Exception as error:
        report.line("FAIL", f"{what}: {type(error).__name__}: {error}")


def run_doctor(
    config: AgentConfig, source: str, out: TextIO, log_factory: Callable[[], Logger]
) -> int:
    report = Report(out)
    report.line("INFO", f"diskprobe doctor as uid {os.geteuid()}; config: {source}")
    roots = HostRoots.from_env(os.environ)
    log = log_factory()
    check_roots(report, roots, dict(os.environ))
    state = check_state(report, config, log)
    _guarded(report, "I/O collector", lambda: check_io(report, config, roots, log))
    _guarded(report, "filesystems", lambda: check_filesystems(report, config, roots, log, state))
    check_delay_accounting(report, config, roots)
    check_jobs(report, config)
    _guarded(report, "latency", lambda: check_latency(report, config))
    if config.smart.enabled:
        _guarded(report, "SMART", lambda: check_smart(report, config))
    report.line("INFO", f"{report.failures} problem(s), {report.warnings} warning(s)")
    return 1 if report.failures else 0
