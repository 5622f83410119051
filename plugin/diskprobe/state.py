"""A small persistent state file shared by collectors (forecast windows, SMART baselines).

Written atomically (temp file + fsync + rename, mode 0600), at most once per save interval.
A corrupt or foreign file is logged, moved aside and replaced; nothing here is ever fatal.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from typing import Any, Callable, Mapping

from diskprobe.log import Logger

FORMAT = "diskprobe-state"
VERSION = 1


def candidate_paths(configured: str, env: Mapping[str, str]) -> list[str]:
    """The configured path, then $XDG_STATE_HOME or ~/.local/state (per the XDG spec)."""
    state_home = env.get("XDG_STATE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )
    fallback = os.path.join(state_home, "diskprobe", "state.json")
    return [configured] if configured == fallback else [configured, fallback]


def _writable_dir(path: str) -> bool:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK | os.X_OK) and (
        not os.path.exists(path) or os.access(path, os.R_OK | os.W_OK)
    )


class StateStore:
    def __init__(
        self,
        configured_path: str,
        log: Logger,
        save_interval: float = 60.0,
        env: Mapping[str, str] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self.save_interval = save_interval
        self._monotonic = monotonic
        self._last_save: float | None = None
        self.sections: dict[str, Any] = {}
        candidates = candidate_paths(configured_path, os.environ if env is None else env)
        self.path = next((path for path in candidates if _writable_dir(path)), None)
        if self.path is None:
            log.warn(
                f"state: none of {', '.join(candidates)} is writable; keeping state in memory "
                "(forecasts restart with diskprobe)"
            )
        elif self.path != configured_path:
            log.info(f"state: {configured_path} is not writable; using {self.path}")
        self._load()

    @classmethod
    def in_memory(cls, log: Logger) -> StateStore:
        """A store that never touches disk (the window lives as long as its owner)."""
        store = cls.__new__(cls)
        store._log, store.save_interval, store._monotonic = log, 0.0, time.monotonic
        store._last_save, store.sections, store.path = None, {}, None
        return store

    def _load(self) -> None:
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError("not a diskprobe state file")
            sections = data.get("sections")
            if not isinstance(sections, dict):
                raise ValueError("no sections")
            self.sections = sections
        # JSONDecodeError is a ValueError; absurdly deep nesting raises RecursionError.
        except (OSError, ValueError, RecursionError) as error:
            aside = self.path + ".corrupt"
            self._log.warn(
                f"state: {self.path} unreadable ({error}); moved to {aside}, starting afresh"
            )
            with contextlib.suppress(OSError):
                os.replace(self.path, aside)

    def section(self, name: str) -> dict[str, Any]:
        """A collector's part of the state; it mutates the dict, save() persists it."""
        value = self.sections.get(name)
        if not isinstance(value, dict):
            value = self.sections[name] = {}
        return value

    def save(self, force: bool = False) -> None:
        if self.path is None:
            return
        now = self._monotonic()
        if not force and self._last_save is not None and now - self._last_save < self.save_interval:
            return
        self._last_save = now
        payload = {
            "format": FORMAT,
            "version": VERSION,
            "saved_at": time.time(),
            "sections": self.sections,
        }
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            handle, temp = tempfile.mkstemp(prefix=".state.", dir=directory)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(payload, out, separators=(",", ":"))
                    out.flush()
                    os.fsync(out.fileno())
                os.chmod(temp, 0o600)
                os.replace(temp, self.path)
            except BaseException:
                os.unlink(temp)
                raise
        except OSError as error:
            self._log.warn_once(
                f"state-save:{self.path}", f"state: cannot write {self.path}: {error}"
            )
