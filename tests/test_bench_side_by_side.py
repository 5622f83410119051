"""The side-by-side benchmark (tests/bench/side_by_side.py) still runs: its --quick mode, small
sizes, every section. The figures are not judged here (a shared machine's timing is no test,
and 2 cycles are a tick or two of CPU): what is checked is that each section ran both tools
over the same cycles and printed, for each comparison, either finite non-zero ratios or an
explicit "too short to measure"."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci import skip_or_fail

BENCH = Path(__file__).parent / "bench" / "side_by_side.py"
RATIO = re.compile(r"ratio (\S+)/(\S+): (?:min (\S+)\s+median (\S+)|(too short to measure))")


@pytest.mark.root
@pytest.mark.slow
def test_side_by_side_quick_run() -> None:
    if os.geteuid() != 0:
        skip_or_fail("the side-by-side benchmark needs root (mount namespaces)")
    if shutil.which("prometheus-node-exporter") is None:
        skip_or_fail("prometheus-node-exporter is not installed")
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.startswith("machine: "), out[:500]
    ratios = RATIO.findall(out)
    pairs = {(ours, theirs) for ours, theirs, *_ in ratios}
    assert ("diskprobe", "node_exporter") in pairs and ("diskprobe", "floor") in pairs, out
    # io: two configurations; fs: CPU and wall; procio: one; each figures or "too short"
    assert len(ratios) >= 5, out
    for _, _, low, middle, too_short in ratios:
        if not too_short:
            assert 0 < float(low) <= float(middle) and math.isfinite(float(middle)), out
    for section in ("io", "fs", "fs-steady", "procio"):
        assert f"({section}: " in out, out


def test_rounds_give_no_ratio_for_a_tick_or_none() -> None:
    """A round measured at 0 or 1 ticks says so; it never prints a ratio of 0.000 or 3.000."""
    sys.path.insert(0, str(BENCH.parent))
    from sidelib import CPU_TICK_SEC, MIN_TICKS, Rounds

    short = Rounds("diskprobe", "node_exporter")
    short.add(0.0, 3 * CPU_TICK_SEC, 2)
    short.add(CPU_TICK_SEC, 3 * CPU_TICK_SEC, 2)
    report = short.report("quick", 1.0)
    assert "ratio 0.000" not in report and report.count("too short to measure") == 3, report
    assert RATIO.search(report) and RATIO.findall(report)[0][4], report
    long = Rounds("diskprobe", "node_exporter")
    long.add(MIN_TICKS * CPU_TICK_SEC, 2 * MIN_TICKS * CPU_TICK_SEC, 50)
    long.add(0.0, 2 * MIN_TICKS * CPU_TICK_SEC, 50)  # left out of the figures, and said so
    report = long.report("long", 1.0)
    assert RATIO.findall(report)[0][2:4] == ("0.500", "0.500"), report
    assert "round 2: diskprobe     0.0 ms  node_exporter     4.0 ms  too short" in report
