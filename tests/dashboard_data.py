"""What tests/test_dashboards.py loads into InfluxDB, with every timestamp relative to the write.

- Real: `diskprobe --once` on this machine (io, fs, agent, pressure, process_io and cgroup_io
  lines), tagged host=probe01 (Telegraf adds `host`; diskprobe does not). A writer runs beside
  it (real I/O through the page cache and fsync) so that process_io has a process to report.
- Golden: every tests/golden/smart-json case's expected.out (real diskprobe output for real
  drives, healthy and failing). NVMe drives go to host gpu01, the others to store01. The corpus
  redacts most serials (many read REDACTED), so the `serial` tag is replaced by the case name.
- Synthetic (each marked with SYNTHETIC and a reason): a second read of two failing drives with
  grown counters, two worn NVMe drives, volumes forecast to fill or nearly full, a hung mount,
  saturated disks and nvidia_smi beside them, a host that went silent, and agent heartbeats.
  Each is derived from a real or golden line, with the fields that matter changed. The training
  host also gets I/O pressure, its top processes with their blkio_wait_ratio (a random reader
  that moves few bytes and waits the most among them), per-container I/O (diskprobe_cgroup_io
  for a Kubernetes pod, a Docker container and a systemd service, tagged by diskprobe's own
  cgroup path parser; every field name checked against the schema) and training jobs'
  diskprobe_training windows: a disk-bound rank, one disk-bound below the alert's limit on the
  mean, a compute-bound one, one waiting on its loaders' CPU (data in memory) and a job whose
  disk-bound spell ended 20 minutes ago; their verdicts come from diskprobe's own meter code
  (compute/bottleneck.py). For the fleet view, five
  golden drives on two racks read daily for three days, two of them with growing counters;
  their afr_percent and *_per_day come from diskprobe's own estimate and growth code. For
  fail-slow, four identical disks on each rack read every 30 s for 90 minutes, one slow all
  along and one slow for half an hour; their slowdown_ratio and fail_slow come from
  diskprobe's own detector.

Size: one data set for one InfluxDB load; the fleet block (FLEET to synthetic_fleet) and the
training block (TRAINING_STEP_S to synthetic_training) can move to modules of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Union

from diskprobe.compute import growth
from diskprobe.compute.bottleneck import training_verdict
from diskprobe.compute.cgroup_tags import cgroup_tags
from diskprobe.compute.failslow import FailSlowDetector, FailSlowRules
from diskprobe.compute.peers import peer_group
from diskprobe.config.sections import IoConfig, SmartConfig
from diskprobe.schema import MEASUREMENTS
from diskprobe.smart.afr import load_afr_table
from diskprobe.smart.model import Attribute, DriveHealth
from diskprobe.smart.verdict import GROWTH_COUNTERS
from diskprobe.sources.file_places import Place

from lineproto import Point, parse_lines

GOLDEN = Path(__file__).resolve().parent / "golden" / "smart-json"
PROBE, STORE, GPU, SILENT = "probe01", "store01", "gpu01", "silent01"
SEC, MIN, HOUR = 10**9, 60 * 10**9, 3600 * 10**9
DAY_S = growth.DAY_S
GROWTH_WINDOW_S = SmartConfig().growth_window  # diskprobe's default, seconds

Value = Union[float, int, bool, str]


@dataclass(frozen=True)
class Row:
    """One point, `offset_ns` before the moment it is written."""

    measurement: str
    tags: dict[str, str]
    fields: dict[str, Value]
    offset_ns: int
    origin: str  # "real", "golden" or SYNTHETIC: why
    meta: dict[str, str] = field(default_factory=dict)  # e.g. the golden case

    def tagged(self, **tags: str) -> Row:
        return replace(self, tags={**self.tags, **tags})

    def changed(self, offset_ns: int, origin: str, **fields: Value) -> Row:
        return replace(self, fields={**self.fields, **fields}, offset_ns=offset_ns, origin=origin)


def synthetic(why: str) -> str:
    return f"SYNTHETIC: {why}"


def _diskprobe() -> list[str]:
    script = Path(sys.executable).parent / "diskprobe"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "diskprobe"]


# Writes 4 MiB and fsyncs, over and over, until killed: real block-layer writes for process_io.
WRITER = """
import os, sys
block = os.urandom(4 << 20)
with open(sys.argv[1], "wb") as out:
    while True:
        out.seek(0)
        out.write(block)
        out.flush()
        os.fsync(out.fileno())
