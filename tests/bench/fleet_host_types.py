"""What a fleet host is made of, in the two forms the fleet benchmarks take it: the per-host
budget's (a tree of files the real diskprobe reads: disks, mounts, processes and their rates,
tools, pods; budget_host.py) and the fleet simulation's (the tags and scenario of the points it
writes; fleet_sim.py). The three profiles themselves are in fleet_profiles.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet_sim_drives import Failure

MB = 1 << 20


# -- the per-host budget's hosts (bench_fleet_budget.py) --------------------------------------


@dataclass(frozen=True)
class Disk:
    """A whole disk, its partitions (name suffixes) and the SMART case it replays."""

    name: str
    major: int
    minor: int
    model: str
    serial: str
    partitions: tuple[str, ...] = ()
    smart_case: str = ""  # tests/golden/smart-json/<case>; "" (virtio): no SMART
    smart_type: str = ""  # smartctl -d TYPE in the scan line


@dataclass(frozen=True)
class Mount:
    """One mountinfo line: the mount point, the filesystem (maj:min, root) and its type."""

    path: str
    major: int
    minor: int
    fstype: str
    source: str
    root: str = "/"


@dataclass(frozen=True)
class Task:
    """A process kind: name (comm), uid, cgroup, and its I/O (bytes/s, wait s/s) when busy."""

    name: str
    uid: int
    cgroup: str
    read: float = 0.0
    write: float = 0.0
    wait: float = 0.0
    copies: int = 1
    device: str = ""  # its disk ("": the first; "*": spread over every data disk)


@dataclass(frozen=True)
class Tool:
    """A short-lived process that starts `per_hour` times and lives `life` intervals."""

    task: Task
    per_hour: float
    life: tuple[int, int]


@dataclass(frozen=True)
class PodMix:
    """Pods on the node: `count` at all times, each replaced when it ends (a new pod_uid)."""

    count: int = 0
    long_share: float = 0.6  # training jobs; the rest are short (notebooks, data prep, CI)
    long_hours: float = 8.0  # mean lifetimes (exponential)
    short_hours: float = 1.0
    pvc_share: float = 0.5  # a CSI block PVC (rbdN, ext4) mounted under the pod's volumes
    nfs_share: float = 0.25  # an NFS PV (one of `nfs_exports` shared exports)
    nfs_exports: int = 6
    sidecar_share: float = 0.5  # a second container (log shipper)
    workers: int = 4  # data-loader processes of the main container (same name)
    main_names: tuple[str, ...] = ("python3", "python", "torchrun")
    # Scripts run through their shebang have their own comm: a long tail of job names.
    tail_share: float = 0.3
    tail_names: tuple[str, ...] = ()
    uids: tuple[int, ...] = (1000, 0, 1000680000, 1000720000)


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    disks: tuple[Disk, ...]
    mounts: tuple[Mount, ...]  # fixed mounts, pseudo filesystems included (ignored ones too)
    daemons: tuple[Task, ...]
    idle: int  # processes that never do storage I/O (kernel threads, shells, agents)
    tools: tuple[Tool, ...] = ()
    pods: PodMix = field(default_factory=PodMix)
    services: tuple[str, ...] = ()  # system.slice units with a cgroup and no task listed


# -- the fleet simulation's hosts (fleet_sim.py) ----------------------------------------------


@dataclass
class SimDisk:
    """One block device: its io tags, and the drive behind it (None: no SMART, a VM disk)."""

    device: str
    smart_device: str
    model: str
    serial: str
    template: int = 0  # index into the profile's golden templates
    kind: str = "hdd"  # hdd | nvme | boot | virtio
    failure: Failure | None = None
    fail_slow: str = ""  # "" | "slow" | "cleared"
    judged: bool = False  # in a peer group: fail_slow and slowdown_ratio on its points
    since_s: int = 0  # reported from this age (s before the anchor) on; 0: always
    until_s: int = 0  # reported up to this age; 0: up to the anchor


@dataclass
class SimHost:
    index: int
    name: str
    profile: str
    disks: list[SimDisk] = field(default_factory=list)
    mounts: list[tuple[str, str, str]] = field(default_factory=list)  # path, device, fstype
    processes: list[tuple[str, str, str]] = field(default_factory=list)  # name, user, cgroup
    cgroups: list[tuple[str, str]] = field(default_factory=list)  # cgroup path, device
    gone_s: int = 0  # decommissioned this long before the anchor (0: alive)
    full_path: str = ""  # a volume at 97 % (the decommissioned host's)
    hung: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> HANGS entry
