"""Really slow block devices: loop devices on tests/fuse_delay.py files, driven by fio.

    with slow_host(4, skip) as host:           # 4 loop devices, each on its own FUSE file
        host.set_load(Load(100))               # the same fio job on every device
        host.set_delays({host.devices[1]: 2})  # +2 ms on every request of the second one
        host.measure(3.0)                      # awaits from /proc/diskstats, per device

Measured on the development VM (Linux 6.18, 2 vCPUs, libfuse 3.14), and chosen:
* `losetup --direct-io=on` works on a FUSE file (DIO=1 in `losetup -l`); with or without it
  every request reached the daemon (its files are FOPEN_DIRECT_IO: no page cache answers).
* one fio process per device: a randread and a randwrite job (psync, iodepth 1), each at
  `rate_iops`, so a slow device keeps its rate (each job waits only for its own requests).
* Poisson arrivals (rate_process=poisson): with fio's default evenly spaced requests, the
  jobs of the four devices keep a fixed phase against each other for as long as fio runs,
  and a device whose requests keep landing on another's in the (one-GIL) daemon showed
  1.5-2.6x its peers' await for tens of seconds, healthy; random arrivals spread that.
* healthy await (delay 0), 100 reads/s + 100 writes/s per device: 0.25-0.5 ms on that VM,
  with the machine's load; a 2 ms delay gave 2.9 ms (wake-ups add to it): `calibrate`
  measures. A later VM of the same kind answered in 0.05 ms: so the healthy latency is not
  left to the machine's speed: `base_ms` (a delay every file has, always) sets it, the same
  for every peer, and `set_delays` adds to it.

Size: one fixture (SlowHost, 140 lines): the FUSE daemon, its loop devices and their fio jobs
are started, calibrated, measured and torn down together, on one state; the measurements
above, which chose its settings, are another 26.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, NamedTuple, Optional

DAEMON = Path(__file__).with_name("fuse_delay.py")
FIO = "/usr/bin/fio"
TOOLS = ("losetup", "umount", FIO)
FILE_BYTES = 64 * 1024 * 1024
MOUNT_TIMEOUT_SEC = 10.0
STOP_TIMEOUT_SEC = 5.0
DELAY_SETTLE_SEC = 0.1  # the daemon polls its delay file every 20 ms


@dataclass(frozen=True)
class Load:
    """One device's fio job: `rate_iops` random reads/s and as many random writes/s (none
    with reads_only)."""

    rate_iops: int
    block_size: str = "4k"
    ioengine: str = "psync"
    iodepth: int = 1
    reads_only: bool = False

    def argv(self, device: str) -> list[str]:
        rate = f"--rate_iops={self.rate_iops}"
        writes = [] if self.reads_only else ["--name=write", "--rw=randwrite", rate]
        return [FIO, f"--filename=/dev/{device}", "--direct=1", f"--ioengine={self.ioengine}",
                f"--iodepth={self.iodepth}", f"--bs={self.block_size}", "--time_based",
                "--runtime=24h", "--norandommap", "--randrepeat=0", "--thread",
                "--rate_process=poisson", "--name=read", "--rw=randread", rate,
                *writes]  # fmt: skip


class Awaits(NamedTuple):
    """One device over a measured span, from /proc/diskstats."""

    reads_per_sec: float
    writes_per_sec: float
    await_ms: float  # reads and writes together: total ms / requests


def _end(process: Optional[subprocess.Popen[bytes]]) -> None:
    """SIGTERM (fio stops its jobs, libfuse unmounts and exits), SIGKILL if that hangs."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT_SEC)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_TIMEOUT_SEC)