"""


def run_diskprobe_once(tmp: Path) -> list[Point]:
    """Real `diskprobe --once` output, with the state file in `tmp`, beside a real writer."""
    config = tmp / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp / "state.json"}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
    script = tmp / "writer.py"  # a file, not -c: the command line stays one line
    script.write_text(WRITER, encoding="utf-8")
    writer = subprocess.Popen([sys.executable, str(script), str(tmp / "written.bin")])
    try:
        done = subprocess.run(
            [*_diskprobe(), "--config", str(config), "--once"],
            capture_output=True, text=True, timeout=120, env=env, check=True,
        )
    finally:
        writer.kill()
        writer.wait()
    return parse_lines(done.stdout)


def real_rows(points: list[Point]) -> list[Row]:
    newest = max(p.time_ns for p in points)
    return [
        Row(p.measurement, {**p.tags, "host": PROBE}, dict(p.fields), p.time_ns - newest, "real")
        for p in points
    ]


def golden_rows() -> list[Row]:
    """Every golden case's lines, moved to 10 minutes ago, on store01 or gpu01."""
    rows: list[Row] = []
    for case in sorted(GOLDEN.iterdir()):
        expected = case / "expected.out"
        if not expected.is_file():
            continue
        for point in parse_lines(expected.read_text(encoding="utf-8")):
            host = GPU if point.tags.get("media") == "nvme" or "nvme" in case.name else STORE
            rows.append(
                Row(point.measurement, {**point.tags, "host": host, "serial": case.name},
                    dict(point.fields), -10 * MIN, "golden", {"case": case.name})
            )
    return rows


def _smart(rows: list[Row], case: str) -> Row:
    return next(r for r in rows if r.measurement == "diskprobe_smart" and r.meta["case"] == case)


REALLOC_CASE = "failing-ata-hdd-seagate-st3500418as-realloc304"
PENDING_CASE = "failing-ata-hdd-seagate-st3000nm0033"
WORN_A, WORN_B = "synthetic-worn-a", "synthetic-worn-b"


def synthetic_smart(golden: list[Row]) -> list[Row]:
    """Second reads with grown counters, and two worn NVMe drives."""
    out: list[Row] = []
    realloc = _smart(golden, REALLOC_CASE)
    out += [
        # The golden read becomes the earlier one, 20 h ago ...
        realloc.changed(-20 * HOUR, synthetic("the golden read, moved 20 h back")),
        # ... and a second read 10 min ago found 8 more reallocated sectors.
        realloc.changed(-10 * MIN, synthetic("second read: reallocated 304 -> 312"),
                        reallocated_sectors=312, reallocated_sectors_increase=8,
                        verdict_reasons="reallocated_sectors=312,reallocated_sectors_increase=8"),
    ]
    pending = _smart(golden, PENDING_CASE)
    out += [
        pending.changed(-20 * HOUR, synthetic("the golden read, moved 20 h back")),
        pending.changed(-10 * MIN, synthetic("second read: pending 0 -> 3"),
                        pending_sectors=3, pending_sectors_increase=3,
                        verdict_reasons="reallocated_sectors=1,command_timeouts=4,"
                        "pending_sectors=3,pending_sectors_increase=3"),
    ]
    worn75 = _smart(golden, "nvme-intel-ssdpe2kx020t7-worn75").tagged(serial=WORN_A)
    out.append(worn75.changed(
        -10 * MIN, synthetic("worn75 at 96 % used, spare 5 below its threshold 10"),
        percentage_used=96, available_spare_percent=5, critical_warning=1, verdict="fail",
        verdict_code=2,
        verdict_reasons="critical_warning=1,available_spare_percent=5,percentage_used=96"))
    spare93 = _smart(golden, "nvme-intel-ssdpedmd800g4-spare93").tagged(serial=WORN_B)
    out.append(spare93.changed(
        -10 * MIN, synthetic("spare93 at 85 % used, spare 15 (5 above its threshold)"),
        percentage_used=85, available_spare_percent=15, verdict="warn", verdict_code=1,
        verdict_reasons="percentage_used=85"))
    return out


