"""A real VictoriaMetrics server (Debian's victoria-metrics) on a free loopback port, for the
tests of what reaches it (tests/conftest.py's `victoria` fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from ports import free_port

VM_BINARY = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"


class VictoriaMetrics:
    def __init__(self, root: Path, retention: str = "100y",
                 flags: tuple[str, ...] = ()) -> None:
        self.root, self.port = root, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.retention, self.flags = retention, flags

    def start(self) -> None:
        log = open(self.root / "vm.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [VM_BINARY, f"-httpListenAddr=127.0.0.1:{self.port}",
             f"-storageDataPath={self.root / 'data'}", f"-retentionPeriod={self.retention}",
             *self.flags],
            stdout=log, stderr=log,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as reply:
                    if reply.read() == b"OK":
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(
            "victoria-metrics did not start: " + (self.root / "vm.log").read_text()
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
            self.process = None

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...], int], int]:
        """(metric name, labels, timestamp ms) -> how many samples the server holds."""
        urllib.request.urlopen(self.url + "/internal/force_flush", timeout=10).read()
        query = urllib.parse.urlencode({"match[]": '{__name__=~"diskprobe_.*"}'})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{query}", timeout=30) as reply:
            text = reply.read().decode()
        counts: dict[tuple[str, tuple[tuple[str, str], ...], int], int] = {}
        for row in filter(None, text.splitlines()):
            series = json.loads(row)
            labels = dict(series["metric"])
            name = labels.pop("__name__")
            labels.pop("db", None)
            for stamp in series["timestamps"]:
                key = (name, tuple(sorted(labels.items())), stamp)
                counts[key] = counts.get(key, 0) + 1
        return counts
