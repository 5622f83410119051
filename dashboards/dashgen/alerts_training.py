"""Training alerts: a rank of a training job bound by its data's disk.

The job writes one diskprobe_training point per window of steps and rank, with its verdict
(`bottleneck`). The alert averages the input wait of the windows judged `disk` only: InfluxQL
filters on a field value in WHERE, so no subquery is needed (Kapacitor's batch queries take
none, influxdata/kapacitor#1198). A rank whose wait is high for another reason (input_cpu:
the loaders; remote_fs) does not fire, nor one whose disk-bound windows all ended before the
window.
"""

from __future__ import annotations

from dashgen.alerts_job import DEDUP, job_disk_bound_alert
from dashgen.boards_training import DISK_BOUND_WAIT, VERDICT_TEXT
from dashgen.build import alert_query
from dashgen.model import Alert, Level
from dashgen.refs import TRAINING
from diskprobe.compute.bottleneck_advice import ADVICE

WINDOW = "15m"  # at ~50 steps a window, dozens of windows per rank


def disk_bound_alert() -> Alert:
    wait, bottleneck = TRAINING.f("input_wait_ratio"), TRAINING.f("bottleneck")
    return Alert(
        uid="diskprobe-training-disk-bound",
        group="diskprobe-training",
        title="Training job disk-bound",
        # A regex, not = 'disk': the TICKscript's query would end in a quote, and its
        # ''' string would end there (kapacitor._tick_string refuses it).
        query=alert_query(TRAINING, f"mean({wait})", ("host", "job", "rank", "device"),
                          where=(f"{bottleneck} =~ /^disk$/",)),
        window=WINDOW,
        levels=(Level("warning", "gt", (DISK_BOUND_WAIT,)),),
        pending="0s",
        every="1m",
        measure="mean input_wait_ratio per rank (host, job, rank, device) over 15 min, of "
        "the windows whose bottleneck is disk",
        summary="{host}: job {job} rank {rank} waits for its input {value} of its step time, "
        "bound by {device} (r_await {r_await} ms, mean of its disk-bound windows in 15 min)",
        why=f"The job measured that a rank spent more than {DISK_BOUND_WAIT:.0%} of its step "
        "time waiting for the next batch while the device under its data was busy: its "
        f"accelerator idles at least that long, and a faster one would not help. {VERDICT_TEXT}; "
        "only the disk windows count here.",
        runbook="Open the training dashboard (Is the training job disk-bound?) for the host "
        "and job, and the I/O dashboard's Who waits on disk for what else reads the device; "
        f"then {ADVICE['disk']}.",
        extra_values=(("r_await", f"mean({TRAINING.f('device_read_await_ms')})"),),
        # One notification for a rank the agent judges too (alerts_job.py).
        dedup=DEDUP,
        dedup_labels=("host", "job", "rank"),
    )


def training_alerts() -> list[Alert]:
    return [disk_bound_alert(), job_disk_bound_alert()]