def _one(rows: list[Row], measurement: str, **tags: str) -> Row:
    return next(
        r for r in rows
        if r.measurement == measurement and all(r.tags.get(k) == v for k, v in tags.items())
    )


FILLING = {"/scratch": 2.0, "/checkpoints": 10.0, "/datasets": 30.0}  # hours to full
FULL = "/logs"
STUCK, RECOVERED, BRIEF = "/mnt/stuck", "/mnt/recovered", "/mnt/briefly-stuck"


def synthetic_fs(real: list[Row]) -> list[Row]:
    """Volumes forecast to fill, one 97 % full, one hung mount, one that answers again and one
    not answering for 3 minutes only."""
    root = next(r for r in real if r.measurement == "diskprobe_fs" and "total_bytes" in r.fields)
    out: list[Row] = []
    for path, hours in FILLING.items():
        out.append(root.tagged(path=path).changed(
            -MIN, synthetic(f"{path} fills in {hours:g} h"),
            fill_rate_bytes_per_sec=2.0e6, time_to_full_sec=hours * 3600.0))
    out.append(root.tagged(path=FULL).changed(-MIN, synthetic("97 % used"), used_percent=97.0))
    hung = Row("diskprobe_fs", {**root.tags, "path": STUCK, "device": "nas:/export",
                                "fstype": "nfs4"}, {"responsive": False}, 0, "")

    def not_answering(path: str, seconds: int, began: int, origin: str) -> Row:
        # As diskprobe sends it: unresponsive_sec counts from the first such point.
        return replace(hung, tags={**hung.tags, "path": path}, offset_ns=-seconds * SEC,
                       fields={"responsive": False, "unresponsive_sec": began - seconds},
                       origin=synthetic(origin))

    for seconds in range(0, 600, 10):
        out.append(not_answering(STUCK, seconds, 590, "statfs hung for 10 minutes"))
        if seconds < 240:  # answered again for the last 4 minutes
            out.append(root.tagged(path=RECOVERED).changed(
                -seconds * SEC, synthetic("answers again after a 6-minute hang")))
        else:
            out.append(not_answering(RECOVERED, seconds, 590, "hung, then recovered"))
        if seconds < 180:
            out.append(not_answering(BRIEF, seconds, 170, "hung for the last 3 minutes"))
        else:
            out.append(root.tagged(path=BRIEF).changed(
                -seconds * SEC, synthetic("answered until 3 minutes ago")))
    return out


# (device, util_percent, await_ms): the HDD and the second NVMe queue; the first NVMe is busy
# (100 % util) but fast, which %util alone would call saturated.
DISKS = (("sdb", 97.0, 180.0), ("nvme0n1", 100.0, 0.4), ("nvme1n1", 99.0, 25.0))
# Slow but not busy the whole 15 minutes: sdc's %util dropped to 60 once, 5 minutes ago, and
# sdd is slow at 40 % util; neither is saturated (the alerts' util gate keeps them out).
NOT_SATURATED = (("sdc", 97.0, 180.0, 300), ("sdd", 40.0, 200.0, -1))


def synthetic_gpu_host(real: list[Row]) -> list[Row]:
    """20 minutes of a training host: saturated disks and GPUs idling at 20 %."""
    io = next(r for r in real if r.measurement == "diskprobe_io")
    out: list[Row] = []
    for seconds in range(0, 1200, 10):
        for device, util, wait, dip_at in (*((*disk, -1) for disk in DISKS), *NOT_SATURATED):
            util = 60.0 if seconds == dip_at else util
            out.append(io.tagged(host=GPU, device=device).changed(
                -seconds * SEC, synthetic(f"{device} at {util:g} % util, await {wait:g} ms"),
                util_percent=util, await_ms=wait, read_await_ms=wait, queue_size=util / 10))
        for index in ("0", "1"):
            tags = {"host": GPU, "index": index, "name": "NVIDIA A100-SXM4-80GB",
                    "uuid": f"GPU-0000000{index}", "pstate": "P0", "compute_mode": "Default"}
            out.append(Row("nvidia_smi", tags, {"utilization_gpu": 20, "utilization_memory": 5,
                                                "temperature_gpu": 41},
                           -seconds * SEC, synthetic("Telegraf nvidia_smi, GPUs starved")))
    return out


