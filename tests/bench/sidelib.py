"""What the side-by-side benchmarks share: the two processes, their CPU, and the ratios.

Both tools run as the processes users run: node_exporter 1.5 (Debian's
`prometheus-node-exporter`) on loopback, scraped over HTTP, and the installed `diskprobe`
with `trigger = "stdin"` (Telegraf execd's signal = "STDIN"), one batch per line. Each one's
CPU is read from /proc/<pid>/stat before and after the same cycle (utime + stime of the
process, its reaped children (cutime + cstime) and its live descendants), so the bench's own
work (rewriting the trees, reading the answers) is never counted.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: ports.py
from ports import free_port

TICKS = os.sysconf("SC_CLK_TCK")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
DISKPROBE = Path(shutil.which("diskprobe") or Path(__file__).parents[2] / ".venv/bin/diskprobe")


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree_cpu_sec(pid: int) -> float:
    """User + system CPU of `pid`, its reaped children and its live descendants, in seconds.

    stat fields 14-17 (utime, stime, cutime, cstime) are at 11-14 once `pid (comm)` is cut.
    """
    ticks = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = _stat_fields(current)
            pending += _children(current)
        except (OSError, ValueError):
            continue  # it exited between the two reads: its time is in its parent's cutime
        ticks += sum(int(value) for value in fields[11:15])
    return ticks / TICKS


def _wait_or_kill(process: subprocess.Popen[bytes], seconds: float) -> None:
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class NodeExporter:
    """node_exporter on 127.0.0.1 with the given flags; scrape() is one collection."""

    def __init__(self, flags: Sequence[str], log: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}/metrics"
        address = self.url.split("/")[2]
        argv = [NODE_EXPORTER, f"--web.listen-address={address}", *flags]
        self._log = open(log, "wb")  # noqa: SIM115 (lives as long as the process)
        self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.scrape()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"node_exporter did not start: see {log}") from None
                time.sleep(0.1)

    def scrape(self) -> bytes:
        with urllib.request.urlopen(self.url, timeout=120) as answer:
            return bytes(answer.read())

    def cpu_sec(self) -> float:
        return tree_cpu_sec(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        _wait_or_kill(self.process, 10)
        self._log.close()


class Diskprobe:
    """The installed diskprobe, trigger = "stdin": cycle() is one batch, read to its end.

    A batch ends with one diskprobe_agent point per collector; `marker` is the start of the
    last collector's (e.g. b"diskprobe_agent,collector=io,"). Lines are counted, not kept.
    """

    def __init__(self, config: Path, env: dict[str, str], marker: bytes, log: Path) -> None:
        self._log = open(log, "wb")  # noqa: SIM115 (lives as long as the process)
        argv = [str(DISKPROBE), "--config", str(config)]
        self.process = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )
        self._marker = marker
        self._done = threading.Semaphore(0)
        self.lines = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines += 1
            if line.startswith(self._marker):
                self._done.release()
        self._done.release()

    def cycle(self, timeout: float = 120.0) -> int:
        """One batch; the number of lines it wrote (the agent points included)."""
        assert self.process.stdin is not None
        before = self.lines
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()
        if not self._done.acquire(timeout=timeout) or self.process.poll() is not None:
            raise RuntimeError(f"diskprobe wrote no batch (exit {self.process.poll()})")
        return self.lines - before

    def cpu_sec(self) -> float:
        return tree_cpu_sec(self.process.pid)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # EOF: diskprobe stops as under Telegraf
        _wait_or_kill(self.process, 20)
        self._log.close()


def diskprobe_env(roots: dict[str, str]) -> dict[str, str]:
    """The environment without the caller's HOST_* roots, plus `roots`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HOST_")}
    env.update(roots)
    return env


CPU_TICK_SEC = 1 / os.sysconf("SC_CLK_TCK")  # /proc/<pid>/stat counts CPU in these ticks
MIN_TICKS = 10  # a round where either tool used fewer is off by more than 10 %: not a figure


class Rounds:
    """Per-round seconds of two tools over the same cycles; the ratio ours / theirs.

    A round in which either tool's time is under MIN_TICKS of `resolution` (a CPU tick by
    default; wall clocks pass a finer one) gives no ratio: it says "too short to measure"
    instead of a figure made of a tick or two, or of none (a ratio of 0.000)."""

    def __init__(self, ours: str, theirs: str, resolution: float = CPU_TICK_SEC) -> None:
        self.ours, self.theirs, self.resolution = ours, theirs, resolution
        self.rows: list[tuple[float, float, int]] = []  # (ours s, theirs s, cycles)
        self.note = ""  # printed under the ratios

    def add(self, ours_sec: float, theirs_sec: float, cycles: int) -> None:
        self.rows.append((ours_sec, theirs_sec, cycles))

    def _measurable(self, ours: float, theirs: float) -> bool:
        return min(ours, theirs) >= MIN_TICKS * self.resolution

    def ratios(self) -> list[float]:
        return [ours / theirs for ours, theirs, _ in self.rows if self._measurable(ours, theirs)]

    def report(self, what: str, target: float | None = None) -> str:
        lines = [f"{what}: {len(self.rows)} rounds of {self.rows[0][2]} cycles"]
        for index, (ours, theirs, cycles) in enumerate(self.rows, 1):
            ratio = f"ratio {ours / theirs:.3f}" if self._measurable(ours, theirs) else (
                "too short to measure")  # fmt: skip
            lines.append(
                f"  round {index}: {self.ours} {ours * 1000 / cycles:7.1f} ms  {self.theirs} "
                f"{theirs * 1000 / cycles:7.1f} ms  {ratio}"
            )
        ratios = self.ratios()
        if not ratios:
            lines.append(
                f"  ratio {self.ours}/{self.theirs}: too short to measure (in every round "
                f"one tool took under {MIN_TICKS} x {self.resolution * 1000:g} ms; more cycles)"
            )
            return "\n".join(lines + ([self.note] if self.note else []))
        verdict = ""
        if target is not None:
            met = "met" if statistics.median(ratios) <= target else "MISSED"
            verdict = f"  (target <= {target:.2f}: {met})"
        lines.append(
            f"  ratio {self.ours}/{self.theirs}: min {min(ratios):.3f}  median "
            f"{statistics.median(ratios):.3f}  max {max(ratios):.3f}{verdict}"
        )
        return "\n".join(lines + ([self.note] if self.note else []))
