"""tracefs at /sys/kernel/tracing, where bpftrace reads the tracepoints' formats: Debian does not
mount it by default. Mounted here when missing and diskprobe may (root, CAP_SYS_ADMIN), as
`mount -t tracefs nodev /sys/kernel/tracing` would; else the reason is given back."""

from __future__ import annotations

import ctypes
import os

TRACEFS = "/sys/kernel/tracing"
MARKER = "available_events"  # a file every mounted tracefs has


def ensure_tracefs(path: str = TRACEFS) -> str | None:
    """None when tracefs is there (or was mounted now), else why it is not."""
    if os.path.exists(os.path.join(path, MARKER)):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.mount(b"nodev", path.encode(), b"tracefs", 0, None)
    except (OSError, AttributeError) as error:
        return f"tracefs is not mounted at {path} and cannot be: {error}"
    if done != 0:
        code = ctypes.get_errno()
        return (f"tracefs is not mounted at {path} and mounting it failed: {os.strerror(code)} "
                f"(as root: mount -t tracefs nodev {path})")
    return None
