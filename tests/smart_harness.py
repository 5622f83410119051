"""The SMART tests' rig: drive cases for the fake smartctl, and a SmartCollector on them.

A case is a folder (tests/golden/smart-json/<case>/, tests/golden/smart-text/<case>/,
tests/fake_smartctl/cases/<case>/, or one made in a test) holding what
tests/fake_smartctl/smartctl replays: `device`, `response.json` and/or `response.txt`, optional
`exit_status` and `behaviour`, and optional `version` (the `smartctl --version` text; without
one the fake is smartctl 7.3, which speaks JSON). Tests copy the cases they need into a
temporary FAKE_SMARTCTL_DIR, so they can change a case (behaviour, response) without touching
the tree. The golden cases' runs and checks: tests/smart_golden.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from diskprobe.collectors.base import Clock, Collection, CollectorContext
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import SmartConfig
from diskprobe.log import Logger
from diskprobe.smart.devices import DriveSpec
from diskprobe.state import StateStore

TESTS = Path(__file__).parent
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
GOLDEN = TESTS / "golden"
GOLDEN_JSON = GOLDEN / "smart-json"
GOLDEN_TEXT = GOLDEN / "smart-text"
CASE_FILES = ("device", "response.json", "response.txt", "exit_status", "behaviour")


def device_line(case: Path) -> str:
    return (case / "device").read_text(encoding="utf-8").strip()


def install_case(source: Path, root: Path, name: str | None = None) -> Path:
    """Copy the replayable files of one case folder into FAKE_SMARTCTL_DIR `root`; a case's
    `version` becomes the fake's (root/version: one smartctl per directory)."""
    target = root / (name or source.name)
    target.mkdir(parents=True, exist_ok=True)
    for file_name in CASE_FILES:
        if (source / file_name).is_file():
            shutil.copyfile(source / file_name, target / file_name)
    if (source / "version").is_file():
        shutil.copyfile(source / "version", root / "version")
    return target


def set_behaviour(case: Path, behaviour: str | None) -> None:
    path = case / "behaviour"
    if behaviour:
        path.write_text(behaviour + "\n", encoding="utf-8")
    elif path.exists():
        path.unlink()


# -- what the fake smartctl was asked ---------------------------------------------------------


def read_calls(root: Path) -> list[list[str]]:
    """Every argv the fake smartctl was run with, oldest first."""
    log = root / "calls.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def call_device(argv: list[str]) -> str | None:
    """The drive spec a call read ("/dev/sda -d sat"); None for --scan-open / --version."""
    if any(arg in ("--scan", "--scan-open", "--version", "-V") for arg in argv) or not argv:
        return None
    device_type = ""
    for i, arg in enumerate(argv[:-1]):
        if arg in ("-d", "--device"):
            device_type = argv[i + 1]
        elif arg.startswith("--device="):
            device_type = arg.split("=", 1)[1]
    return str(DriveSpec(argv[-1], device_type))


def calls_per_device(root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for argv in read_calls(root):
        device = call_device(argv)
        if device is not None:
            counts[device] = counts.get(device, 0) + 1
    return counts


# -- a collector on the fake ------------------------------------------------------------------


@dataclass
class Rig:
    """A SmartCollector on the fake smartctl, with its log and state file."""

    root: Path  # FAKE_SMARTCTL_DIR
    state_path: Path
    log_stream: io.StringIO
    log: Logger
    state: StateStore
    collector: SmartCollector

    def log_lines(self, prefix: str = "") -> list[str]:
        lines = self.log_stream.getvalue().splitlines()
        return [line for line in lines if line.startswith(prefix)]

    def collect(self) -> Collection:
        return self.collector.collect()

    def close(self) -> None:
        self.collector.close()


def make_rig(
    root: Path,
    state_path: Path,
    smartctl_path: str | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    blocking: bool = True,
    log_stream: io.StringIO | None = None,
    **config: Any,
) -> Rig:
    """FAKE_SMARTCTL_DIR must be set (monkeypatch.setenv) before collect() runs smartctl."""
    stream = log_stream if log_stream is not None else io.StringIO()
    log = Logger(stream, debug=True)
    state = StateStore(str(state_path), log, save_interval=0.0)
    smart_config = SmartConfig(smartctl_path=smartctl_path or str(FAKE_SMARTCTL), **config)
    context = CollectorContext(log=log, state=state, clock=Clock(monotonic=monotonic))
    collector = SmartCollector(smart_config, context, blocking=blocking)
    return Rig(root, state_path, stream, log, state, collector)


def direct_smartctl(workdir: Path) -> Path:
    """A wrapper in `workdir` that runs the fake (on Debian's interpreter, by its shebang)."""
    smartctl = workdir / "smartctl"
    smartctl.write_text(f'#!/bin/sh\nexec "{FAKE_SMARTCTL}" "$@"\n')
    smartctl.chmod(0o755)
    return smartctl


@contextlib.contextmanager
def fake_smartctl_env(root: Path) -> Iterator[None]:
    """FAKE_SMARTCTL_DIR set for the duration (for scripts; tests use monkeypatch.setenv)."""
    saved = os.environ.get("FAKE_SMARTCTL_DIR")
    os.environ["FAKE_SMARTCTL_DIR"] = str(root)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("FAKE_SMARTCTL_DIR", None)
        else:
            os.environ["FAKE_SMARTCTL_DIR"] = saved