def synthetic_agents(real: list[Row]) -> list[Row]:
    """Heartbeats for the golden hosts; silent01 stopped reporting 5 minutes ago (the alert
    fires 2 to 4 minutes into a silence)."""
    beat = next(r for r in real if r.measurement == "diskprobe_agent")
    out = [
        beat.tagged(host=host).changed(-seconds * SEC, synthetic("heartbeat of a golden host"))
        for host in (STORE, GPU) for seconds in (0, 10, 20)
    ]
    out += [
        beat.tagged(host=SILENT).changed(-seconds * SEC, synthetic("stopped 5 minutes ago"))
        for seconds in range(300, 1800, 10)
    ]
    return out


def schema_fields(measurement: str, **values: Value) -> dict[str, Value]:
    """`values`, each name checked against the schema of `measurement`."""
    spec = next(m for m in MEASUREMENTS if m.name == measurement)
    unknown = set(values) - {f.name for f in spec.fields}
    assert not unknown, f"{measurement} has no fields {unknown}"
    return dict(values)


PSI_SOME, PSI_FULL = 38.0, 27.5  # the training host's I/O pressure (%)


def synthetic_pressure() -> list[Row]:
    """20 minutes of host PSI on the training host whose disks queue (synthetic_gpu_host)."""
    fields = schema_fields(
        "diskprobe_pressure", some_avg10=PSI_SOME, some_avg60=36.0, some_avg300=30.0,
        full_avg10=PSI_FULL, full_avg60=25.0, full_avg300=20.0,
        some_stall_us_per_sec=PSI_SOME * 10_000, full_stall_us_per_sec=PSI_FULL * 10_000)
    return [Row("diskprobe_pressure", {"host": GPU}, fields, -seconds * SEC,
                synthetic(f"tasks stalled on I/O: some {PSI_SOME:g} %, full {PSI_FULL:g} %"))
            for seconds in range(0, 1200, 10)]


# (process, user, pid, read B/s, write B/s, cmdline, cgroup) on the training host.
RANDOM_READER = "feature_store"
PROCESSES = (
    ("pt_data_worker_", "ml", 41237, 612.0e6, 0.0,
     "python train.py --config configs/resnet50.yaml --workers 8",
     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f2a9c1e_7b4d_4e8a_9c0f_"
     "1a2b3c4d5e6f.slice/cri-containerd-8d1e5f2a3b4c.scope"),
    ("python", "ml", 41201, 2.0e6, 180.0e6, "python train.py --save-every 500",
     "/system.slice/docker-4b6e1c2d3a4f.scope"),
    ("postgres", "postgres", 1822, 4.5e6, 1.5e6, "postgres: checkpointer",
     "/system.slice/postgresql.service"),
    # Random 4 KiB reads from the HDD (sdb, r_await 180 ms): 40 reads/s keep 7.2 threads
    # blocked (Little's law: 40/s x 0.18 s), for 160 KiB/s. Last by bytes, first by wait.
    (RANDOM_READER, "ml", 52710, 40 * 4096.0, 0.0,
    "python serve_features.py --index /srv/features.idx --threads 16",
    "/system.slice/feature-store.service"),
)
# blkio_wait_ratio (s/s, delay accounting on): the loader's 8 workers blocked half the time,
# the checkpoint writer in fsync, the database hardly at all.
BLKIO_WAIT = {"pt_data_worker_": 4.0, "python": 0.6, "postgres": 0.05, RANDOM_READER: 7.2}


