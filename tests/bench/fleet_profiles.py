"""The three host profiles of the per-host budget (issue 28 section 1), as data.

A profile says what the synthetic host of tests/bench/budget_host.py holds: its block devices
(with the SMART corpus case each drive replays through tests/fake_smartctl), its fixed mounts,
its long-lived daemons, the short-lived tools that start and exit, and its Kubernetes pods
(how many, how long they live, which volumes they mount). The churn over simulated hours comes
from these rates; they are assumptions about a workload, written down here so the figures the
benchmark prints can be read against them (docs: /work/fleet-notes/part1.md, docs/fleet.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench_io import sd_name  # the kernel's sda..sdz, sdaa.. names

MB = 1 << 20


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


def sd_devno(index: int) -> tuple[int, int]:
    """SCSI disk majors: 8 for the first 16 disks, then 65-71 (16 disks each)."""
    block, slot = divmod(index, 16)
    return (8 if block == 0 else 64 + block), slot * 16


PSEUDO = (
    Mount("/proc", 0, 21, "proc", "proc"),
    Mount("/sys", 0, 20, "sysfs", "sysfs"),
    Mount("/sys/fs/cgroup", 0, 26, "cgroup2", "cgroup2"),
    Mount("/dev", 0, 5, "devtmpfs", "udev"),
    Mount("/dev/shm", 0, 24, "tmpfs", "tmpfs"),
    Mount("/run", 0, 25, "tmpfs", "tmpfs"),
)
SYSTEM = "/system.slice"
TAIL = tuple(f"{verb}_{model}.py"[:15] for verb in ("train", "eval", "prep", "export", "tune")
             for model in ("resnet", "bert", "llama", "vit", "gpt", "t5", "unet", "clip",
                           "sdxl", "moe", "rnnt", "dlrm"))  # fmt: skip


def training_node() -> Profile:
    nvme = tuple(Disk(f"nvme{i}n1", 259, i * 8, "SAMSUNG MZQLB1T9HAJR-00007", f"S439NA0M{i:06d}",
                      ("p1", "p2", "p3", "p4") if i == 0 else (),
                      "nvme-samsung-mzqlb1t9hajr", "nvme") for i in range(8))  # fmt: skip
    mounts = (
        *PSEUDO,
        Mount("/", 259, 2, "ext4", "/dev/nvme0n1p2"),
        Mount("/boot/efi", 259, 1, "vfat", "/dev/nvme0n1p1"),
        Mount("/var/lib/containerd", 259, 3, "xfs", "/dev/nvme0n1p3"),
        Mount("/var/lib/kubelet", 259, 4, "xfs", "/dev/nvme0n1p4"),
        *(Mount(f"/mnt/disks/nvme{i}n1", 259, i * 8, "xfs", f"/dev/nvme{i}n1")
          for i in range(1, 8)),
        Mount("/mnt/datasets", 0, 60, "nfs4", "filer:/datasets"),
        Mount("/home", 0, 61, "nfs4", "filer:/home"),
    )  # fmt: skip
    daemons = (
        Task("kubelet", 0, f"{SYSTEM}/kubelet.service", 20e3, 200e3, device="nvme0n1"),
        Task("containerd", 0, f"{SYSTEM}/containerd.service", 50e3, 600e3, device="nvme0n1"),
        Task("systemd-journal", 0, f"{SYSTEM}/systemd-journald.service", 0, 300e3,
             device="nvme0n1"),
        Task("fluent-bit", 0, f"{SYSTEM}/fluent-bit.service", 800e3, 100e3, device="nvme0n1"),
        Task("jbd2/nvme0n1p2-", 0, "/", 0, 150e3, device="nvme0n1"),
        Task("node_exporter", 65534, f"{SYSTEM}/node-exporter.service"),
        Task("dcgm-exporter", 0, f"{SYSTEM}/dcgm-exporter.service"),
        Task("sshd", 0, f"{SYSTEM}/ssh.service"),
    )
    tools = (
        Tool(Task("unpigz", 0, f"{SYSTEM}/containerd.service", 0, 120 * MB, device="nvme0n1"),
             per_hour=0.0, life=(2, 4)),  # started by each image pull (see budget_host)
        Tool(Task("logrotate", 0, f"{SYSTEM}/logrotate.service", 4 * MB, 4 * MB), 1, (1, 3)),
        Tool(Task("du", 0, f"{SYSTEM}/kubelet.service", 0.5 * MB, 0, wait=0.4), 6, (1, 4)),
        Tool(Task("tar", 1000, f"{SYSTEM}/backup.service", 80 * MB, 0), 0.5, (3, 12)),
        Tool(Task("rsync", 1000, f"{SYSTEM}/backup.service", 60 * MB, 0), 0.5, (3, 12)),
        Tool(Task("apt-get", 0, f"{SYSTEM}/apt-daily.service", 0, 20 * MB), 0.1, (2, 6)),
    )
    return Profile(
        "training", "training node: 8 NVMe, ~30 mounts with pod volumes, ~300 processes, "
        "~60 pod cgroups", nvme, mounts, daemons, idle=200, tools=tools,
        pods=PodMix(count=20, tail_names=TAIL),
        services=("ssh.service", "cron.service", "chrony.service", "dbus.service"),
    )  # fmt: skip


def storage_node() -> Profile:
    disks = [Disk("nvme0n1", 259, 0, "Micron_7450_MTFDKCC3T2TFS", "2147320AAAAA",
                  ("p1", "p2"), "nvme-micron-7450-mtfdkcc3t2tfs", "nvme")]  # fmt: skip
    mounts = [*PSEUDO, Mount("/", 259, 2, "ext4", "/dev/nvme0n1p2"),
              Mount("/boot/efi", 259, 1, "vfat", "/dev/nvme0n1p1")]  # fmt: skip
    for index in range(60):
        name, (major, minor) = sd_name(index), sd_devno(index)
        if index % 5 < 3:  # 36 SAS drives, 24 SATA drives behind the same HBA
            case, kind, model = "scsi-seagate-st1200mm0088", "scsi", "ST1200MM0088"
        else:
            case, kind, model = "ata-hdd-toshiba-mg09aca18te", "sat", "TOSHIBA MG09ACA18TE"
        disks.append(Disk(name, major, minor, model, f"ZA{index:06d}", ("1",), case, kind))
        mounts.append(Mount(f"/srv/node/d{index:02d}", major, minor + 1, "xfs", f"/dev/{name}1"))
    daemons = [
        Task("swift-object-se", 0, f"{SYSTEM}/swift-object.service", 30 * MB, 20 * MB,
             wait=0.3, copies=8),
        Task("swift-object-au", 0, f"{SYSTEM}/swift-object-auditor.service", 25 * MB, 0,
             wait=0.6, copies=2),
        Task("swift-object-re", 0, f"{SYSTEM}/swift-object-replicator.service", 5 * MB, 0,
             copies=2),
        Task("swift-proxy-ser", 0, f"{SYSTEM}/swift-proxy.service", 0, 0, copies=4),
        Task("systemd-journal", 0, f"{SYSTEM}/systemd-journald.service", 0, 200e3,
             device="nvme0n1"),
        Task("jbd2/nvme0n1p2-", 0, "/", 0, 80e3, device="nvme0n1"),
        Task("node_exporter", 65534, f"{SYSTEM}/node-exporter.service"),
        Task("sshd", 0, f"{SYSTEM}/ssh.service"),
    ]
    # The object servers, auditor and replicator spread their I/O over all 60 disks.
    daemons = [Task(t.name, t.uid, t.cgroup, t.read, t.write, t.wait, t.copies, t.device or "*")
               for t in daemons]  # fmt: skip
    tools = (
        Tool(Task("rsync", 0, f"{SYSTEM}/swift-object-replicator.service", 40 * MB, 40 * MB,
                  device="*"), 30, (1, 6)),
        Tool(Task("xfs_fsr", 0, f"{SYSTEM}/xfs-fsr.service", 50 * MB, 50 * MB, 0.5, device="sdc"),
             0.1, (30, 90)),
        Tool(Task("logrotate", 0, f"{SYSTEM}/logrotate.service", 4 * MB, 4 * MB), 1, (1, 3)),
        Tool(Task("smartctl", 0, f"{SYSTEM}/telegraf.service", 0.1 * MB, 0), 2, (1, 1)),
    )
    return Profile(
        "storage", "storage node: 60 HDDs (36 SAS, 24 SATA) behind a SAS HBA, one xfs per "
        "disk, object-store daemons", tuple(disks), tuple(mounts), tuple(daemons), idle=220,
        tools=tools, services=("ssh.service", "cron.service", "chrony.service"),
    )  # fmt: skip


def small_vm() -> Profile:
    disks = (Disk("vda", 253, 0, "", "", ("1", "14", "15")),)
    mounts = (
        *PSEUDO,
        Mount("/", 253, 1, "ext4", "/dev/vda1"),
        Mount("/boot/efi", 253, 15, "vfat", "/dev/vda15"),
    )
    daemons = (
        Task("postgres", 113, f"{SYSTEM}/postgresql@15-main.service", 300e3, 2 * MB, copies=6),
        Task("nginx", 33, f"{SYSTEM}/nginx.service", 50e3, 100e3, copies=2),
        Task("systemd-journal", 0, f"{SYSTEM}/systemd-journald.service", 0, 80e3),
        Task("jbd2/vda1-8", 0, "/", 0, 60e3),
        Task("sshd", 0, f"{SYSTEM}/ssh.service"),
    )
    tools = (
        Tool(Task("pg_dump", 113, f"{SYSTEM}/pg-backup.service", 30 * MB, 30 * MB), 0.25, (6, 30)),
        Tool(Task("logrotate", 0, f"{SYSTEM}/logrotate.service", 2 * MB, 2 * MB), 1, (1, 2)),
        Tool(Task("apt-get", 0, f"{SYSTEM}/apt-daily.service", 5 * MB, 10 * MB), 0.1, (2, 6)),
    )
    return Profile("vm", "small VM: one virtio disk (vda), two mounts", disks, mounts, daemons,
                   idle=70, tools=tools, services=("ssh.service", "cron.service"))  # fmt: skip


PROFILES = {"training": training_node, "storage": storage_node, "vm": small_vm}
