"""The one way diskprobe writes and reads the files it owns (textfile, state, spool, locks).

Written so a local user who can write to the directory cannot turn diskprobe (often root)
against another file: temp files are created exclusively under a random name without
following links, the mode is set on the descriptor (never by path), and the rename only
happens while the name still holds the file we wrote. Reads never follow a symlink.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted under our name must not hang the process.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_LOCK = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CHUNK = 1 << 20


class UnsafeFile(OSError):
    """A path that is not what diskprobe would have made: a link, a FIFO, someone else's."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(errno.EPERM, problem, path)

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


class TooBig(OSError):
    """A file larger than the reader is willing to hold in memory."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(errno.EFBIG, f"is larger than {limit} bytes", path)

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


def _trusted_owner(uid: int) -> bool:
    return uid in (0, os.geteuid())


def private_dir_problem(directory: str) -> str | None:
    """Why `directory` must not hold diskprobe's private files (state, spool), or None.

    A symlink is followed only if root or we made it (an admin's relocation, not a planted
    one); the directory must belong to root or us and not be world-writable without the
    sticky bit. Group-writable is the admin's deliberate grant (e.g. a volume's fsGroup)."""
    try:
        link = os.lstat(directory)
        if stat.S_ISLNK(link.st_mode) and not _trusted_owner(link.st_uid):
            return f"is a symlink owned by uid {link.st_uid}"
        info = os.stat(directory)
    except OSError as error:
        return f"cannot be checked ({error.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if not _trusted_owner(info.st_uid):
        return f"is owned by uid {info.st_uid}"
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        return "is writable by every user (no sticky bit)"
    return None


def root_only_problem(path: str) -> str | None:
    """Why `path` is not a file only root can change (what a sudo rule may name), or None:
    it and every directory above it (after symlinks) must belong to root and be writable by
    no one else (a sticky directory's other users cannot replace root's entries)."""
    real = os.path.realpath(path)
    current = real
    while True:
        try:
            info = os.lstat(current)
        except OSError as error:
            return f"{current} cannot be checked ({error.strerror})"
        if info.st_uid != 0:
            return f"{current} belongs to uid {info.st_uid}, not root"
        writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if writable and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
            return f"{current} is writable by others than root (mode {info.st_mode & 0o7777:o})"
        if current == "/":
            return None
        current = os.path.dirname(current)


def tree_problem(directory: str) -> str | None:
    """Why `directory` and the directories above it are no place for private files, or None:
    each of them (along the path as given and as resolved) must belong to root or us and be
    writable by no one else unless sticky, as ssh checks; a symlink must be root's or ours."""
    path = os.path.abspath(directory)
    for current in dict.fromkeys((path, os.path.realpath(path))):
        while True:
            try:
                info = os.lstat(current)
            except OSError as error:
                return f"{current} cannot be checked ({error.strerror})"
            if not _trusted_owner(info.st_uid):
                return f"{current} is owned by uid {info.st_uid}"
            others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            if others and not stat.S_ISLNK(info.st_mode) and not info.st_mode & stat.S_ISVTX:
                return f"{current} is writable by others (mode {info.st_mode & 0o7777:o})"
            if current == "/":
                break
            current = os.path.dirname(current)
    return None


def make_private_tree(directory: str) -> str | None:
    """Make `directory` and its missing parents (each mode 0700) where tree_problem finds
    nothing: the nearest existing directory is checked before anything is made in it, the
    whole path after. Why it is refused, or None."""
    missing, existing = [], os.path.abspath(directory)
    while not os.path.lexists(existing):
        missing.append(existing)
        existing = os.path.dirname(existing)
    problem = tree_problem(existing)
    for path in reversed(missing if problem is None else []):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:  # made meanwhile: the check below says whose it is
            pass
        except OSError as error:
            return f"{path} cannot be made ({error.strerror})"
    return problem or tree_problem(directory)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _is_same(path: str, mine: os.stat_result) -> bool:
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


def _create_temp(directory: str, prefix: str, suffix: str) -> tuple[str, int]:
    for _attempt in range(5):  # a clash means a planted name: another random one
        name = os.path.join(directory, f"{prefix}{secrets.token_hex(8)}{suffix}")
        try:
            return name, os.open(name, _CREATE, 0o600)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", directory)


def atomic_write(
    path: str, data: bytes, mode: int, fsync: bool = False, prefix: str = ".diskprobe."
) -> None:
    """Replace `path` by a file holding `data` with `mode`; readers see old or new, whole."""
    directory = os.path.dirname(os.path.abspath(path))
    temp, fd = _create_temp(directory, prefix, ".tmp")
    mine: os.stat_result | None = None
    try:
        mine = os.fstat(fd)
        _write_all(fd, data)
        if fsync:
            os.fsync(fd)
        os.fchmod(fd, mode)  # on the descriptor: a swapped name cannot redirect it
        if not _is_same(temp, mine):
            raise UnsafeFile(temp, "was replaced by someone else before the rename")
        os.replace(temp, path)
    except BaseException:
        # Remove the temp only if the name still holds our file: never someone's link.
        if mine is not None and _is_same(temp, mine):
            os.unlink(temp)
        raise
    finally:
        os.close(fd)


def read_regular(path: str, max_bytes: int | None = None, private: bool = True) -> bytes:
    """The content of a regular file (never blocking on a FIFO); TooBig past max_bytes.

    private (diskprobe's own files): a link is not followed and the file must be root's or
    ours. Not private (the config an admin gives, often a link from config management):
    links are followed and any owner is accepted."""
    try:
        fd = os.open(path, _READ if private else _READ & ~os.O_NOFOLLOW)
    except OSError as error:
        if error.errno == errno.ELOOP and private:
            raise UnsafeFile(path, "is a symlink; not followed") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(path, "is not a regular file")
        if private and not _trusted_owner(info.st_uid):
            raise UnsafeFile(path, f"is owned by uid {info.st_uid}")
        if max_bytes is not None and info.st_size > max_bytes:
            raise TooBig(path, max_bytes)
        return _read_capped(fd, path, max_bytes)
    finally:
        os.close(fd)


def _read_capped(fd: int, path: str, max_bytes: int | None) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if max_bytes is not None and total > max_bytes:
            raise TooBig(path, max_bytes)  # it grew while we read
        chunks.append(chunk)


def open_lock(path: str) -> int:
    """A descriptor on the lock file `path` (created 0600 if missing) for flock/lockf.

    Never replaced once it exists (two inodes would make two owners); refused if it is a
    link, not a regular file, someone else's, or hard-linked elsewhere (writing our pid into
    it must not write into another file)."""
    try:
        fd = os.open(path, _LOCK, 0o600)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeFile(path, "is a symlink; not followed") from None
        raise
    info = os.fstat(fd)
    problem = (
        "is not a regular file" if not stat.S_ISREG(info.st_mode)
        else f"is owned by uid {info.st_uid}" if not _trusted_owner(info.st_uid)
        else "has other hard links" if info.st_nlink != 1
        else None
    )  # fmt: skip
    if problem is not None:
        os.close(fd)
        raise UnsafeFile(path, problem)
    return fd
