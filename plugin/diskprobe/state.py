"""A small persistent state file shared by collectors (forecast windows, SMART baselines).

Written atomically through diskprobe.files (mode 0600), at most once per save interval.
A corrupt, foreign, linked or oversized file (> MAX_BYTES) is logged, moved aside and
replaced; a section of the wrong shape is dropped and rebuilt; nothing here is ever fatal.
One process owns a state file at a time (lockf on `<state_file>.lock`); a second one keeps
its state in memory, says so, and takes the file over (merging it) once it is free.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from typing import Any, Callable, Mapping

from diskprobe import files
from diskprobe.log import Logger
from diskprobe.state_sections import EntryCheck, any_entry, checked_section

FORMAT = "diskprobe-state"
VERSION = 1
# The forecast windows are ~6 MB at most (collectors.filesystems.POINT_BUDGET), ~250 B per
# drive: a 16 MiB file was measured at peak RSS 138 MB to load (the DaemonSet allows 256 Mi).
# Past that, save() leaves the largest section out of the file, see _encode().
MAX_BYTES = 16 * 1024 * 1024


def state_home(env: Mapping[str, str]) -> str:
    """$XDG_STATE_HOME, else ~/.local/state (per the XDG spec)."""
    return env.get("XDG_STATE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )


def candidate_paths(configured: str, env: Mapping[str, str]) -> list[str]:
    """The configured path, then $XDG_STATE_HOME or ~/.local/state (per the XDG spec)."""
    fallback = os.path.join(state_home(env), "diskprobe", "state.json")
    return [configured] if configured == fallback else [configured, fallback]


def _usable_dir(path: str, log: Logger) -> bool:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return False
    problem = files.private_dir_problem(directory)
    if problem is not None:  # another user could swap or plant files there
        log.warn(f"state: {directory} {problem}; not using it")
        return False
    return os.access(directory, os.W_OK | os.X_OK) and (
        not os.path.lexists(path) or os.access(path, os.R_OK | os.W_OK)
    )


class StateStore:
    path: str | None  # None: state lives in memory only
    sections: dict[str, Any]

    def __init__(
        self,
        configured_path: str,
        log: Logger,
        save_interval: float = 60.0,
        env: Mapping[str, str] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._init(log, save_interval, monotonic)
        candidates = candidate_paths(configured_path, os.environ if env is None else env)
        self.path = next((path for path in candidates if _usable_dir(path, log)), None)
        if self.path is None:
            log.warn(
                f"state: none of {', '.join(candidates)} is writable; keeping state in memory "
                "(forecasts restart with diskprobe)"
            )
            return
        if self.path != configured_path:
            log.info(f"state: {configured_path} is not usable; using {self.path}")
        if self._take_lock():
            self.sections = self._read()

    def _init(self, log: Logger, save_interval: float, monotonic: Callable[[], float]) -> None:
        self._log, self.save_interval, self._monotonic = log, save_interval, monotonic
        self._last_save: float | None = None
        self.sections = {}
        self._checks: dict[str, EntryCheck] = {}  # sections whose shape was checked
        self._lock_fd: int | None = None
        self._locked = False
        self.path = None

    @classmethod
    def in_memory(cls, log: Logger) -> StateStore:
        """A store that never touches disk (the window lives as long as its owner)."""
        store = cls.__new__(cls)
        store._init(log, 0.0, time.monotonic)
        return store

    def _take_lock(self) -> bool:
        """Own the state file (True), or say once who does and keep state in memory."""
        assert self.path is not None
        try:
            if self._lock_fd is None:
                self._lock_fd = files.open_lock(self.path + ".lock")
            # lockf, not flock: per process, so in-process users (DiskGuard) can share it.
            fcntl.lockf(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            self._log.warn_once(f"state-lock:{self.path}", self._lock_problem(error))
            return False
        with contextlib.suppress(OSError):
            os.ftruncate(self._lock_fd, 0)
            os.pwrite(self._lock_fd, f"{os.getpid()}\n".encode(), 0)
        self._locked = True
        return True

    def _lock_problem(self, error: OSError) -> str:
        if self._lock_fd is None:
            return f"state: lock file: {error}; keeping state in memory until it can be locked"
        holder = "?"
        with contextlib.suppress(OSError, ValueError):
            holder = str(int(os.pread(self._lock_fd, 32, 0).decode().strip()))
        return (
            f"state: {self.path} is in use by another diskprobe (pid {holder}); keeping this "
            "instance's state in memory until it is free (not saved meanwhile)"
        )

    def _read(self) -> dict[str, Any]:
        """The sections stored in the file; {} (and the file moved aside) when unusable."""
        assert self.path is not None
        try:
            data = json.loads(files.read_regular(self.path, MAX_BYTES))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError("not a diskprobe state file")
            sections = data.get("sections")
            if not isinstance(sections, dict):
                raise ValueError("no sections")
            return sections
        except FileNotFoundError:
            return {}
        # JSONDecodeError and UnicodeDecodeError are ValueErrors; deep nesting: RecursionError.
        except (OSError, ValueError, RecursionError) as error:
            aside = self.path + ".corrupt"
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            self._log.warn(f"state: {self.path} unusable ({reason}); moved to {aside}, afresh")
            with contextlib.suppress(OSError):
                os.replace(self.path, aside)  # renames a link itself, never its target
            return {}

    def section(self, name: str, check: EntryCheck = any_entry) -> dict[str, Any]:
        """A collector's part of the state; it mutates the dict, save() persists it.

        `check` says whether one entry (key -> value) has the shape the collector expects;
        on first use, malformed entries (or a section that is not an object) are dropped
        with one W!, so the collector never meets a shape it cannot handle."""
        if name not in self._checks:
            self._checks[name] = check
            self.sections[name] = checked_section(name, self.sections.get(name), check, self._log)
        return self.sections[name]  # type: ignore[no-any-return]

    def _merge_file(self) -> None:
        """The file's content, now that we own it: its entries win (longer history)."""
        for name, value in self._read().items():
            check = self._checks.get(name)
            if check is None:
                self.sections.setdefault(name, value)
            else:
                self.sections[name].update(checked_section(name, value, check, self._log))

    def save(self, force: bool = False) -> None:
        if self.path is None:
            return
        now = self._monotonic()
        if not force and self._last_save is not None and now - self._last_save < self.save_interval:
            return
        self._last_save = now
        if not self._locked:
            if not self._take_lock():
                if force:  # exiting: what was kept in memory is gone now, say so
                    self._log.warn(f"state: {self.path} still in use; this state is not saved")
                return
            self._log.info(f"state: {self.path} is free now; merged it and saving there")
            self._merge_file()
        try:
            data = self._encode()
            files.atomic_write(self.path, data, 0o600, fsync=True, prefix=".state.")
        except OSError as error:
            self._log.warn_once(
                f"state-save:{self.path}", f"state: cannot write {self.path}: {error}"
            )

    def _encode(self) -> bytes:
        """The file's bytes (compact JSON); never more than a start reads back (MAX_BYTES).

        A file over it would be moved aside whole at the next start, SMART baselines and
        all: the largest sections are left out of it instead (kept in memory; after a
        restart they start afresh, as on a first start), with one W! naming them. Each
        section is encoded once, so leaving one out costs no second encoding of the rest.
        """
        compact = (",", ":")
        parts = {
            name: json.dumps(value, separators=compact) for name, value in self.sections.items()
        }
        head = {"format": FORMAT, "version": VERSION, "saved_at": time.time()}
        start = json.dumps(head, separators=compact)[:-1] + ',"sections":{'
        names = list(parts)
        while True:
            body = ",".join(json.dumps(name) + ":" + parts[name] for name in names)
            data = (start + body + "}}").encode("utf-8")  # ASCII: json.dumps escapes the rest
            if len(data) <= MAX_BYTES or not names:
                return data
            largest = max(names, key=lambda name: len(parts[name]))
            names.remove(largest)
            self._log.warn_once(
                f"state-size:{largest}",
                f"state: {self.path} would be {len(data)} bytes, over the {MAX_BYTES} a start "
                f"reads back; section {largest!r} is left out of it (kept in memory, started "
                "afresh after a restart)",
            )

    def close(self) -> None:
        """Release the state file (the process's exit does the same)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd, self._locked = None, False
