"""The input wait of a training job, sent to InfluxDB (or VictoriaMetrics) as diskprobe_training.

    output = TrainingOutput("http://influxdb:8086", bucket="telegraf/autogen", job="resnet")
    meter = InputWaitMeter(data_paths=["/mnt/data"], output=output)

One point per window of steps, through diskprobe's own InfluxDB output: a thread of its own
stores each window in an on-disk spool (fsync + rename) and a sender thread delivers it, so a
training step waits on neither the disk nor the network, and a database outage loses nothing
within the spool's bound (docs/direct-output.md). Every rank of a job has a spool of its own,
`<spool_dir>/<job>-rank<N>` (8 ranks of torchrun on one node never share one), and its
points carry the tags that join them to the node's devices: `host` is the node's name as
the agent names it, not the pod's.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import re
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping, TextIO, cast

from diskprobe import files
from diskprobe.compute.job_names import job_name, job_rank
from diskprobe.config.output import OutputConfig
from diskprobe.log import Logger
from diskprobe.metric import FieldValue, Metric
from diskprobe.outputs.base import OutputFailed
from diskprobe.outputs.influxdb import InfluxDBOutput
from diskprobe.schema.training import TRAINING
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.state import state_home

LOG = logging.getLogger("diskprobe")
SPOOL_MAX_BYTES = 16 * 1024 * 1024  # per rank: about a year of 50-step windows
STORE_WAIT_SEC = 30.0  # close(): for the writer thread to store the last windows
_LEVELS = {"E!": logging.ERROR, "W!": logging.WARNING, "I!": logging.INFO, "D!": logging.DEBUG}


class _ToLogging(io.TextIOBase):
    """diskprobe's E!/W!/I! lines (the output's) as records of the `diskprobe` logger: a
    training job reads its logs there, not on the agent's stderr."""

    def write(self, text: str) -> int:
        for line in text.splitlines():
            prefix, _, message = line.partition(" ")
            LOG.log(_LEVELS.get(prefix, logging.INFO), "diskprobe training output: %s", message)
        return len(text)


def job_tags(env: Mapping[str, str], job: str | None = None,
             rank: int | None = None) -> dict[str, str]:  # fmt: skip
    """host, job, rank and pod, from the arguments and the launcher's environment."""
    own = socket.gethostname()
    host = env.get("DISKPROBE_HOST") or env.get("NODE_NAME") or own
    name = job or job_name(env, sys.argv[0])  # as the agent names it (diskprobe_job)
    tags = {"host": host, "job": name, "rank": str(rank if rank is not None else job_rank(env))}
    if own != host:
        tags["pod"] = own
    return tags


