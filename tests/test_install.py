"""The README's first command, run for real: a venv from Debian's python3, pip install, --once."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ci import skip_or_fail
from lineproto import parse_lines

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_readme_install_command_installs_and_runs(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        skip_or_fail("the README's install command uses sudo and apt-get; run the suite as root")
    command = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)[0]
    prefix = tmp_path / "diskprobe"
    command = command.replace("sudo ", "").replace("/opt/diskprobe", str(prefix))
    result = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # pip prints its progress on stdout too; the batch is the diskprobe_* lines after it.
    batch = [line for line in result.stdout.splitlines() if line.startswith("diskprobe_")]
    points = parse_lines("\n".join(batch))
    assert {p.measurement for p in points} >= {"diskprobe_agent"}
    assert (prefix / "bin" / "diskprobe").exists()
