"""The points one simulated host writes (tests/bench/fleet_sim.py), as diskprobe.metric.Metric:
SMART history, hourly filesystem history and the fast window (io, fs, pressure, process_io,
cgroup_io and the agent's own points at the default interval).

Values wander with a seeded random generator around plausible levels; every field name is the
schema's (fleet_sim checks each measurement's fields against plugin/diskprobe/schema before
writing). Nothing here alerts except what fleet_sim_hosts marks: %util stays below 90, volumes
below 95 % (but the decommissioned host's), no volume fills within a day.
"""

from __future__ import annotations

import random
from typing import Iterator

from fleet_host_types import SimDisk, SimHost
from fleet_sim_drives import Golden, history, read_times
from fleet_sim_hosts import cgroup_tag_set
from fleet_sim_jobs import job_points

from diskprobe.metric import FieldValue, Metric

SEC = 10**9
COLLECTORS = ("io", "filesystems", "pressure", "process_io", "cgroup_io")
VERSION = "0.9.0"


def _alive(host: SimHost, disk: SimDisk | None, age_s: int) -> bool:
    if host.gone_s and age_s < host.gone_s:
        return False
    if disk is None:
        return True
    return ((not disk.since_s or age_s < disk.since_s)
            and (not disk.until_s or age_s >= disk.until_s))


def smart_points(host: SimHost, disk: SimDisk, golden: Golden, anchor_s: int,
                 days: int) -> list[Metric]:  # fmt: skip
    """The drive's reads on this host; diskprobe_smart_attr on the last read only (scaled:
    no dashboard or alert reads attributes, and they would be 20 lines a read)."""
    salt = sum(map(ord, disk.serial))
    reads = history(golden, read_times(anchor_s, days), disk.failure, salt)
    tags = {**golden.smart.tags, "device": disk.smart_device, "serial": disk.serial,
            "host": host.name, "model": disk.model}
    out = [Metric("diskprobe_smart", tags, fields, when * SEC) for when, fields in reads
           if _alive(host, disk, anchor_s - when)]
    if out:
        last = out[-1].time_ns
        for attr in golden.attrs:
            attr_tags = {**attr.tags, "device": disk.smart_device, "serial": disk.serial,
                         "host": host.name}
            out.append(Metric("diskprobe_smart_attr", attr_tags, dict(attr.fields), last))
    return out


