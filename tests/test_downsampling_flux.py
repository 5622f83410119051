"""The shipped InfluxDB 2.x downsampling task, checked by Flux's own parser and type checker.

No InfluxDB 2.x runs here (no Go toolchain, no 2.x package), so the task is not executed: the
Flux language server's WebAssembly build (npm @influxdata/flux-lsp-node, the Rust parser and
semantic analysis of the Flux stdlib) parses it and type-checks every call against the stdlib
signatures. tests/run.sh installs it into the venv:
npm install --no-save --no-package-lock --prefix .venv @influxdata/flux-lsp-node@0.8.40
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ci import skip_or_fail

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "dashboards" / "downsampling" / "influxdb2-task.flux"
FLUX_LSP = Path(os.environ.get(
    "DISKPROBE_FLUX_LSP",
    ROOT / ".venv" / "node_modules" / "@influxdata" / "flux-lsp-node" / "flux-lsp-node.js"))
# Prints {"parsed": ..., "semantic": ...} for the Flux text on standard input.
CHECK = """
const flux = require(process.argv[1]);
const text = require("fs").readFileSync(0, "utf8");
console.log(JSON.stringify({parsed: flux.is_valid_flux(text),
                            semantic: new flux.Flux(text).is_valid()}));
"""


def _check(text: str) -> dict[str, bool]:
    node = shutil.which("node")
    if node is None or not FLUX_LSP.is_file():
        skip_or_fail(f"node and {FLUX_LSP} are needed (see this module's docstring)")
    done = subprocess.run([node, "-e", CHECK, str(FLUX_LSP)], input=text, text=True,
                          capture_output=True, timeout=60, check=True)
    result: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_task_parses_and_type_checks() -> None:
    assert _check(TASK.read_text(encoding="utf-8")) == {"parsed": True, "semantic": True}


@pytest.mark.parametrize("broken", [
    ("fn: mean,", "fn: meen,"),  # no such function
    ("every: 5m,", 'every: "5m",'),  # a string for a duration
    ("|> to(bucket: long)", "|> to(buckt: long)"),  # no such parameter
    ('(r) => r._measurement == measurement)', '(r) => r._measurement == measurement'),
])
def test_the_checker_rejects_a_broken_task(broken: tuple[str, str]) -> None:
    text = TASK.read_text(encoding="utf-8")
    assert broken[0] in text
    assert _check(text.replace(broken[0], broken[1], 1)) != {"parsed": True, "semantic": True}