def synthetic_process_io() -> list[Row]:
    """The training host's top processes: a data loader, a checkpoint writer, a database and
    a random reader that moves few bytes and waits the most."""
    out: list[Row] = []
    for name, user, pid, read, write, cmdline, cgroup in PROCESSES:
        fields = schema_fields("diskprobe_process_io", pid=pid, read_bytes_per_sec=read,
                               write_bytes_per_sec=write, cmdline=cmdline, cgroup=cgroup,
                               blkio_wait_ratio=BLKIO_WAIT[name])
        out += [Row("diskprobe_process_io", {"host": GPU, "process": name, "user": user},
                    fields, -seconds * SEC, synthetic(
                        f"{name} at {read + write:g} B/s, blocked {BLKIO_WAIT[name]:g} s/s"))
                for seconds in range(0, 600, 10)]
    return out


# (cgroup path, device, read B/s, write B/s, some_avg10, full_avg10): the same three workloads.
CGROUPS = (
    (PROCESSES[0][6], "nvme1n1", 600.0e6, 0.0, 41.0, 33.0),
    (PROCESSES[0][6], "sdb", 12.0e6, 0.0, 41.0, 33.0),
    (PROCESSES[1][6], "nvme0n1", 2.0e6, 180.0e6, 12.0, 8.0),
    (PROCESSES[2][6], "sdb", 4.5e6, 1.5e6, 3.0, 0.5),
)


def synthetic_cgroup_io() -> list[Row]:
    """Per-container I/O on the training host, tagged as diskprobe tags each cgroup path."""
    out: list[Row] = []
    for path, device, read, write, some, full in CGROUPS:
        tags = {**cgroup_tags(path.lstrip("/")), "device": device, "host": GPU}
        fields = schema_fields(
            "diskprobe_cgroup_io", read_bytes_per_sec=read, write_bytes_per_sec=write,
            reads_per_sec=read / 131072, writes_per_sec=write / 131072,
            discard_bytes_per_sec=0.0, some_avg10=some, full_avg10=full)
        out += [Row("diskprobe_cgroup_io", tags, fields, -seconds * SEC,
                    synthetic(f"{tags['cgroup']} on {device}: pressure {some:g} %"))
                for seconds in range(0, 1200, 10)]
    return out


# Training jobs on the training host (the training dashboard, diskprobe-training-disk-bound):
# diskprobe_training points as the job's InputWaitMeter writes them, one per window of steps
# and rank, every 30 s. Only the input wait along the way is made up: the step time follows
# from it (a 0.12 s step of compute), the device's %util and r_await are those of DISKS (the
# host's diskprobe_io), and the verdict is diskprobe's own (compute/bottleneck.py).
TRAINING_STEP_S = 30
COMPUTE_S = 0.12  # a step's compute; the step time is COMPUTE_S / (1 - input wait)
DISK_BOUND, BELOW_LIMIT = ("resnet50", "0"), ("resnet50", "1")
COMPUTE_BOUND, LOADER_BOUND, ENDED = ("bert-ft", "0"), ("vit-aug", "0"), ("llama-pt", "0")
# (job, rank), device ("": the data is in memory, no device), mount point, spells of (from,
# to: minutes before the write, the input wait of each window in turn, the newest first).
Spell = tuple[int, int, tuple[float, ...]]
TRAINING_RANKS: tuple[tuple[tuple[str, str], str, str, tuple[Spell, ...]], ...] = (
    (DISK_BOUND, "nvme1n1", "/data", ((-20, 0, (0.8,)),)),  # disk, above the limit: fires
    # disk, 0.6 and 0.3 in turn: the last and the largest are above 0.5, the mean (0.45) not
    (BELOW_LIMIT, "nvme1n1", "/data", ((-20, 0, (0.6, 0.3)),)),
    (COMPUTE_BOUND, "nvme0n1", "/datasets", ((-20, 0, (0.1,)),)),  # compute
    (LOADER_BOUND, "", "/dev/shm", ((-20, 0, (0.85,)),)),  # waits 0.85, in memory: input_cpu
    # Disk-bound from 60 to 20 minutes ago (before the alert's 15 minutes), compute since.
    (ENDED, "sdb", "/scratch", ((-60, -20, (0.9,)), (-20, 0, (0.1,)))),
)


