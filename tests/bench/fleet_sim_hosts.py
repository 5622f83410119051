"""What each simulated host has (tests/bench/fleet_sim.py): its profile, block devices, mounts,
top processes and cgroups, and which of its drives fail, turn fail-slow, move or go away.

Three profiles (issue 28): a training node (8 NVMe + a boot SSD, ~30 mounts with kubelet pod
volumes, top processes and ~50 pod cgroups), a storage node (60 SAS/SATA HDDs behind an HBA
+ a boot SSD) and a small VM (one virtio disk, no SMART). Hosts follow PATTERN by index, so
any N (5 included) has every profile, and the scenario below is fixed by the index alone:

- the first storage host (store-00001) has a failing HDD, a fail-slow HDD and one whose
  fail-slow state cleared half-way through the fast window; its drive MOVED_DEVICE (failing,
  growing reallocated sectors) moved to the first training host (train-00000) two days ago;
- every 4th live storage host has a failing HDD (kinds in turn), every 4th from the 3rd a
  fail-slow HDD; every 6th training host a failing NVMe, every 6th from the 4th a fail-slow one;
- store-00004 was decommissioned three days ago, with a failing drive and a 97 % full volume;
- every training host mounts its datasets over NFS (DATASETS); on every 8th it has not answered
  for the last 10 minutes (an alert), on every 8th from the 2nd for the last 3 minutes only,
  on every 8th from the 3rd it hung for 6 minutes and answers again for the last 4 (no alert).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench_io import sd_name  # the kernel's sda..sdz, sdaa.. names
from fleet_sim_drives import HDD_FAILURES, NVME_FAILURES, Failure, load_golden

from diskprobe.compute.cgroup_tags import cgroup_tags

PATTERN = ("train", "store", "vm", "vm", "store", "train", "vm", "vm", "train", "vm",
           "train", "vm", "vm", "train", "vm", "vm", "train", "vm", "vm", "vm")
DECOMMISSIONED = 4  # host index (a storage host)
DECOMMISSIONED_AGO_S = 3 * 86400
MOVED_FROM, MOVED_TO = 1, 0  # host indexes
MOVED_AGO_S = 2 * 86400
MOVED_DEVICE, MOVED_NEW_DEVICE = "sdk", "sdb"
HDDS_PER_STORAGE_NODE = 60
NVMES_PER_TRAINING_NODE = 8
TRAINING_PODS = 50  # [cgroup_io] max_cgroups is 50: the busiest 50 of ~60 pods
POD_VOLUMES = 20
DATASETS = ("/mnt/datasets", "nas:/export/datasets", "nfs4")
# training ordinal % 8 -> (age the hang began, age it ended; 0: still hung), in seconds
HANGS = {0: (600, 0), 1: (180, 0), 2: (600, 240)}


@dataclass
class Disk:
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
class Host:
    index: int
    name: str
    profile: str
    disks: list[Disk] = field(default_factory=list)
    mounts: list[tuple[str, str, str]] = field(default_factory=list)  # path, device, fstype
    processes: list[tuple[str, str, str]] = field(default_factory=list)  # name, user, cgroup
    cgroups: list[tuple[str, str]] = field(default_factory=list)  # cgroup path, device
    gone_s: int = 0  # decommissioned this long before the anchor (0: alive)
    full_path: str = ""  # a volume at 97 % (the decommissioned host's)
    hung: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> HANGS entry


def serial(host: int, device: str) -> str:
    return f"SIM{host:05d}{device.upper()}"


def _storage(host: Host, ordinal: int) -> None:
    models = ("HGST HUH721008ALE604", "ST16000NM001G-2KK103", "TOSHIBA MG09ACA18TE",
              "WDC WD181KRYZ-01AGBB0", "SEAGATE ST1200MM0088")
    template = ordinal % len(models)
    for slot in range(HDDS_PER_STORAGE_NODE):
        name = sd_name(slot + 1)
        host.disks.append(Disk(name, name, models[template], serial(host.index, name),
                               template, "hdd", judged=True))
    live = host.index != DECOMMISSIONED
    if ordinal % 4 == 0 or not live:
        host.disks[9].failure = HDD_FAILURES[(ordinal // 4) % len(HDD_FAILURES)]
    if ordinal % 4 == 2 or ordinal == 0:
        host.disks[19].fail_slow = "slow"
    if ordinal == 0:
        host.disks[20].fail_slow = "cleared"
    host.mounts += [("/srv/data", "md0", "xfs"), ("/srv/meta", "sda2", "ext4")]
    host.processes += [("minio", "minio", "/system.slice/minio.service"),
                       ("xfsaild/md0", "root", "/"),
                       ("smartd", "root", "/system.slice/smartd.service")]
    host.cgroups += [(f"system.slice/{unit}.service", "md0")
                     for unit in ("minio", "node-exporter", "telegraf", "sshd", "chronyd",
                                  "systemd-journald", "rsyslog", "smartd")]


def _training(host: Host, ordinal: int) -> None:
    models = ("SAMSUNG MZQLB1T9HAJR-00007", "Micron_7450_MTFDKCC3T2TFS", "INTEL SSDPE2KX080T8")
    template = ordinal % len(models)
    for slot in range(NVMES_PER_TRAINING_NODE):
        name = f"nvme{slot}n1"
        host.disks.append(Disk(name, f"nvme{slot}", models[template],
                               serial(host.index, name), template, "nvme", judged=True))
    if ordinal % 6 == 0:
        host.disks[3].failure = NVME_FAILURES[(ordinal // 6) % len(NVME_FAILURES)]
    if ordinal % 6 == 3:
        host.disks[5].fail_slow = "slow"
    host.mounts += [(f"/mnt/nvme{slot}", f"nvme{slot}n1", "xfs") for slot in range(8)]
    host.mounts += [("/var/lib/kubelet", "sda3", "ext4"), ("/var/lib/containerd", "sda4", "ext4"),
                    ("/data", "md0", "xfs"), ("/scratch", "md1", "xfs"), DATASETS]
    if ordinal % 8 in HANGS:
        host.hung[DATASETS[0]] = HANGS[ordinal % 8]
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


def _vm(host: Host) -> None:
    host.disks.append(Disk("vda", "", "", "", kind="virtio"))
    host.mounts += [("/", "vda1", "ext4"), ("/boot/efi", "vda15", "vfat")]
    host.processes += [("postgres", "postgres", "/system.slice/postgresql.service"),
                       ("journald", "root", "/system.slice/systemd-journald.service")]
    host.cgroups += [(f"system.slice/{unit}.service", "vda")
                     for unit in ("postgresql", "systemd-journald", "telegraf", "sshd")]


def build_host(index: int, ordinal: int) -> Host:
    """Host `index`; `ordinal`: its number among hosts of its profile."""
    profile = PATTERN[index % len(PATTERN)]
    host = Host(index, f"{profile}-{index:05d}", profile)
    if profile != "vm":
        boot = "sda"
        host.disks.append(Disk(boot, boot, "SAMSUNG MZ7LH1T9HMLT-00005", serial(index, boot),
                               0, "boot"))
        host.mounts += [("/", "sda1", "ext4"), ("/boot", "sda2" if profile == "train" else "sda1",
                                                 "ext4")]
    if profile == "store":
        _storage(host, ordinal)
    elif profile == "train":
        _training(host, ordinal)
    else:
        _vm(host)
    if index == DECOMMISSIONED:
        host.gone_s, host.full_path = DECOMMISSIONED_AGO_S, "/srv/data"
    return host


def fleet(count: int) -> list[Host]:
    """The fleet of `count` hosts, with the moved drive on both of its hosts."""
    ordinals: dict[str, int] = {}
    hosts = []
    for index in range(count):
        profile = PATTERN[index % len(PATTERN)]
        hosts.append(build_host(index, ordinals.get(profile, 0)))
        ordinals[profile] = ordinals.get(profile, 0) + 1
    if count > max(MOVED_FROM, MOVED_TO):
        old = hosts[MOVED_FROM]
        (drive,) = [d for d in old.disks if d.device == MOVED_DEVICE]
        drive.failure, drive.until_s = HDD_FAILURES[1], MOVED_AGO_S  # growing reallocations
        moved = Disk(MOVED_NEW_DEVICE, MOVED_NEW_DEVICE, drive.model, drive.serial,
                     drive.template, "hdd", drive.failure, since_s=MOVED_AGO_S)
        hosts[MOVED_TO].disks.append(moved)
    models = {f.case: load_golden(f.case).smart.tags["model"] for f in HDD_FAILURES + NVME_FAILURES}
    for disk in (d for host in hosts for d in host.disks):
        if disk.failure is not None:  # the failing golden drive's model: in no peer group
            disk.model, disk.judged = models[disk.failure.case], False
    return hosts


def cgroup_tag_set(path: str, device: str) -> dict[str, str]:
    """diskprobe_cgroup_io tags as diskprobe's own cgroup path parser gives them."""
    return {**cgroup_tags(path), "device": device}


def expected_alerts(hosts: list[Host]) -> dict[str, list[list[str]]]:
    """Ground truth: (host, serial) of every failing drive where it is now, (host, device,
    model, serial) of every device fail-slow now and (host, path) of every mount hung for
    5 minutes or more now."""
    failing, slow, stuck = [], [], []
    for host in hosts:
        if host.gone_s:
            continue
        stuck += [[host.name, path] for path, (began, ended) in host.hung.items()
                  if not ended and began >= 300]
        for disk in host.disks:
            if disk.failure is not None and not disk.until_s:
                failing.append([host.name, disk.serial])
            if disk.fail_slow == "slow":
                slow.append([host.name, disk.device, disk.model, disk.serial])
    return {"drives": sorted(failing), "fail_slow": sorted(slow), "stuck": sorted(stuck)}


def moved_serial(hosts: list[Host]) -> str:
    """The serial of the drive that moved ("" when the fleet is too small to move one)."""
    found = [d.serial for h in hosts for d in h.disks if d.since_s]
    return found[0] if found else ""
