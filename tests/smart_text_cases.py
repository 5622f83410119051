"""Golden smartctl TEXT cases (tests/golden/smart-text): the real SmartCollector reads each one
through tests/fake_smartctl/smartctl posing as smartctl 6.6 (no JSON), so the text path runs
exactly as on an old smartctl: --version, --scan-open, then one `--all` read per drive.

A case folder holds what the fake replays (`device`, `response.txt`, optional `exit_status`),
its `PROVENANCE` (the corpus MANIFEST row) and the reviewed `expected.out`.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from diskprobe.collectors.base import Collection
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import SmartConfig
from diskprobe.log import Logger
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.state import StateStore

TESTS = Path(__file__).parent
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
GOLDEN_TEXT = TESTS / "golden" / "smart-text"
CASE_FILES = ("device", "response.txt", "exit_status")
SMARTCTL_66 = (
    "smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0-8-amd64] (local build)\n"
    "Copyright (C) 2002-16, Bruce Allen, Christian Franke, www.smartmontools.org\n"
)
FIXED_TIME_NS = 1_700_000_000_000_000_000
_TIMESTAMP = re.compile(r" (\d+)$")


def text_cases() -> list[Path]:
    return sorted(p for p in GOLDEN_TEXT.iterdir() if (p / "device").is_file())


@dataclass
class TextRun:
    text: str  # line protocol, timestamps set to FIXED_TIME_NS
    collection: Collection
    log: str
    calls: list[list[str]]  # every argv the fake smartctl got


def run_text_case(case: Path, workdir: Path) -> TextRun:
    """One blocking read cycle of the collector on this case alone (FAKE_SMARTCTL_DIR set)."""
    root = workdir / "fake"
    (root / case.name).mkdir(parents=True)
    for name in CASE_FILES:
        if (case / name).is_file():
            shutil.copyfile(case / name, root / case.name / name)
    (root / "version").write_text(SMARTCTL_66, encoding="utf-8")
    stream = io.StringIO()
    log = Logger(stream, debug=True)
    state = StateStore(str(workdir / "state.json"), log, save_interval=0.0)
    # The fake run by this interpreter directly: `python3` may be a slow pyenv shim.
    smartctl = workdir / "smartctl"
    smartctl.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_SMARTCTL}" "$@"\n')
    smartctl.chmod(0o755)
    config = SmartConfig(smartctl_path=str(smartctl))
    collector = SmartCollector(config, log, state, blocking=True)
    before = time.time_ns()
    try:
        collection = collector.collect()
    finally:
        collector.close()
    after = time.time_ns()
    metrics = [m for m in collection.metrics if m.measurement.startswith("diskprobe_smart")]
    lines = InfluxSerializer().serialize(metrics).splitlines()
    text = "".join(_fixed_time(line, before, after) + "\n" for line in lines)
    calls_log = root / "calls.log"
    calls = (
        [json.loads(line) for line in calls_log.read_text().splitlines()]
        if calls_log.exists()
        else []
    )
    return TextRun(text, collection, stream.getvalue(), calls)


def _fixed_time(line: str, earliest_ns: int, latest_ns: int) -> str:
    match = _TIMESTAMP.search(line)
    assert match is not None, f"no timestamp: {line}"
    assert earliest_ns <= int(match.group(1)) <= latest_ns, f"not the collect's time: {line}"
    return f"{line[: match.start()]} {FIXED_TIME_NS}"


def main(names: list[str]) -> None:
    """Print what the collector emits now for the named cases, to review against response.txt
    before an expected.out is edited by hand. It writes nothing."""
    import os
    import tempfile

    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["FAKE_SMARTCTL_DIR"] = str(Path(tmp) / "fake")
            sys.stdout.write(run_text_case(GOLDEN_TEXT / name, Path(tmp)).text)


if __name__ == "__main__":
    main(sys.argv[1:])
