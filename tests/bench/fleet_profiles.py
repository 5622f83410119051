"""The fleet's three host profiles, as data: a training node, a storage node and a small VM, the
one place each is described, in the two forms the fleet benchmarks take (fleet_host_types.py).

For the per-host budget (issue 28 section 1; PROFILES): what the synthetic host
of tests/bench/budget_host.py holds: its block devices (with the SMART corpus case each drive
replays through tests/fake_smartctl), its fixed mounts, its long-lived daemons, the short-lived
tools that start and exit, and its Kubernetes pods (how many, how long they live, which volumes
they mount). The churn over simulated hours comes from these rates; they are assumptions about
a workload, written down here so the figures the benchmark prints can be read against them
(docs: /work/fleet-notes/part1.md, docs/fleet.md).

For the fleet simulation (issue 28 part 2; sim_boot(), sim_storage(), sim_training(), sim_vm()):
each simulated host's devices, mounts, top processes and cgroups, as the tags of the points
fleet_sim.py writes; which of its drives fail, turn fail-slow, move or go away is the
scenario's (fleet_sim_hosts.py). Both forms share the drive counts and the drive models where
they meet; where they differ (the simulation's training and storage hosts boot from a SATA SSD,
its storage hosts mix five HDD models), each benchmark's figures in docs/fleet.md were measured
on its own form.
"""

from __future__ import annotations

from fleet_host_types import MB, Disk, Mount, PodMix, Profile, SimDisk, SimHost, Task, Tool

from kernel_diskstats import sd_devno, sd_name

