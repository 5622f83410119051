"""The VictoriaMetrics two-store setup, for real: a raw store with short retention, vmalert
replaying the shipped rules over back-filled diskprobe line protocol, and a long-term store
that receives the recording rules' series and the ALERTS series
(dashboards/prometheus/victoriametrics-two-store.md). Used by tests/test_prometheus_rules.py
and tests/bench/bench_downsampling_vm.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from diskprobe.metric import Metric
from diskprobe.serializers.influx import InfluxSerializer
from victoria_server import VictoriaMetrics

from ports import free_port

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "dashboards" / "prometheus"
VMALERT = shutil.which("vmalert") or "/usr/bin/vmalert"
DATABASE = "telegraf"


class Store(VictoriaMetrics):
    """A VictoriaMetrics with the retention the two-store setup gives it."""

    def __init__(self, root: Path, retention: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        # No result cache: the tests query again right after writing.
        super().__init__(root, retention, ("-search.disableCache",))
        self.written: set[str] = set()  # metric names write() sent, for settled()

    def write(self, metrics: Iterable[Metric], batch: int = 20_000) -> int:
        """diskprobe's own line protocol, as its InfluxDB output sends it; returns bytes sent."""
        serializer, pending, sent = InfluxSerializer(), [], 0
        for metric in metrics:
            self.written.update(f"{metric.measurement}_{name}" for name in metric.fields)
            pending.append(metric)
            if len(pending) >= batch:
                sent += self.post(serializer.serialize(pending))
                pending = []
        if pending:
            sent += self.post(serializer.serialize(pending))
        return sent

    def post(self, body: str) -> int:
        data = body.encode()
        request = urllib.request.Request(f"{self.url}/write?db={DATABASE}", data=data)
        with urllib.request.urlopen(request, timeout=60) as reply:
            reply.read()
        return len(data)

    def get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=60) as reply:
            return json.loads(reply.read())

    def flush(self) -> None:
        urllib.request.urlopen(self.url + "/internal/force_flush", timeout=30).read()

    def settled(self, match: str, seconds: float = 90.0,
                names: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """export(match) once the server returns the same non-empty answer twice, holding
        every metric of `names` and every one write() sent that `match`'s name regex selects:
        what /write accepted is searchable only after the server's next in-memory flush, and
        on a loaded machine not all of one post at once (seen under CI: the agent and io
        series twice alike, the fs ones not yet)."""
        pattern = re.search(r'__name__=~"([^"]*)"', match)
        if pattern:
            names |= {name for name in self.written if re.fullmatch(pattern[1], name)}
        deadline, last = time.monotonic() + seconds, None
        while time.monotonic() < deadline:
            self.flush()
            rows = sorted(self.export(match), key=lambda row: json.dumps(row, sort_keys=True))
            present = {row["metric"]["__name__"] for row in rows}
            if rows and rows == last and names <= present:
                return rows
            last = rows
            time.sleep(0.5)
        raise AssertionError(f"no stable answer for {match} in {seconds} s")

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        """An instant query: [{"metric": labels, "value": [t, "v"]}]."""
        reply = self.get("/api/v1/query", query=expr, time=f"{at:.3f}")
        result: list[dict[str, Any]] = reply["data"]["result"]
        return result

    def export(self, match: str) -> list[dict[str, Any]]:
        """Every stored sample of the series `match` selects, as /api/v1/export gives them."""
        query = urllib.parse.urlencode({"match[]": match})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{query}", timeout=60) as reply:
            return [json.loads(row) for row in reply.read().decode().splitlines() if row]


def rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def replay(rules: list[Path], raw: Store, long_term: Store, start: float, end: float,
           log: Path) -> None:  # fmt: skip
    """vmalert in replay mode: evaluates every group of `rules` over [start, end] from `raw`
    and writes the results (recorded series, ALERTS) to `long_term`; raises if it fails."""
    command = [
        VMALERT, *(f"-rule={path}" for path in rules),
        f"-datasource.url={raw.url}", f"-remoteWrite.url={long_term.url}",
        f"-replay.timeFrom={rfc3339(start)}", f"-replay.timeTo={rfc3339(end)}",
        "-replay.rulesDelay=0", "-replay.disableProgressBar",
        # the range query step: each group's own interval (default: 5m for every group)
        "-datasource.queryStep=0",
        # replay serves nothing, but never the default :8880 another vmalert may hold
        f"-httpListenAddr=127.0.0.1:{free_port()}",
    ]
    with open(log, "wb") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=300,
                              check=False)
    if done.returncode != 0:
        raise AssertionError(f"vmalert failed ({done.returncode}): {log.read_text()[-3000:]}")
    long_term.flush()
