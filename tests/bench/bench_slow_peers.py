#!/usr/bin/env python3
"""How long diskprobe's callers wait while a peer is slow: a smartctl, or a /metrics scraper.

Not a pytest module: the tests assert no durations (tests/test_smart_collector.py,
tests/test_smart_nvme_cli.py and tests/test_http_output.py make the wrong path a hang instead);
the figures are here. Run it by hand, from the repository root:

    .venv/bin/python tests/bench/bench_slow_peers.py [--rounds 5] [--slow-read 2] [--timeout 1]

Min and median over the rounds, in milliseconds:
- SmartCollector.collect() (non-blocking, as the agent runs it) while every drive's smartctl
  (tests/fake_smartctl) takes --slow-read seconds: the collect that starts the read cycle, and
  every collect until the points arrive;
- a blocking collect (--once) with one hung smartctl: about --timeout, the kill of its group;
- HttpOutput.write() of a 20 MiB page while 8 idle connections are open (a thread each, no
  client slot), and while 3 clients never read their answer; a scrape while those 3 are
  stuck; close() with a stuck client and an idle one (client_timeout one hour: nothing may
  wait for it);
- the bytes tracemalloc sees grow while the 3 stuck clients are served (a copy of the page per
  client would be 60 MiB).
"""

from __future__ import annotations

import argparse
import http.client
import socket
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Callable

from diskprobe.outputs.http import HttpOutput
from diskprobe.outputs.http_server import CLIENT_THREAD

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from smart_harness import (  # tests/, beside this folder
    GOLDEN_JSON,
    fake_smartctl_env,
    install_case,
    make_rig,
    set_behaviour,
)

DRIVES = (
    ("ata-ssd-samsung-860-evo-500gb-full", "/dev/sda -d sat"),
    ("ata-hdd-wdc-wuh721816ale6l4-windows", "/dev/sdb -d sat"),
    ("nvme-sabrent-rocket-4-1tb", "/dev/nvme0 -d nvme"),
)
NEVER = 3600.0  # client_timeout: a client is never dropped while measured
BIG = 20 * 2**20


def since(start: float) -> float:
    return (time.monotonic() - start) * 1000


def wait(condition: Callable[[], bool], what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not after {seconds:g} s")
        time.sleep(0.01)


def smart_round(workdir: Path, slow: float, timeout: float) -> dict[str, list[float]]:
    root = workdir / "fake"
    root.mkdir()
    for golden, device in DRIVES:
        case = install_case(GOLDEN_JSON / golden, root, golden)
        (case / "device").write_text(device + "\n", encoding="utf-8")
        set_behaviour(case, f"slow {slow}")
    devices = [device for _, device in DRIVES]
    figures: dict[str, list[float]] = {"collect starting the reads": [], "collect during": []}
    with fake_smartctl_env(root):
        rig = make_rig(root, workdir / "state.json", blocking=False, devices=devices, timeout=60)
        start = time.monotonic()
        rig.collect()
        figures["collect starting the reads"].append(since(start))
        points = 0
        while points < len(DRIVES):
            time.sleep(0.05)
            start = time.monotonic()
            collection = rig.collect()
            figures["collect during"].append(since(start))
            points += sum(m.measurement == "diskprobe_smart" for m in collection.metrics)
        rig.close()
        set_behaviour(root / DRIVES[1][0], "hang")
        rig = make_rig(root, workdir / "state2.json", devices=devices, timeout=timeout)
        start = time.monotonic()
        rig.collect()
        figures[f"blocking collect, 1 hung (timeout {timeout:g} s)"] = [since(start)]
        rig.close()
    return figures


def client_threads() -> int:
    return sum(thread.name == CLIENT_THREAD for thread in threading.enumerate())


def stuck_client(output: HttpOutput) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.connect(output.address)
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.recv(1, socket.MSG_PEEK)  # the answer started
    return sock


def http_round(page: str) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    output = HttpOutput("127.0.0.1:0", client_timeout=NEVER)
    output.write("up 1\n")
    holders = [socket.create_connection(output.address) for _ in range(8)]
    wait(lambda: client_threads() == 8, "8 idle clients")
    start = time.monotonic()
    output.write(page)
    figures["write, 8 idle clients"] = [since(start)]
    for sock in holders:
        sock.close()
    wait(lambda: client_threads() == 0, "the idle clients' end")

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    stuck = [stuck_client(output) for _ in range(3)]
    time.sleep(0.2)  # the three in their sends (a figure, not a test: no need to know)
    figures["traced growth, 3 stuck clients (KiB)"] = [
        (tracemalloc.get_traced_memory()[0] - before) / 1024
    ]
    tracemalloc.stop()
    start = time.monotonic()
    output.write("up 2\n")
    figures["write, 3 stuck clients"] = [since(start)]
    start = time.monotonic()
    connection = http.client.HTTPConnection(*output.address, timeout=120)
    connection.request("GET", "/metrics")
    connection.getresponse().read()
    connection.close()
    figures["scrape, 3 stuck clients"] = [since(start)]
    idle = socket.create_connection(output.address)
    wait(lambda: client_threads() == 4, "3 stuck clients and an idle one")
    # Right after an accept, close() can catch the accepting loop before its next wait: let it
    # wait, as it does most of the time (close() then takes up to STOP_POLL_SEC, 0.2 s).
    time.sleep(0.5)
    start = time.monotonic()
    output.close()
    figures["close, 3 stuck clients and an idle one"] = [since(start)]
    for sock in [*stuck, idle]:
        sock.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--slow-read", type=float, default=2.0, help="seconds per smartctl")
    parser.add_argument("--timeout", type=float, default=1.0, help="[smart] timeout, hung read")
    args = parser.parse_args()
    page = ("x" * 1023 + "\n") * (BIG // 1024)
    figures: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-slow-peers-") as workdir:
            found = smart_round(Path(workdir), args.slow_read, args.timeout)
        for found_now in (found, http_round(page)):
            for name, values in found_now.items():
                figures.setdefault(name, []).extend(values)
    print(f"{args.rounds} rounds, smartctl reads of {args.slow_read:g} s; ms unless said")
    for name, values in figures.items():
        print(f"  {name:<48} min {min(values):9.2f}  median {statistics.median(values):9.2f}"
              f"  (n={len(values)})")  # fmt: skip


if __name__ == "__main__":
    main()
