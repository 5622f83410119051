"""`diskprobe doctor`'s [latency] check: what the kernel side needs, each said with its fix.

bpftrace on PATH (or bpftrace_path), the script diskprobe ships root's alone when sudo runs it
(a rule naming a file its user could change would give it root), the kernel's BTF, tracefs,
and the block_io_start tracepoint (Linux 6.5+).
"""

from __future__ import annotations

import os
import shutil
from typing import Protocol

from diskprobe.collectors.latency import SCRIPT
from diskprobe.config import AgentConfig
from diskprobe.files import root_only_problem
from diskprobe.sources.tracefs import MARKER, TRACEFS

BTF = "/sys/kernel/btf/vmlinux"
TRACEPOINT = "events/block/block_io_start"


class Lines(Protocol):
    def line(self, status: str, text: str) -> None: ...


def check_latency(report: Lines, config: AgentConfig) -> None:
    latency = config.latency
    if not latency.enabled:
        return
    found = shutil.which(latency.bpftrace_path)
    if found is None:
        report.line("FAIL", f"latency: {latency.bpftrace_path} not found: apt-get install "
                            "bpftrace (or set [latency] bpftrace_path)")  # fmt: skip
        return
    problem = root_only_problem(str(SCRIPT)) if latency.use_sudo else None
    if problem:
        report.line("FAIL", f"latency: sudo would run bpftrace on a script others can change "
                            f"({problem}): install diskprobe as root")  # fmt: skip
        return
    if not latency.use_sudo and os.geteuid() != 0:
        report.line("FAIL", "latency: bpftrace runs only as root: run diskprobe as root or set "
                            "[latency] use_sudo = true with `diskprobe sudoers`")  # fmt: skip
        return
    if not os.path.exists(BTF):
        report.line("WARN", f"latency: no {BTF}: the kernel has no BTF; bpftrace may refuse")
    if not os.path.exists(os.path.join(TRACEFS, MARKER)):
        report.line("INFO", f"latency: tracefs not mounted at {TRACEFS}: diskprobe mounts it "
                            "at start as root (else: mount -t tracefs nodev "
                            f"{TRACEFS})")  # fmt: skip
    elif not os.path.exists(os.path.join(TRACEFS, TRACEPOINT)):
        report.line("FAIL", "latency: no block:block_io_start tracepoint (Linux 6.5 or later)")
        return
    report.line("OK", f"latency: {found} runs {SCRIPT}" + (" through sudo" if latency.use_sudo
                                                           else ""))  # fmt: skip