def default_spool_base(env: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME/diskprobe/training if it can be made there safely (a container may have
    no writable home, a home may be open to others), else `<tmp>/diskprobe-<uid>/training`,
    which _open checks in turn (files.make_private_tree)."""
    base = Path(state_home(env)) / "diskprobe" / "training"
    if files.make_private_tree(str(base)) is None:
        return base
    return Path(tempfile.gettempdir()) / f"diskprobe-{os.getuid()}" / "training"


class TrainingOutput:
    """Sends each window's report (InputWaitMeter) as a diskprobe_training point."""

    def __init__(self, url: str, bucket: str, *, org: str = "", token_file: str = "",
                 job: str | None = None, rank: int | None = None, spool_dir: str | None = None,
                 timeout: float = 10.0, env: Mapping[str, str] | None = None) -> None:  # fmt: skip
        if not url or not bucket:
            raise ValueError("TrainingOutput needs url and bucket")
        self._env = os.environ if env is None else env
        self.tags = job_tags(self._env, job, rank)
        self._server = (url, bucket, org, token_file, timeout)
        self._base = Path(spool_dir) if spool_dir else default_spool_base(self._env)
        self._serializer = InfluxSerializer()
        self._output: InfluxDBOutput | None = None
        self.spool_dir: Path | None = None
        self._points: queue.SimpleQueue[Metric | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self.failed: OutputFailed | None = None  # the spool could not be opened: points dropped

    def set_rank(self, rank: int) -> None:
        """The rank as the framework knows it (Lightning's global_rank), before the first point."""
        if self._writer is None:
            self.tags["rank"] = str(rank)

    def _open(self) -> InfluxDBOutput:
        log = Logger(cast(TextIO, _ToLogging()))
        safe_job = re.sub(r"[^A-Za-z0-9._-]", "_", self.tags["job"])[:64]
        name = f"{safe_job}-rank{self.tags['rank']}"
        url, bucket, org, token_file, timeout = self._server
        # Every directory up to / must be root's or ours and closed to others (unless sticky):
        # whoever may rename one could swap the spool for theirs.
        problem = files.make_private_tree(str(self._base))
        if problem is not None:
            raise OutputFailed(f"diskprobe training output: spool {self._base} refused: {problem}")
        for spool in (self._base / name, self._base / f"{name}-pid{os.getpid()}"):
            config = OutputConfig(kind="influxdb", url=url, bucket=bucket, org=org,
                                  token_file=token_file, timeout=timeout, spool_dir=str(spool),
                                  spool_max_bytes=SPOOL_MAX_BYTES)  # fmt: skip
            try:
                output = InfluxDBOutput(config, log, env=self._env)
            except OutputFailed as error:  # another process of this job and rank: its own
                LOG.info("diskprobe training output: %s", error)
                continue
            self.spool_dir = spool
            return output
        raise OutputFailed(f"diskprobe training output: no usable spool under {self._base}")

    def write(self, report: Mapping[str, Any]) -> None:
        """Queues the window's point (the training thread returns at once); dropped once the
        spool was found unusable (said once, by the writer thread)."""
        if self.failed is not None:
            return
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_points, daemon=True,
                                            name="diskprobe-training-output")  # fmt: skip
            self._writer.start()
        self._points.put(training_metric(report, self.tags, time.time_ns()))

    def _write_points(self) -> None:
        try:
            self._output = self._open()
        except Exception as error:  # OutputFailed, or anything else: said, never a dead thread
            LOG.warning("diskprobe input wait: no points sent: %s", error)
            self.failed = error if isinstance(error, OutputFailed) else OutputFailed(str(error))
            return
        while (metric := self._points.get()) is not None:
            try:
                self._output.write(self._serializer.serialize([metric]))
            except (OutputFailed, OSError) as error:  # a full disk: this window only
                LOG.warning("diskprobe training output: a window was not stored: %s", error)

    def close(self) -> None:
        """Stores what is queued (a local disk: at most STORE_WAIT_SEC) and sends what is
        spooled, bounded by `timeout`; what is left stays in the spool for the next run of this
        job and rank."""
        if self._writer is None:
            return
        self._points.put(None)
        self._writer.join(STORE_WAIT_SEC)
        if self._output is not None:
            self._output.close()


def training_metric(report: Mapping[str, Any], tags: Mapping[str, str], time_ns: int) -> Metric:
    fields: dict[str, FieldValue] = {
        "steps": int(report["steps"]), "step_time_sec": float(report["step_time_sec"]),
        "input_wait_ratio": float(report["input_wait_ratio"]),
        "checkpoint_ratio": float(report["checkpoint_ratio"]),
        "bottleneck": str(report["bottleneck"]), "pid": os.getpid(),
    }  # fmt: skip
    if report.get("mount_point"):
        fields["mount_point"] = str(report["mount_point"])
    figures = report.get("device_iostat")
    if figures:  # %util at most 100, as the meter's device_util_percent (the schema says why)
        fields["device_util_percent"] = min(100.0, float(figures["util_percent"]))
        fields["device_read_await_ms"] = float(figures["read_await_ms"])
    point_tags = dict(tags)
    if report.get("device"):
        point_tags["device"] = str(report["device"])
    return Metric(TRAINING.name, point_tags, fields, time_ns)