def training_window(device: str, mount: str, wait: float) -> dict[str, Value]:
    """One window's fields, with the verdict diskprobe's meter gives them."""
    disk = {name: (util, wait_ms) for name, util, wait_ms in DISKS}
    util, r_await = disk.get(device, (0.0, 0.0))
    place = Place(device, mount, False, "ext4") if device else None
    verdict = training_verdict(wait, 0.0, place, not device, util if device else None)
    step_time = COMPUTE_S / (1.0 - wait)
    fields: dict[str, Value] = {
        "steps": round(TRAINING_STEP_S / step_time), "step_time_sec": step_time,
        "input_wait_ratio": wait, "checkpoint_ratio": 0.0, "bottleneck": verdict.bottleneck,
        "mount_point": mount}
    if device:
        fields.update(device_util_percent=util, device_read_await_ms=r_await)
    return schema_fields("diskprobe_training", **fields)


def synthetic_training() -> list[Row]:
    out: list[Row] = []
    for pid, ((job, rank), device, mount, spells) in enumerate(TRAINING_RANKS, 52000):
        tags = {"host": GPU, "job": job, "rank": rank, "pod": f"{job}-worker-{rank}",
                **({"device": device} if device else {})}
        for start, end, waits in spells:
            offsets = range(end * MIN, start * MIN, -TRAINING_STEP_S * SEC)
            for index, offset in enumerate(offsets):
                wait = waits[index % len(waits)]
                fields = {**training_window(device, mount, wait), "pid": pid}
                out.append(Row("diskprobe_training", tags, fields, offset, synthetic(
                    f"{job} rank {rank}: {wait:g} of step time waiting, {fields['bottleneck']}")))
    return out


# The fleet view (dashboards' diskprobe-fleet, the AFR and defect-growth alerts): golden drives
# copied to two racks and read once a day for three days, the last read 10 minutes ago. Only
# the counter values along the way are made up: afr_percent is diskprobe's own estimate
# (smart/afr.py) from the drive's golden attributes, the *_per_day rates come from diskprobe's
# own growth history (compute/growth.py) over these reads.
RACK_A, RACK_B = "rack01", "rack02"
FLEET_READS = 4
# (host, device, golden case, growing counter: (field, ATA attribute id or 0, value per read)).
FLEET: tuple[tuple[str, str, str, tuple[str, int, tuple[int, ...]] | None], ...] = (
    # fail: 1975 reallocated sectors (the table's 150.28 %/year), nothing grows any more
    (RACK_A, "sda", "failing-usb-jmicron-hitachi-hds721050dle630", None),
    # warn: 2 new pending sectors a day
    (RACK_A, "sdb", PENDING_CASE, ("pending_sectors", 197, (0, 2, 4, 6))),
    # ok: every predictor reads 0, so its estimate is the hard-drive baseline
    (RACK_B, "sda", "ata-hdd-wdc-wd20efrx-68euzn0", None),
    # warn, no estimate (NVMe): one more media error a day (media errors warn; no hard fact)
    (RACK_B, "nvme0", "failing-nvme-samsung-970-evo-500gb-media-errors",
     ("media_errors", 0, (4, 5, 6, 7))),
    # ok, no estimate (SCSI): grown_defects stays 0
    (RACK_B, "sdb", "scsi-seagate-st1200mm0088", None),
)


def _attributes(golden: list[Row], case: str, raw: dict[int, int]) -> list[Attribute]:
    """The case's ATA attributes as diskprobe parsed them, with `raw` values replaced."""
    out = []
    for row in golden:
        if row.measurement == "diskprobe_smart_attr" and row.meta["case"] == case:
            number, f = int(row.tags["id"]), row.fields
            parsed = int(f["raw"]) if "raw" in f else None  # unparsable raw values have none
            out.append(Attribute(
                number, row.tags["name"], int(f["value"]), int(f["worst"]), int(f["threshold"]),
                raw.get(number, parsed), str(f["raw_string"]), bool(f["prefailure"]),
                str(f["when_failed"])))
    return out


