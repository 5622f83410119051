"""The simulated fleet (tests/bench/fleet_sim.py): which profile each host has, and which of its
drives fail, turn fail-slow, move or go away, which of its mounts hang.

Three profiles (issue 28; their devices, mounts, top processes and cgroups: fleet_profiles.py):
a training node (8 NVMe + a boot SSD, ~30 mounts with kubelet pod volumes, top processes and
~50 pod cgroups), a storage node (60 SAS/SATA HDDs behind an HBA + a boot SSD) and a small VM
(one virtio disk, no SMART). Hosts follow PATTERN by index, so any N (5 included) has every
profile, and the scenario below is fixed by the index alone:

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

from fleet_host_types import SimDisk, SimHost
from fleet_profiles import DATASETS, sim_boot, sim_storage, sim_training, sim_vm
from fleet_sim_drives import HDD_FAILURES, NVME_FAILURES, load_golden

from diskprobe.compute.cgroup_tags import cgroup_tags

PATTERN = ("train", "store", "vm", "vm", "store", "train", "vm", "vm", "train", "vm",
           "train", "vm", "vm", "train", "vm", "vm", "train", "vm", "vm", "vm")
DECOMMISSIONED = 4  # host index (a storage host)
DECOMMISSIONED_AGO_S = 3 * 86400
MOVED_FROM, MOVED_TO = 1, 0  # host indexes
MOVED_AGO_S = 2 * 86400
MOVED_DEVICE, MOVED_NEW_DEVICE = "sdk", "sdb"
# training ordinal % 8 -> (age the hang began, age it ended; 0: still hung), in seconds
HANGS = {0: (600, 0), 1: (180, 0), 2: (600, 240)}


def _storage(host: SimHost, ordinal: int) -> None:
    sim_storage(host, ordinal)
    live = host.index != DECOMMISSIONED
    if ordinal % 4 == 0 or not live:
        host.disks[9].failure = HDD_FAILURES[(ordinal // 4) % len(HDD_FAILURES)]
    if ordinal % 4 == 2 or ordinal == 0:
        host.disks[19].fail_slow = "slow"
    if ordinal == 0:
        host.disks[20].fail_slow = "cleared"


def _training(host: SimHost, ordinal: int) -> None:
    sim_training(host, ordinal)
    if ordinal % 6 == 0:
        host.disks[3].failure = NVME_FAILURES[(ordinal // 6) % len(NVME_FAILURES)]
    if ordinal % 6 == 3:
        host.disks[5].fail_slow = "slow"
    if ordinal % 8 in HANGS:
        host.hung[DATASETS[0]] = HANGS[ordinal % 8]


def build_host(index: int, ordinal: int) -> SimHost:
    """Host `index`; `ordinal`: its number among hosts of its profile."""
    profile = PATTERN[index % len(PATTERN)]
    host = SimHost(index, f"{profile}-{index:05d}", profile)
    if profile != "vm":
        sim_boot(host)
    if profile == "store":
        _storage(host, ordinal)
    elif profile == "train":
        _training(host, ordinal)
    else:
        sim_vm(host)
    if index == DECOMMISSIONED:
        host.gone_s, host.full_path = DECOMMISSIONED_AGO_S, "/srv/data"
    return host


def fleet(count: int) -> list[SimHost]:
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
        moved = SimDisk(MOVED_NEW_DEVICE, MOVED_NEW_DEVICE, drive.model, drive.serial,
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


def expected_alerts(hosts: list[SimHost]) -> dict[str, list[list[str]]]:
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


def moved_serial(hosts: list[SimHost]) -> str:
    """The serial of the drive that moved ("" when the fleet is too small to move one)."""
    found = [d.serial for h in hosts for d in h.disks if d.since_s]
    return found[0] if found else ""
