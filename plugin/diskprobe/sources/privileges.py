"""What diskprobe itself may read: its effective user and capabilities (/proc/self/status).

Always the agent's own /proc/self, not HOST_PROC: these are the reader's rights, wherever the
host's tree is mounted.
"""

from __future__ import annotations

import os
import re

CAP_SYS_PTRACE = 19  # include/uapi/linux/capability.h

# /proc/self/status, one "Name:\tvalue" per line; the capability sets are 64-bit hex masks:
#   CapEff:	000001fffeffffff


def parse_effective_capabilities(status: str) -> int | None:
    """The CapEff mask; None when the line is missing or not hex."""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name == "CapEff":
            digits = value.strip()  # ASCII hex only: int(..., 16) would take other digits
            return int(digits, 16) if re.fullmatch(r"[0-9a-fA-F]{1,16}", digits) else None
    return None


def has_capability(capability: int, status_path: str = "/proc/self/status") -> bool | None:
    """Whether this process holds `capability` in its effective set; None if unknown."""
    try:
        with open(status_path, encoding="ascii", errors="replace") as handle:
            mask = parse_effective_capabilities(handle.read())
    except OSError:
        return None
    return None if mask is None else bool(mask >> capability & 1)


def ptrace_read_advice(status_path: str = "/proc/self/status", euid: int | None = None) -> str:
    """Why another user's /proc/<pid>/io can be refused to us, and what would help: the
    kernel allows it with CAP_SYS_PTRACE (fs/proc/base.c, ptrace_may_access), unless a
    security module says no or the process belongs to a parent user namespace."""
    ptrace = has_capability(CAP_SYS_PTRACE, status_path)
    root = (os.geteuid() if euid is None else euid) == 0
    if ptrace:
        return (
            "refused although diskprobe holds CAP_SYS_PTRACE"
            + (" as root" if root else "")
            + ": a security module (SELinux, AppArmor, Yama) or the process's parent user "
            "namespace refuses it; only that policy can let diskprobe see them"
        )
    if root:
        return (
            "root without CAP_SYS_PTRACE (a container drops it by default): add it, "
            "e.g. docker run --cap-add SYS_PTRACE or the pod's securityContext"
        )
    return "run as root or with CAP_SYS_PTRACE to see them"
