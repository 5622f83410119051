"""A state file never grows past what the next start reads back (state.MAX_BYTES).

Full 6 h forecast windows took ~25 kB per mount: past ~640 mounts the file exceeded the
16 MiB a start reads, and a start moves an oversized file aside whole, SMART baselines and
fail-slow evidence with it. The windows now share a point budget (test_forecast_scale.py);
whatever else outgrows the file, the store leaves the largest sections out of it instead.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diskprobe import state
from diskprobe.log import Logger
from diskprobe.state import StateStore

SMALL_LIMIT = 20_000
DISKPROBE = Path(sys.executable).parent / "diskprobe"  # the installed console script


def test_the_largest_sections_are_left_out_and_the_rest_survives_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "MAX_BYTES", SMALL_LIMIT)
    path = str(tmp_path / "state.json")
    stream = io.StringIO()
    store = StateStore(path, Logger(stream))
    store.section("smart_baselines")["S1"] = {"5": 0, "197": 3}
    forecast = store.section("fs_forecast")
    for mount in range(40):  # ~30 kB of windows: over the limit
        forecast[f"/mnt/{mount}"] = {"avail": [[1.7e9 + t, 1e12 - t] for t in range(30)]}
    store.section("medium")["x"] = "y" * 5_000
    store.save(force=True)
    assert os.path.getsize(path) <= SMALL_LIMIT
    assert "section 'fs_forecast' is left out" in stream.getvalue()
    assert len(forecast) == 40  # still in memory: this process goes on forecasting

    again = io.StringIO()
    reread = StateStore(path, Logger(again))
    assert reread.section("smart_baselines") == {"S1": {"5": 0, "197": 3}}
    assert reread.section("medium") == {"x": "y" * 5_000}  # only what had to go went
    assert reread.section("fs_forecast") == {}
    assert "unusable" not in again.getvalue() and not os.path.exists(path + ".corrupt")
    store.save(force=True)
    assert stream.getvalue().count("W!") == 1  # said once, not every save


def test_the_installed_command_keeps_its_state_when_a_section_outgrows_the_file(
    tmp_path: Path,
) -> None:
    # A file exactly at the limit (a foreign section, as large as full windows of ~640 mounts
    # once were): one run adds its own sections, which would push the file over the limit.
    path = tmp_path / "state.json"
    body = {"format": "diskprobe-state", "version": 1, "saved_at": 1.0,
            "sections": {"zz_big": {"x": "a" * (state.MAX_BYTES - 120)}}}  # fmt: skip
    text = json.dumps(body, separators=(",", ":"))
    path.write_text(text + " " * (state.MAX_BYTES - len(text)))
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{path}"\n[smart]\nenabled = false\n')
    command = [str(DISKPROBE), "--config", str(config), "--once"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    assert "section 'zz_big' is left out" in first.stderr
    assert path.stat().st_size <= state.MAX_BYTES
    saved = json.loads(path.read_text())["sections"]
    assert "zz_big" not in saved and "fs_forecast" in saved and saved["fs_forecast"]
    second = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert second.returncode == 0, second.stderr
    assert "unusable" not in second.stderr, second.stderr
    assert set(json.loads(path.read_text())["sections"]["fs_forecast"]) == set(saved["fs_forecast"])
