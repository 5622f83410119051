"""`diskprobe doctor`: the self-check a new user runs, as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _doctor(
    tmp_path: Path, extra: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n{extra}')
    return subprocess.run(
        [sys.executable, "-m", "diskprobe", "doctor", "--config", str(config)],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_healthy_setup_passes_and_reports_what_it_sees(tmp_path: Path) -> None:
    result = _doctor(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert all(line[:5].rstrip() in ("OK", "INFO", "WARN", "FAIL") for line in lines)
    assert f"OK   state file: {tmp_path / 'state.json'}" in lines
    assert any(line.startswith("OK   I/O: ") for line in lines)
    assert any(line.startswith("OK   filesystems: ") and " / " in line + " " for line in lines)
    assert lines[-1].startswith("INFO 0 problem(s)")


def test_missing_proc_files_and_smartctl_fail_with_the_fix(tmp_path: Path) -> None:
    empty_proc = tmp_path / "proc"
    empty_proc.mkdir()
    result = _doctor(
        tmp_path,
        '[smart]\nsmartctl_path = "/nonexistent/smartctl"\n',
        env={"HOST_PROC": str(empty_proc)},
    )
    assert result.returncode == 1
    assert f"FAIL {empty_proc}/diskstats NOT readable" in result.stdout
    assert "FAIL smartctl not found (/nonexistent/smartctl): install smartmontools" in result.stdout
    assert "Traceback" not in result.stderr


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _doctor(tmp_path, "[smart]\nconcurency = 2\n")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "unknown key 'concurency' (closest valid key: 'concurrency')"
    )