def fleet_drive(golden: list[Row], host: str, device: str, case: str,
                grows: tuple[str, int, tuple[int, ...]] | None) -> list[Row]:
    """One drive's daily reads: counters (and so afr_percent and *_per_day) as they grow."""
    line = _smart(golden, case).tagged(host=host, device=device)
    histories: dict[str, list[list[float]]] = {}
    rows = []
    for read in range(FLEET_READS):
        counters = {name: int(value) for name, value in line.fields.items()
                    if name in GROWTH_COUNTERS and isinstance(value, int)}
        reasons = str(line.fields["verdict_reasons"])
        if grows is not None:
            name, _, values = grows
            counters[name] = values[read]
            # The golden reason names the golden count: media_errors=7 -> media_errors=5
            reasons = reasons.replace(f"{name}={line.fields.get(name)}", f"{name}={values[read]}")
            if read:
                reasons += f",{name}_growth_24h={values[read] - values[read - 1]}"
        now_s = read * DAY_S
        per_day: dict[str, Value] = {}
        for counter, value in counters.items():
            history = growth.record(histories.get(counter, []), now_s, value, GROWTH_WINDOW_S)
            histories[counter] = history
            rate = growth.per_day(history, now_s, GROWTH_WINDOW_S)
            assert rate is not None  # the history holds this read at least
            per_day[f"{counter}_per_day"] = rate
        raw = {grows[1]: counters[grows[0]]} if grows is not None and grows[1] else {}
        health = DriveHealth(device, str(line.tags["protocol"]), str(line.tags["media"]),
                             attributes=_attributes(golden, case, raw))
        estimate = load_afr_table().estimate(health)
        afr: dict[str, Value] = {} if estimate is None else {"afr_percent": estimate.afr_percent}
        offset = -10 * MIN - (FLEET_READS - 1 - read) * 24 * HOUR
        rows.append(line.changed(
            offset, synthetic(f"{case} on {host}, daily read {read + 1} of {FLEET_READS}"),
            **counters, **schema_fields("diskprobe_smart", **afr, **per_day),
            verdict_reasons=reasons))
    return rows


def synthetic_fleet(golden: list[Row]) -> list[Row]:
    return [row for host, device, case, grows in FLEET
            for row in fleet_drive(golden, host, device, case, grows)]


# Fail-slow (the I/O dashboard's "Slowdown vs peers" and "Fail-slow devices", the fleet's
# "Fail-slow devices across the fleet", the diskprobe-fail-slow alert): four identical HDDs on
# each rack host, read every 30 s for 90 minutes, the last read now. Only the load and the
# awaits are made up (a load all four share, on a queueing curve; SLOWDOWN times the await for
# a slow disk); the peer group, slowdown_ratio and fail_slow are diskprobe's own
# (compute/peers.py, compute/failslow.py with [io]'s defaults), fed as the I/O collector feeds
# them: the ratio only when there is one, fail_slow on every point.
FAIL_SLOW_MODEL = "ST10000NM0016-1TT101"  # a real model (corpus fleet-sample/024-*.txt)
FAIL_SLOW_DISKS = ("sdc", "sdd", "sde", "sdf")
FAIL_SLOW_STEP_S = 30
FAIL_SLOW_READS = 180  # 90 minutes
SLOWDOWN = 5.0
SLOW_ALWAYS = (RACK_A, "sdf")  # slow all along: fail_slow turns on and stays on
# Slow from 60 to 30 minutes ago, as fast as its peers since: fail_slow on, then off again.
SLOW_THEN_RECOVERED = (RACK_B, "sdd")
SLOW_SPELL_NS = (-60 * MIN, -30 * MIN)
IDLE_NS = (-75 * MIN, -70 * MIN)  # every disk idle: no ratio, the state neither rises nor clears
SERVICE_MS, REQUEST_BYTES = 8.0, 65536.0  # random 64 KiB reads on a 7200 rpm disk


