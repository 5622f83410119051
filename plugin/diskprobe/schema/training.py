"""diskprobe_training: what a training job waited on, measured inside the job."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

TRAINING = MeasurementSpec(
    name="diskprobe_training",
    description="One point per window of training steps (window_steps, 50 by default) of one rank of a training job, written by the job itself: the training-job integrations (measure_input, InputWaitMeter, the Keras and Lightning InputWaitCallback) given an InfluxDB output, not the agent. The verdict uses the vocabulary of `diskprobe diagnose`; see docs/training-job.md.",
    tags=(
        TagSpec("host", "The node the job runs on, as the agent's own `host` tag names it, so a job joins its node's devices: DISKPROBE_HOST, else NODE_NAME (set it from the Kubernetes downward API spec.nodeName), else the job's hostname."),
        TagSpec("job", "The job's name: the `job=` argument, else DISKPROBE_JOB, else TORCHELASTIC_RUN_ID, else the script's name."),
        TagSpec("rank", "The process's global rank: Lightning's global_rank, else RANK (torchrun, DeepSpeed), else OMPI_COMM_WORLD_RANK (mpirun), else LOCAL_RANK; 0 for a single process."),
        TagSpec("pod", "The job's own hostname when it differs from `host` (in Kubernetes, the pod's name)."),
        TagSpec("device", "The device under the data_paths (absent when not given, in memory, or a network filesystem)."),
    ),
    fields=(
        _f("steps", "int", "", "Training steps in the window (a pass's first step is left out: its wait is the loader starting)."),
        _f("step_time_sec", "float", "s", "Mean time per step, from one step's end to the next's."),
        _f("input_wait_ratio", "float", "ratio", "Share of step time spent waiting for the next batch, 0 to 1."),
        _f("checkpoint_ratio", "float", "ratio", "Share of step time spent in checkpoint saves (meter.checkpoint()), 0 to 1."),
        _f("bottleneck", "str", "", "What the window was bound by: disk (the job's own reads waited on the data's device), input_cpu, idle (the loader waits on something that is not a file), compute, checkpoint, remote_fs or unknown (diagnose's vocabulary)."),
        _f("mount_point", "str", "", "Mount point of the filesystem under the data_paths."),
        _f("device_util_percent", "float", "%", "The device's %util over the same window (iostat -x), capped at 100: over a short window the kernel's millisecond counters can run ahead of the clock (diskprobe_io's util_percent is iostat's value, uncapped). A busy device is not by itself the job's bottleneck: see bottleneck."),
        _f("device_read_await_ms", "float", "ms", "The device's r_await over the same window."),
        _f("pid", "int", "", "Process ID of the rank."),
    ),
    series_tags=("host", "job", "rank"),
)
