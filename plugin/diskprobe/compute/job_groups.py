"""Which processes make one training job, from the process tree: pure.

Candidates are the processes that name themselves a job (an accelerator's node open, a
`match`, a `cgroups` glob). A candidate that descends from another belongs to that one's job
(loader workers forked with the same command line, which also inherit /dev/nvidia*), unless
it carries a rank of its own (RANK, OMPI_COMM_WORLD_RANK, LOCAL_RANK differing from its
ancestor's): each rank of torchrun, DeepSpeed or mpirun is a job. A job's root without a rank
that launched ranked jobs is their launcher: it gets no point. A job's main process is its
root past wrappers (sh -c, tini, sudo...) with a single child: the one `diskprobe diagnose
--pid` would be given. Its members are its descendants, but for other jobs' subtrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable, Mapping

WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "tini", "dumb-init", "pause", "catatonit",
                      "sudo", "su", "setpriv", "nohup", "timeout", "env", "stdbuf", "nice",
                      "ionice", "taskset", "numactl", "runuser", "chrt"})  # fmt: skip
MAX_DEPTH = 256  # process trees are shallow; a loop in a corrupt table must end


@dataclass(frozen=True)
class JobRoot:
    root: int  # the topmost process of the job
    main: int  # past wrappers
    wrappers: tuple[int, ...]  # passed through: members, neither main nor workers


def children_of(parents: Mapping[int, int]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    return children


def _ancestors(pid: int, parents: Mapping[int, int]) -> list[int]:
    found: list[int] = []
    current = parents.get(pid)
    while current is not None and current not in found and len(found) < MAX_DEPTH:
        found.append(current)
        current = parents.get(current)
    return found


def job_roots(candidates: Mapping[int, tuple[str, ...]], parents: Mapping[int, int],
              comm: Callable[[int], str], named_launchers: AbstractSet[int] = frozenset()
              ) -> list[JobRoot]:  # fmt: skip
    """The jobs among `candidates` (pid -> its own rank variables, () for none); the roots in
    `named_launchers` (torchrun, mpirun... by name) are launchers whatever they started."""
    roots: list[int] = []
    for pid in sorted(candidates):
        above = next((p for p in _ancestors(pid, parents) if p in candidates), None)
        if above is None or (candidates[pid] and candidates[pid] != candidates[above]):
            roots.append(pid)
    launchers = set(named_launchers) | {above for pid in roots if candidates[pid]
                 for above in _ancestors(pid, parents) if above in roots and
                 not candidates[above]}  # fmt: skip
    children = children_of(parents)
    return [_through_wrappers(pid, children, comm) for pid in roots if pid not in launchers]


def _through_wrappers(root: int, children: Mapping[int, list[int]],
                      comm: Callable[[int], str]) -> JobRoot:  # fmt: skip
    pid, wrappers = root, list[int]()
    while comm(pid) in WRAPPERS and len(children.get(pid, ())) == 1 and len(wrappers) < MAX_DEPTH:
        wrappers.append(pid)
        pid = children[pid][0]
    return JobRoot(root, pid, tuple(wrappers))


def job_members(root: int, parents: Mapping[int, int], other_roots: set[int]) -> set[int]:
    """`root` and its descendants, leaving out the subtrees of other jobs' roots."""
    children = children_of(parents)
    found, stack = set(), [root]
    while stack:
        pid = stack.pop()
        if pid in found or (pid != root and pid in other_roots):
            continue
        found.add(pid)
        stack.extend(children.get(pid, ()))
    return found