def _disk_fields(reads_per_sec: float, factor: float) -> dict[str, Value]:
    """One interval of random reads at `reads_per_sec`, `factor` times slower than the curve."""
    busy = reads_per_sec * SERVICE_MS / 1000.0
    wait = SERVICE_MS / (1.0 - busy) * factor  # M/M/1-like: the await grows with the load
    return schema_fields(
        "diskprobe_io", reads_per_sec=reads_per_sec, read_await_ms=wait,
        read_bytes_per_sec=reads_per_sec * REQUEST_BYTES, read_request_bytes=REQUEST_BYTES,
        writes_per_sec=0.0, write_await_ms=0.0, write_bytes_per_sec=0.0,
        write_request_bytes=0.0, await_ms=wait, queue_size=reads_per_sec * wait / 1000.0,
        util_percent=min(100.0, busy * factor * 100.0), interval_sec=float(FAIL_SLOW_STEP_S))


def _factor(host: str, device: str, offset_ns: int) -> float:
    if (host, device) == SLOW_ALWAYS:
        return SLOWDOWN
    spell = SLOW_SPELL_NS[0] <= offset_ns < SLOW_SPELL_NS[1]
    return SLOWDOWN if (host, device) == SLOW_THEN_RECOVERED and spell else 1.0


def fail_slow_host(host: str) -> list[Row]:
    io = IoConfig()
    detector = FailSlowDetector(FailSlowRules(io.fail_slow_window, io.fail_slow_ratio))
    group = peer_group(FAIL_SLOW_DISKS[0], FAIL_SLOW_MODEL, "1", False, io.peer_groups)
    assert group is not None  # whole disks with a model are judged
    rows = []
    for read in range(FAIL_SLOW_READS):
        offset = -(FAIL_SLOW_READS - 1 - read) * FAIL_SLOW_STEP_S * SEC
        # The shared load: 10 reads/s, 15 for ten minutes of every twenty; 0.1 (3 reads in an
        # interval, under compute/failslow.py's MIN_IOS) while idle.
        load = 0.1 if IDLE_NS[0] <= offset < IDLE_NS[1] else 15.0 if read // 20 % 2 else 10.0
        fields = {d: _disk_fields(load, _factor(host, d, offset)) for d in FAIL_SLOW_DISKS}
        detector.observe(read * float(FAIL_SLOW_STEP_S), {d: (group, f) for d, f in fields.items()})
        for device, values in fields.items():
            track = detector.tracks[device]
            judged: dict[str, Value] = {"fail_slow": track.fail_slow}
            if track.ratio is not None:
                judged["slowdown_ratio"] = track.ratio
            tags = {"host": host, "device": device, "model": FAIL_SLOW_MODEL,
                    "serial": f"SYNTH{host[-2:]}{device.upper()}"}
            rows.append(Row("diskprobe_io", tags, {**values, **judged}, offset, synthetic(
                f"{device} on {host}, {_factor(host, device, offset):g}x the peers' await")))
    return rows


def synthetic_fail_slow() -> list[Row]:
    return [row for host in (RACK_A, RACK_B) for row in fail_slow_host(host)]


def dataset(real_points: list[Point]) -> list[Row]:
    real = real_rows(real_points)
    golden = golden_rows()
    redone = (REALLOC_CASE, PENDING_CASE)  # synthetic_smart moves these and reads them again
    kept = [r for r in golden
            if not (r.measurement == "diskprobe_smart" and r.meta["case"] in redone)]
    return [
        *real, *kept, *synthetic_smart(golden), *synthetic_fs(real),
        *synthetic_gpu_host(real), *synthetic_agents(real), *synthetic_pressure(),
        *synthetic_process_io(), *synthetic_cgroup_io(), *synthetic_fleet(golden),
        *synthetic_fail_slow(), *synthetic_training(),
    ]


def heartbeats(rows: list[Row]) -> list[Row]:
    """The live hosts' newest agent points: written again right before a deadman check."""
    live = {PROBE, STORE, GPU}
    return [r for r in rows if r.measurement == "diskprobe_agent" and r.tags["host"] in live
            and r.offset_ns == 0]
