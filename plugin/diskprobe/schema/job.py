"""diskprobe_job: what each training job on the host is bound by, watched by the agent."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

# bottleneck -> bottleneck_code: fixed, for alerts and number-only stores (Prometheus,
# collectd); `diskprobe diagnose`'s vocabulary. Never renumbered: a new verdict gets a new code.
BOTTLENECK_CODES = {"unknown": 0, "idle": 1, "compute": 2, "input_cpu": 3, "disk": 4,
                    "checkpoint": 5, "throttled": 6, "remote_fs": 7}  # fmt: skip
CODES_TEXT = ", ".join(f"{code} {name}" for name, code in BOTTLENECK_CODES.items())

JOB = MeasurementSpec(
    name="diskprobe_job",
    description="One point per training job per interval, from the agent's own watch of the job's threads ([jobs]: processes holding an accelerator's device node open, or matching `match` or `cgroups`), with the verdict of `diskprobe diagnose` over that interval's samples only: no command to run, no code in the job. A job's first point comes at the end of its first full interval; a job that ends or changes identity (exec) mid-interval gets no point for it. See docs/diagnose.md#the-agent-watches-every-job.",
    tags=(
        TagSpec("job", "The job's name, as the training output names it: DISKPROBE_JOB, else TORCHELASTIC_RUN_ID, else its script's name (from the process's environment and command line). In the Prometheus forms this label is `training_job` (Prometheus owns `job`)."),
        TagSpec("rank", "RANK (torchrun, DeepSpeed), else OMPI_COMM_WORLD_RANK (mpirun), else LOCAL_RANK of the job's main process, 0 when none, as the training output tags it: each rank of a torchrun or mpirun job is a job of its own."),
        TagSpec("job_pid", "The job's main process ID, as a tag: it tells apart two jobs of one name and rank on one host (two runs of train.py). A job's series lives as long as the job."),
        TagSpec("cgroup", "The main process's cgroup path (as diskprobe_cgroup_io's cgroup tag)."),
        TagSpec("pod_uid", "Kubernetes pod UID (kubepods...pod<uid>)."),
        TagSpec("container_id", "Container ID (kubepods, docker-<id>.scope, /docker/<id>)."),
        TagSpec("qos", "Kubernetes QoS class: guaranteed, burstable, besteffort."),
        TagSpec("unit", "systemd unit (system.slice/<unit>.service)."),
    ),
    fields=(
        _f("bottleneck", "str", "", "What the job was bound by over the interval: disk, input_cpu, compute, checkpoint, throttled, remote_fs, idle or unknown (docs/diagnose.md)."),
        _f("bottleneck_code", "int", "", f"bottleneck as a number, fixed: {CODES_TEXT}."),
        _f("bottleneck_since", "int", "s", "Unix time (seconds) when the job's verdict last changed (its first point's time when it never did)."),
        _f("pid", "int", "", "Process ID of the job's main process: its topmost process past wrappers, the one `diskprobe diagnose --pid` takes."),
        _f("main_running_ratio", "float", "ratio", "Share of the interval the main thread (the training loop) ran, on a CPU or in an accelerator's driver, 0 to 1."),
        _f("main_io_wait_ratio", "float", "ratio", "Share of the interval the main thread waited on files, 0 to 1."),
        _f("main_waiting_ratio", "float", "ratio", "Share of the interval the main thread waited on other tasks (its input, its runtime's threads, a lock, the network), 0 to 1."),
        _f("workers_running_threads", "float", "threads", "The loaders' CPU use in thread-equivalents (2.0: two threads running the whole interval): worker processes and the main process's threads that read files."),
        _f("workers_io_wait_threads", "float", "threads", "The loaders' waits on files, in thread-equivalents."),
        _f("runtime_running_threads", "float", "threads", "The runtime's own threads running the step (TensorFlow, XLA, oneDNN/OpenMP pools; accelerator ioctls anywhere in the job), in thread-equivalents."),
        _f("cpu_cores", "float", "cores", "CPU time of all the job's threads over the interval, in cores."),
        _f("read_bytes_per_sec", "float", "B/s", "Bytes the job's processes caused to be read from storage, per second (/proc/<pid>/io read_bytes)."),
        _f("write_bytes_per_sec", "float", "B/s", "Bytes the job's processes caused to be written to storage, per second."),
        _f("device", "str", "", "For the I/O verdicts (disk, checkpoint, throttled): the kernel name of the device the job waits on, as diskprobe_io names it (loop devices included, whatever [io] excludes)."),
        _f("mount_point", "str", "", "For the I/O verdicts: the mount point of the filesystem the job waits on."),
        _f("processes", "int", "", "Processes of the job sampled in the interval (the main one and its loader workers)."),
        _f("threads", "int", "", "Threads of the job sampled in the interval."),
        _f("samples", "int", "", "Samples of the main thread in the interval (one every [jobs] sample_interval)."),
    ),
    series_tags=("job", "rank", "job_pid"),
)