class SlowHost:
    """The FUSE daemon, its files' loop devices and their fio processes; close() undoes all."""

    def __init__(
        self, workdir: Path, count: int, file_bytes: int = FILE_BYTES, base_ms: float = 0.0
    ) -> None:
        self.workdir, self.base_ms = workdir, base_ms
        self.mountpoint = workdir / "mnt"
        self.delay_file = workdir / "delays.json"
        self.files, self.file_bytes = [f"disk{index}" for index in range(count)], file_bytes
        self.devices: list[str] = []  # loop device names, in the order of `files`
        self.loads: dict[str, Load] = {}
        self._fio: dict[str, subprocess.Popen[bytes]] = {}
        self._daemon: Optional[subprocess.Popen[bytes]] = None
        self._log: Optional[IO[bytes]] = None

    def start(self) -> None:
        self.mountpoint.mkdir(parents=True)
        self.delay_file.write_text(json.dumps(self._by_file({})))
        self._log = open(self.workdir / "fuse_delay.log", "wb")  # noqa: SIM115  closed in close()
        self._daemon = subprocess.Popen(
            [sys.executable, str(DAEMON), str(self.mountpoint), "--files", ",".join(self.files),
             "--size", str(self.file_bytes), "--delays", str(self.delay_file)],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal goes to pytest only
        )  # fmt: skip
        deadline = time.monotonic() + MOUNT_TIMEOUT_SEC
        while not os.path.ismount(self.mountpoint):
            if self._daemon.poll() is not None or time.monotonic() > deadline:
                log = (self.workdir / "fuse_delay.log").read_text(errors="replace")
                raise RuntimeError(f"{DAEMON.name} did not mount: {log.strip()}")
            time.sleep(0.05)
        for name in self.files:
            done = subprocess.run(
                ["losetup", "--find", "--show", "--direct-io=on", str(self.mountpoint / name)],
                capture_output=True, text=True, check=True, timeout=30,
            )  # fmt: skip
            self.devices.append(Path(done.stdout.strip()).name)

    def direct_io(self) -> dict[str, bool]:
        """Whether the loop driver really does direct I/O on each backing file."""
        argv = ["losetup", "--list", "--noheadings", "--output", "NAME,DIO"]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout
        rows = dict(line.split() for line in out.splitlines())
        return {device: rows.get(f"/dev/{device}") == "1" for device in self.devices}

    def _by_file(self, delays: Mapping[str, float]) -> dict[str, float]:
        extra = {self.files[self.devices.index(dev)]: ms for dev, ms in delays.items()}
        return {name: self.base_ms + extra.get(name, 0.0) for name in self.files}

    def set_delays(self, delays: Mapping[str, float]) -> None:
        """Extra ms per request (over base_ms), by loop device; a device not named gets none."""
        temp = self.delay_file.with_suffix(".tmp")
        temp.write_text(json.dumps(self._by_file(delays)))
        os.replace(temp, self.delay_file)  # whole, and a new inode the daemon sees as a change
        time.sleep(DELAY_SETTLE_SEC)

    def set_load(self, load: Load | Mapping[str, Load]) -> None:
        """One Load for every device (a shared load change), or per device. fio restarts only
        for the devices whose load changed, all stopped first and then started together."""
        wanted = dict.fromkeys(self.devices, load) if isinstance(load, Load) else dict(load)
        changed = [dev for dev in self.devices if wanted.get(dev) != self.loads.get(dev)]
        for device in changed:
            _end(self._fio.pop(device, None))
        for device in changed:
            new = wanted.get(device)
            if new is not None and new.rate_iops > 0:
                self._fio[device] = subprocess.Popen(
                    [*new.argv(device), f"--output={self.workdir / f'fio-{device}.log'}"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
                self.loads[device] = new
            else:
                self.loads.pop(device, None)

    def served(self) -> dict[str, tuple[int, int]]:
        """(reads, writes) the daemon served, per loop device (its file's counts)."""
        counts = json.loads((self.mountpoint / ".stats").read_bytes())
        pairs = zip(self.files, self.devices)
        return {dev: (counts[name]["reads"], counts[name]["writes"]) for name, dev in pairs}

    def diskstats(self) -> dict[str, tuple[int, int, int, int]]:
        """(reads, read ms, writes, write ms) per device. A line reads, e.g.:
        `   7       3 loop3 2120 0 16960 640 2118 0 16944 705 0 1346 1346 0 0 0 0 0 0`."""
        found = {}
        with open("/proc/diskstats", encoding="ascii") as handle:
            for parts in (line.split() for line in handle):
                if len(parts) >= 11 and parts[2] in self.devices:
                    found[parts[2]] = (int(parts[3]), int(parts[6]), int(parts[7]), int(parts[10]))
        return found

    def measure(self, seconds: float) -> dict[str, Awaits]:
        """Rates and await per device over the next `seconds`, from /proc/diskstats."""
        before, started = self.diskstats(), time.monotonic()
        time.sleep(seconds)
        after, took = self.diskstats(), time.monotonic() - started
        result = {}
        for device in self.devices:
            moved = (b - a for a, b in zip(before[device], after[device]))
            reads, read_ms, writes, write_ms = moved
            total = reads + writes
            await_ms = (read_ms + write_ms) / total if total else 0.0
            result[device] = Awaits(reads / took, writes / took, await_ms)
        return result

    def calibrate(
        self, device: str, factor: float, seconds: float = 3.0, rounds: int = 3
    ) -> tuple[float, float]:
        """The delay (ms) that makes `device`'s await `factor` x the median of the others' under
        the current load, and the ratio last measured with it; the delays are 0 again after."""
        base = self.measure(seconds)
        peers = statistics.median(a.await_ms for d, a in base.items() if d != device)
        delay, ratio = max(0.05, (factor - 1.0) * peers), 1.0
        for _ in range(rounds):
            self.set_delays({device: delay})
            got = self.measure(seconds)
            peers = statistics.median(a.await_ms for d, a in got.items() if d != device)
            ratio = got[device].await_ms / peers
            if abs(ratio - factor) <= 0.1 * factor:
                break
            # await ~ base + k * delay: scale the delay by the excess wanted over the excess got
            delay *= (factor - 1.0) / max(ratio - 1.0, 0.1)
        self.set_delays({})
        return delay, ratio

    def close(self) -> None:
        """fio stopped, loop devices detached, FUSE unmounted and its daemon ended, even
        after a failure half-way; each step runs whatever the previous one did."""
        for device in list(self._fio):
            with contextlib.suppress(Exception):
                _end(self._fio.pop(device))
        for device in self.devices:
            _retry(["losetup", "-d", f"/dev/{device}"])
        if os.path.ismount(self.mountpoint) and not _retry(["umount", str(self.mountpoint)]):
            subprocess.run(["umount", "-l", str(self.mountpoint)], check=False, timeout=30)
        _end(self._daemon)
        if self._log is not None:
            self._log.close()


def _retry(argv: list[str], attempts: int = 20) -> bool:
    """A loop device or mount can stay busy for a moment after its last user ended."""
    for _ in range(attempts):
        if subprocess.run(argv, capture_output=True, check=False, timeout=30).returncode == 0:
            return True
        time.sleep(0.25)
    return False


@contextlib.contextmanager
def slow_host(
    count: int, skip: Callable[[str], None], file_bytes: int = FILE_BYTES, base_ms: float = 0.0
) -> Iterator[SlowHost]:
    """`count` loop devices on FUSE files, each request at least `base_ms` long, torn down
    even on failure; `skip` is called with the reason when root, FUSE or a tool is missing."""
    problems = [] if os.geteuid() == 0 else ["needs root (mount, losetup)"]
    if not Path("/dev/fuse").exists():
        problems.append("/dev/fuse is missing (no FUSE in this kernel or container)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        problems.append(f"{', '.join(missing)} not found (packages util-linux, fio)")
    if problems:
        skip("; ".join(problems))
    workdir = Path(tempfile.mkdtemp(prefix="failslow-")).resolve()
    host = SlowHost(workdir, count, file_bytes, base_ms)
    try:
        host.start()
        yield host
    finally:
        host.close()
        if not os.path.ismount(host.mountpoint):
            shutil.rmtree(host.workdir, ignore_errors=True)