NVMES_PER_TRAINING_NODE = 8
HDDS_PER_STORAGE_NODE = 60
SAMSUNG_NVME = "SAMSUNG MZQLB1T9HAJR-00007"
MICRON_NVME = "Micron_7450_MTFDKCC3T2TFS"
TOSHIBA_HDD = "TOSHIBA MG09ACA18TE"

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
    nvme = tuple(Disk(f"nvme{i}n1", 259, i * 8, SAMSUNG_NVME, f"S439NA0M{i:06d}",
                      ("p1", "p2", "p3", "p4") if i == 0 else (),
                      "nvme-samsung-mzqlb1t9hajr", "nvme")
                 for i in range(NVMES_PER_TRAINING_NODE))  # fmt: skip
    mounts = (
        *PSEUDO,
        Mount("/", 259, 2, "ext4", "/dev/nvme0n1p2"),
        Mount("/boot/efi", 259, 1, "vfat", "/dev/nvme0n1p1"),
        Mount("/var/lib/containerd", 259, 3, "xfs", "/dev/nvme0n1p3"),
        Mount("/var/lib/kubelet", 259, 4, "xfs", "/dev/nvme0n1p4"),
        *(Mount(f"/mnt/disks/nvme{i}n1", 259, i * 8, "xfs", f"/dev/nvme{i}n1")
          for i in range(1, NVMES_PER_TRAINING_NODE)),
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
    disks = [Disk("nvme0n1", 259, 0, MICRON_NVME, "2147320AAAAA",
                  ("p1", "p2"), "nvme-micron-7450-mtfdkcc3t2tfs", "nvme")]  # fmt: skip
    mounts = [*PSEUDO, Mount("/", 259, 2, "ext4", "/dev/nvme0n1p2"),
              Mount("/boot/efi", 259, 1, "vfat", "/dev/nvme0n1p1")]  # fmt: skip
    for index in range(HDDS_PER_STORAGE_NODE):
        name, (major, minor) = sd_name(index), sd_devno(index)
        if index % 5 < 3:  # 36 SAS drives, 24 SATA drives behind the same HBA
            case, kind, model = "scsi-seagate-st1200mm0088", "scsi", "ST1200MM0088"
        else:
            case, kind, model = "ata-hdd-toshiba-mg09aca18te", "sat", TOSHIBA_HDD
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


# -- the fleet simulation's hosts ---------------------------------------------------------------

SIM_HDD_MODELS = ("HGST HUH721008ALE604", "ST16000NM001G-2KK103", TOSHIBA_HDD,
                  "WDC WD181KRYZ-01AGBB0", "SEAGATE ST1200MM0088")  # fmt: skip
SIM_NVME_MODELS = (SAMSUNG_NVME, MICRON_NVME, "INTEL SSDPE2KX080T8")
SIM_BOOT_MODEL = "SAMSUNG MZ7LH1T9HMLT-00005"
TRAINING_PODS = 50  # [cgroup_io] max_cgroups is 50: the busiest 50 of ~60 pods
POD_VOLUMES = 20
DATASETS = ("/mnt/datasets", "nas:/export/datasets", "nfs4")


def sim_serial(host: int, device: str) -> str:
    return f"SIM{host:05d}{device.upper()}"


def sim_boot(host: SimHost) -> None:
    """The boot SSD of a training or storage host, and its mounts."""
    host.disks.append(SimDisk("sda", "sda", SIM_BOOT_MODEL, sim_serial(host.index, "sda"),
                              0, "boot"))  # fmt: skip
    host.mounts += [("/", "sda1", "ext4"), ("/boot", "sda2" if host.profile == "train" else "sda1",
                                             "ext4")]  # fmt: skip


def sim_storage(host: SimHost, ordinal: int) -> None:
    """60 HDDs of one model (by `ordinal`, the host's number among storage hosts)."""
    template = ordinal % len(SIM_HDD_MODELS)
    for slot in range(HDDS_PER_STORAGE_NODE):
        name = sd_name(slot + 1)
        host.disks.append(SimDisk(name, name, SIM_HDD_MODELS[template],
                                  sim_serial(host.index, name), template, "hdd", judged=True))
    host.mounts += [("/srv/data", "md0", "xfs"), ("/srv/meta", "sda2", "ext4")]
    host.processes += [("minio", "minio", "/system.slice/minio.service"),
                       ("xfsaild/md0", "root", "/"),
                       ("smartd", "root", "/system.slice/smartd.service")]
    host.cgroups += [(f"system.slice/{unit}.service", "md0")
                     for unit in ("minio", "node-exporter", "telegraf", "sshd", "chronyd",
                                  "systemd-journald", "rsyslog", "smartd")]


def sim_training(host: SimHost, ordinal: int) -> None:
    """8 NVMe drives of one model (by `ordinal`), kubelet pod volumes and pod cgroups."""
    template = ordinal % len(SIM_NVME_MODELS)
    for slot in range(NVMES_PER_TRAINING_NODE):
        name = f"nvme{slot}n1"
        host.disks.append(SimDisk(name, f"nvme{slot}", SIM_NVME_MODELS[template],
                                  sim_serial(host.index, name), template, "nvme", judged=True))
    host.mounts += [(f"/mnt/nvme{slot}", f"nvme{slot}n1", "xfs")
                    for slot in range(NVMES_PER_TRAINING_NODE)]
    host.mounts += [("/var/lib/kubelet", "sda3", "ext4"), ("/var/lib/containerd", "sda4", "ext4"),
                    ("/data", "md0", "xfs"), ("/scratch", "md1", "xfs"), DATASETS]
    for pod in range(POD_VOLUMES):
        uid = f"{host.index:08x}-{pod:04x}-4e8a-9c0f-1a2b3c4d5e6f"
        host.mounts.append((f"/var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~csi/"
                            f"pvc-{pod:04x}{host.index:08x}/mount", f"nvme{pod % 8}n1", "xfs"))
    host.processes += [("pt_data_worker_", "ml", "/kubepods.slice"),
                       ("python", "ml", "/kubepods.slice"),
                       ("containerd", "root", "/system.slice/containerd.service"),
                       ("kubelet", "root", "/system.slice/kubelet.service"),
                       ("feature_store", "ml", "/system.slice/feature-store.service")]
    for pod in range(TRAINING_PODS):
        uid = f"{host.index:08x}_{pod:04x}_4e8a_9c0f_1a2b3c4d5e6f"
        path = (f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}.slice/"
                f"cri-containerd-{host.index:06x}{pod:06x}.scope")
        host.cgroups.append((path, f"nvme{pod % 8}n1"))


def sim_vm(host: SimHost) -> None:
    """One virtio disk, no SMART."""
    host.disks.append(SimDisk("vda", "", "", "", kind="virtio"))
    host.mounts += [("/", "vda1", "ext4"), ("/boot/efi", "vda15", "vfat")]
    host.processes += [("postgres", "postgres", "/system.slice/postgresql.service"),
                       ("journald", "root", "/system.slice/systemd-journald.service")]
    host.cgroups += [(f"system.slice/{unit}.service", "vda")
                     for unit in ("postgresql", "systemd-journald", "telegraf", "sshd")]
