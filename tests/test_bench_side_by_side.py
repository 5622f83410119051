"""The side-by-side benchmark (tests/bench/side_by_side.py) still runs: its --quick mode, small
sizes, every section. The figures are not judged here (a shared machine's timing is no test);
what is checked is that each section ran both tools over the same cycles and printed ratios."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci import skip_or_fail

BENCH = Path(__file__).parent / "bench" / "side_by_side.py"
RATIO = re.compile(r"ratio (\S+)/(\S+): min (\d+\.\d+)\s+median (\d+\.\d+)")


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
    pairs = {(ours, theirs) for ours, theirs, _, _ in ratios}
    assert ("diskprobe", "node_exporter") in pairs and ("diskprobe", "floor") in pairs, out
    # io: two configurations; fs: CPU and wall; procio: one: each a positive, finite ratio.
    assert len(ratios) >= 5, out
    for _, _, low, middle in ratios:
        assert 0 < float(low) <= float(middle) < 100, out
    for section in ("io", "fs", "fs-steady", "procio"):
        assert f"({section}: " in out, out
