"""Free TCP ports for the servers tests start, kept apart per pytest-xdist worker.

A port found free by binding port 0 is a port from the kernel's ephemeral range: between the
check and the server's own bind, any client's connect() (another worker's HTTP request, say)
can take it. So ports come from below that range (ip_local_port_range starts at 32768; bind(0)
and connect() never hand out lower ones), from a block of its own for each worker
(PYTEST_XDIST_WORKER gw0, gw1, ...), and each block is walked round-robin, so a port is not
reused while its last user may still linger in TIME_WAIT.
"""

from __future__ import annotations

import itertools
import os
import socket
from typing import Iterator

FIRST_PORT = 20000
BLOCK = 600  # ports per worker: 20000-20599 for gw0, 20600-21199 for gw1, ... (max 20 workers)
_next_offset: Iterator[int] = itertools.cycle(range(BLOCK))


def worker_index() -> int:
    """0 for gw0 (and without xdist), 1 for gw1, ..."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    digits = name[2:] if name.startswith("gw") else ""
    return int(digits) if digits.isdigit() else 0


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """`count` distinct ports of this worker's block that are free now."""
    base = FIRST_PORT + worker_index() % 20 * BLOCK
    chosen: list[int] = []
    for _ in range(BLOCK):
        port = base + next(_next_offset)
        if port not in chosen and _bindable(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"no {count} free ports in {base}-{base + BLOCK - 1}")


def free_port() -> int:
    return free_ports(1)[0]