def _io_fields(disk: SimDisk, rng: random.Random, age_s: int,
               window_s: int) -> dict[str, FieldValue]:  # fmt: skip
    busy = {"hdd": 35.0, "nvme": 45.0, "boot": 5.0, "virtio": 12.0}[disk.kind]
    util = min(85.0, max(0.0, rng.gauss(busy, busy / 4)))
    reads, writes = util * 3.0, util * 1.5
    service = {"hdd": 8.0, "nvme": 0.12, "boot": 0.3, "virtio": 1.5}[disk.kind]
    slow = disk.fail_slow == "slow" or (disk.fail_slow == "cleared" and age_s >= window_s // 2)
    read_await = service * (4.5 if slow else 1.0) * rng.uniform(0.8, 1.2)
    write_await = service * 1.3 * rng.uniform(0.8, 1.2)
    fields: dict[str, FieldValue] = {
        "reads_per_sec": reads, "read_merged_per_sec": reads * 0.1,
        "read_bytes_per_sec": reads * 131072.0, "read_await_ms": read_await,
        "read_request_bytes": 131072.0, "writes_per_sec": writes,
        "write_merged_per_sec": writes * 0.2, "write_bytes_per_sec": writes * 65536.0,
        "write_await_ms": write_await, "write_request_bytes": 65536.0,
        "flushes_per_sec": 0.5, "flush_await_ms": service,
        "await_ms": (reads * read_await + writes * write_await) / max(reads + writes, 1e-9),
        "queue_size": util / 50.0, "util_percent": util, "in_flight": rng.randint(0, 4),
        "interval_sec": 10.0,
    }
    if disk.kind in ("nvme", "boot"):
        fields.update(discards_per_sec=0.2, discard_merged_per_sec=0.0,
                      discard_bytes_per_sec=0.2 * 1048576.0, discard_await_ms=0.5,
                      discard_request_bytes=1048576.0)
    if disk.judged:
        fields["slowdown_ratio"] = read_await / service
        fields["fail_slow"] = slow
    return fields


def _fs_fields(path: str, full: bool, rng: random.Random, age_s: int) -> dict[str, FieldValue]:
    total = 2_000_000_000_000 if path.startswith(("/srv", "/data", "/mnt")) else 200_000_000_000
    used_percent = 97.0 if full else 20.0 + (sum(map(ord, path)) % 60) + rng.random()
    used = int(total * used_percent / 100)
    fields: dict[str, FieldValue] = {
        "total_bytes": total, "used_bytes": used, "free_bytes": total - used,
        "avail_bytes": total - used, "used_percent": used_percent,
        "inodes_total": 1_000_000, "inodes_used": 250_000 + age_s % 1000,
        "inodes_free": 750_000 - age_s % 1000, "inodes_used_percent": 25.0,
        "responsive": True, "fill_rate_bytes_per_sec": 1000.0 * rng.random(),
    }
    fields["time_to_full_sec"] = (total - used) / 1000.0 + 30 * 86400.0
    return fields


def _hung_fields(hang: tuple[int, int], age_s: int) -> dict[str, FieldValue] | None:
    """What diskprobe sends for a mount while it does not answer (None: it answers)."""
    began, ended = hang
    if age_s > began or (ended and age_s <= ended):
        return None
    return {"responsive": False, "unresponsive_sec": began - age_s}


def fs_points(host: SimHost, times: Iterator[int], anchor_s: int,
              rng: random.Random) -> list[Metric]:  # fmt: skip
    out = []
    for when in times:
        if not _alive(host, None, anchor_s - when):
            continue
        for path, device, fstype in host.mounts:
            tags = {"host": host.name, "path": path, "device": device, "fstype": fstype,
                    "mode": "rw"}
            fields = _fs_fields(path, path == host.full_path, rng, anchor_s - when)
            if path in host.hung:
                fields = _hung_fields(host.hung[path], anchor_s - when) or fields
            out.append(Metric("diskprobe_fs", tags, fields, when * SEC))
    return out


def _io_tags(host: SimHost, disk: SimDisk) -> dict[str, str]:
    tags = {"host": host.name, "device": disk.device}
    if disk.model:
        tags.update(model=disk.model, serial=disk.serial)
    return tags


def _process_fields(cgroup: str, rng: random.Random, pid: int) -> dict[str, FieldValue]:
    return {"pid": pid, "read_bytes_per_sec": rng.uniform(1e5, 5e8),
            "write_bytes_per_sec": rng.uniform(0, 2e8), "processes": rng.randint(1, 8),
            "blkio_wait_ratio": rng.uniform(0, 2), "cmdline": f"{cgroup.rsplit('/', 1)[-1]} --run",
            "cgroup": cgroup}


def fast_points(host: SimHost, anchor_s: int, minutes: int, rng: random.Random) -> list[Metric]:
    """The fast window: every 10 s (the agent-wide default interval) for `minutes`."""
    window_s = minutes * 60
    times = range(anchor_s - window_s + 10, anchor_s + 1, 10)
    out = fs_points(host, iter(times), anchor_s, rng)
    if host.gone_s:
        return out
    for when in times:
        stamp, age = when * SEC, anchor_s - when
        for disk in host.disks:
            if _alive(host, disk, age):
                out.append(Metric("diskprobe_io", _io_tags(host, disk),
                                  _io_fields(disk, rng, age, window_s), stamp))
        some = rng.uniform(0, 8)
        out.append(Metric("diskprobe_pressure", {"host": host.name}, {
            "some_avg10": some, "some_avg60": some, "some_avg300": some, "full_avg10": some / 2,
            "full_avg60": some / 2, "full_avg300": some / 2,
            "some_stall_us_per_sec": some * 1e4, "full_stall_us_per_sec": some * 5e3}, stamp))
        for pid, (name, user, cgroup) in enumerate(host.processes, 1000):
            out.append(Metric("diskprobe_process_io", {"host": host.name, "process": name,
                                                       "user": user},
                              _process_fields(cgroup, rng, pid), stamp))
        for path, device in host.cgroups:
            read = rng.uniform(0, 5e7)
            out.append(Metric("diskprobe_cgroup_io", {**cgroup_tag_set(path, device),
                                                      "host": host.name}, {
                "read_bytes_per_sec": read, "write_bytes_per_sec": read / 3,
                "reads_per_sec": read / 131072, "writes_per_sec": read / 3 / 65536,
                "discard_bytes_per_sec": 0.0, "some_avg10": rng.uniform(0, 5),
                "full_avg10": rng.uniform(0, 2)}, stamp))
        for collector in COLLECTORS:
            out.append(Metric("diskprobe_agent", {"host": host.name, "collector": collector,
                                                  "version": VERSION}, {
                "duration_ms": rng.uniform(0.5, 30.0), "errors": 0, "items": 10}, stamp))
    return out


TRAINING_WINDOW_S = 20  # the meter's 50 steps at about 0.4 s a step
RANKS = 8  # one per GPU, each reading from its own NVMe drive


def training_points(host: SimHost, anchor_s: int, minutes: int, rng: random.Random) -> list[Metric]:
    """A training node's job, as diskprobe.integrations writes it: one point per rank and
    window, compute-bound (the loaders keep up), so the disk-bound alert stays quiet."""
    if host.profile != "train" or host.gone_s:
        return []
    out = []
    for when in range(anchor_s - minutes * 60 + TRAINING_WINDOW_S, anchor_s + 1,
                      TRAINING_WINDOW_S):
        for rank in range(RANKS):
            tags = {"host": host.name, "job": f"llm-{host.index:05d}", "rank": str(rank),
                    "pod": f"{host.name}-worker", "device": f"nvme{rank}n1"}
            out.append(Metric("diskprobe_training", tags, {
                "steps": 50, "step_time_sec": rng.uniform(0.35, 0.45),
                "input_wait_ratio": rng.uniform(0.01, 0.15),
                "checkpoint_ratio": rng.uniform(0.0, 0.05), "bottleneck": "compute",
                "mount_point": "/data", "device_util_percent": rng.uniform(10.0, 60.0),
                "device_read_await_ms": rng.uniform(0.1, 1.0), "pid": 2000 + rank},
                when * SEC))
    return out


def host_points(host: SimHost, goldens: dict[int, Golden], failing: dict[str, Golden],
                anchor_s: int, plan: dict[str, int]) -> list[Metric]:
    """Everything `host` wrote: plan = {"smart_days", "fs_days", "fast_minutes", "seed"}."""
    rng = random.Random(plan["seed"] * 100_003 + host.index)
    out: list[Metric] = []
    for disk in host.disks:
        if disk.kind == "virtio":
            continue
        golden = failing[disk.failure.case] if disk.failure else goldens_for(goldens, disk)
        out += smart_points(host, disk, golden, anchor_s, plan["smart_days"])
    window_s = plan["fast_minutes"] * 60
    hourly = range(anchor_s - plan["fs_days"] * 86400, anchor_s - window_s, 3600)
    out += fs_points(host, iter(hourly), anchor_s, rng)
    out += fast_points(host, anchor_s, plan["fast_minutes"], rng)
    out += training_points(host, anchor_s, plan["fast_minutes"], rng)
    out += job_points(host, anchor_s, plan.get("job_minutes", plan["fast_minutes"]))
    return out


def goldens_for(goldens: dict[int, Golden], disk: SimDisk) -> Golden:
    """goldens: {profile slot -> template}, keyed 0-4 HDD, 10-12 NVMe, 20 boot."""
    base = {"hdd": 0, "nvme": 10, "boot": 20}[disk.kind]
    return goldens[base + disk.template]
