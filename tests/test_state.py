"""The state file: atomic, private, rate-limited, and never fatal when damaged."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

from diskprobe.log import Logger
from diskprobe.state import StateStore

from helpers import FakeClock


def _store(
    path: Path, env: dict[str, str] | None = None, clock: FakeClock | None = None
) -> tuple[StateStore, io.StringIO]:
    stream = io.StringIO()
    store = StateStore(str(path), Logger(stream), 60.0, env=env or {"HOME": str(path.parent)},
                       monotonic=clock or FakeClock())  # fmt: skip
    return store, stream


def test_round_trip_mode_0600_and_no_temp_files_left(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    store, _ = _store(path)
    store.section("fs_forecast")["/"] = {"avail": [[1.0, 2.0]]}
    store.save()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json", "state.json.lock"]
    again, log = _store(path)
    assert again.section("fs_forecast") == {"/": {"avail": [[1.0, 2.0]]}}
    assert log.getvalue() == ""


def test_saves_at_most_once_per_interval_unless_forced(tmp_path: Path) -> None:
    path, clock = tmp_path / "state.json", FakeClock()
    store, _ = _store(path, clock=clock)
    store.section("x")["n"] = 1
    store.save()
    store.section("x")["n"] = 2
    clock.now += 30
    store.save()
    assert json.loads(path.read_text())["sections"]["x"]["n"] == 1
    clock.now += 31
    store.save()
    assert json.loads(path.read_text())["sections"]["x"]["n"] == 2
    store.section("x")["n"] = 3
    store.save(force=True)
    assert json.loads(path.read_text())["sections"]["x"]["n"] == 3


def test_truncated_file_is_logged_moved_aside_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    store, _ = _store(path)
    store.section("fs_forecast")["/"] = {"avail": [[1.0, 2.0]] * 50}
    store.save()
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    damaged, log = _store(path)
    assert damaged.sections == {}
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("W! state: ") and str(path) in lines[0]
    assert (tmp_path / "state.json.corrupt").read_text() == text[: len(text) // 2]
    damaged.save()
    assert json.loads(path.read_text())["format"] == "diskprobe-state"


def test_foreign_json_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"hello": 1}')
    store, log = _store(path)
    assert store.sections == {} and "not a diskprobe state file" in log.getvalue()


def test_unwritable_directory_falls_back_to_xdg_state_home(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store, log = _store(blocker / "state.json", env={"XDG_STATE_HOME": str(tmp_path / "xdg")})
    assert store.path == str(tmp_path / "xdg" / "diskprobe" / "state.json")
    assert log.getvalue().startswith("I! state: ")


def test_nothing_writable_keeps_state_in_memory_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store, log = _store(blocker / "state.json", env={"XDG_STATE_HOME": str(blocker / "xdg")})
    assert store.path is None
    store.section("a")["b"] = 1
    store.save(force=True)
    assert log.getvalue().count("W! ") == 1 and "in memory" in log.getvalue()


def test_absurdly_nested_json_is_survived(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("[" * 100_000)
    store, log = _store(path)
    assert store.sections == {} and log.getvalue().startswith("W! state: ")
