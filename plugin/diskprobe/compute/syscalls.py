"""What a blocked system call says about a task's wait: its number, by architecture, to a kind.

Kinds: "read", "write" (data to a file), "sync" (fsync and friends: a checkpoint's wait),
"meta" (open, stat, directory reads: metadata, mostly reads), "async" (waiting for
asynchronous I/O: io_uring, libaio), "ioctl" (an accelerator's driver, when the fd is one),
"wait" (futex, poll, sleep, child wait: waiting for another task or for time). Numbers from
arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h (arm64,
riscv64, loongarch64). A number not listed is "other"; an architecture not listed has none.
`fd_arg` says which argument holds the file descriptor the call works on, if one does.
"""

from __future__ import annotations

from typing import NamedTuple


class CallKind(NamedTuple):
    name: str
    kind: str
    fd_arg: int | None


def _table(rows: str) -> dict[int, CallKind]:
    """"0 read read 0" rows: number, name, kind, fd argument ("-" for none)."""
    table = {}
    for row in rows.strip().splitlines():
        number, name, kind, fd = row.split()
        table[int(number)] = CallKind(name, kind, None if fd == "-" else int(fd))
    return table


X86_64 = _table("""
0 read read 0
1 write write 0
2 open meta -
3 close sync 0
4 stat meta -
5 fstat meta 0
6 lstat meta -
7 poll wait -
16 ioctl ioctl 0
17 pread64 read 0
18 pwrite64 write 0
19 readv read 0
20 writev write 0
23 select wait -
26 msync sync -
35 nanosleep wait -
40 sendfile read 1
61 wait4 wait -
74 fsync sync 0
75 fdatasync sync 0
78 getdents meta 0
82 rename meta -
83 mkdir meta -
87 unlink meta -
162 sync sync -
202 futex wait -
208 io_getevents async -
217 getdents64 meta 0
230 clock_nanosleep wait -
232 epoll_wait wait -
247 waitid wait -
257 openat meta -
258 mkdirat meta -
262 newfstatat meta -
263 unlinkat meta -
264 renameat meta -
270 pselect6 wait -
271 ppoll wait -
275 splice read 0
277 sync_file_range sync 0
281 epoll_pwait wait -
295 preadv read 0
296 pwritev write 0
306 syncfs sync 0
316 renameat2 meta -
326 copy_file_range read 0
327 preadv2 read 0
328 pwritev2 write 0
332 statx meta -
333 io_pgetevents async -
426 io_uring_enter async -
441 epoll_pwait2 wait -
449 futex_waitv wait -
""")

GENERIC = _table("""
4 io_getevents async -
22 epoll_pwait wait -
29 ioctl ioctl 0
34 mkdirat meta -
35 unlinkat meta -
38 renameat meta -
56 openat meta -
57 close sync 0
61 getdents64 meta 0
63 read read 0
64 write write 0
65 readv read 0
66 writev write 0
67 pread64 read 0
68 pwrite64 write 0
69 preadv read 0
70 pwritev write 0
71 sendfile read 1
72 pselect6 wait -
73 ppoll wait -
76 splice read 0
79 newfstatat meta -
80 fstat meta 0
81 sync sync -
82 fsync sync 0
83 fdatasync sync 0
84 sync_file_range sync 0
95 waitid wait -
98 futex wait -
101 nanosleep wait -
115 clock_nanosleep wait -
222 mmap meta -
227 msync sync -
260 wait4 wait -
267 syncfs sync 0
276 renameat2 meta -
285 copy_file_range read 0
286 preadv2 read 0
287 pwritev2 write 0
291 statx meta -
292 io_pgetevents async -
426 io_uring_enter async -
441 epoll_pwait2 wait -
449 futex_waitv wait -
""")

TABLES = {"x86_64": X86_64, "aarch64": GENERIC, "riscv64": GENERIC, "loongarch64": GENERIC}
OTHER = CallKind("other", "other", None)


def call_kind(machine: str, number: int) -> CallKind:
    """The kind of syscall `number` on `machine` (os.uname().machine)."""
    return TABLES.get(machine, {}).get(number, OTHER)
