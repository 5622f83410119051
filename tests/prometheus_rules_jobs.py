"""The training jobs of the promtool scenario (tests/prometheus_rules_cases.py): diskprobe_job's
bottleneck_code per minute on host h1 (alive all along), in the schema's tag names; diskprobe's
Prometheus format names the `job` tag `training_job` (prometheus_rules_files.py renames it
per flavor, in the series and in the expected labels).

- resnet50 rank 0 disk-bound all along: fires;
- bert-ft compute and vit-aug input_cpu all along: never;
- llama-pt disk-bound until minute 40, then gone (the job ended): fires at minute 10, not at
  60 (its spell ended 20 minutes before);
- warmup disk-bound at minutes 58 and 59 only (2 points): never;
- shuffle disk and compute in turn (disk at even minutes): at least half of the window's
  minutes say disk: fires;
- gpt-eval disk every third minute, compute between: under half: never.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

MINUTES = 90
DISK, COMPUTE, INPUT_CPU = 4.0, 2.0, 3.0  # schema.job.BOTTLENECK_CODES
Values = list[Optional[float]]


def job_labels(job: str, rank: str = "0", pid: int = 100) -> dict[str, str]:
    return {"host": "h1", "job": job, "rank": rank, "job_pid": str(pid)}


def _codes(code: Union[Callable[[int], float], float], until: int = MINUTES,
           since: int = 0) -> Values:
    """One code a minute from `since` to `until` (inclusive), none outside."""
    def at(minute: int) -> float:
        return code(minute) if callable(code) else code

    return [at(minute) if since <= minute <= until else None for minute in range(MINUTES + 1)]


JOBS: tuple[tuple[dict[str, str], Values], ...] = (
    (job_labels("resnet50", pid=101), _codes(DISK)),
    (job_labels("bert-ft", pid=102), _codes(COMPUTE)),
    (job_labels("vit-aug", pid=103), _codes(INPUT_CPU)),
    (job_labels("llama-pt", pid=104), _codes(DISK, until=40)),
    (job_labels("warmup", pid=105), _codes(DISK, until=59, since=58)),
    (job_labels("shuffle", pid=106), _codes(lambda m: DISK if m % 2 == 0 else COMPUTE)),
    (job_labels("gpt-eval", pid=107), _codes(lambda m: DISK if m % 3 == 0 else COMPUTE)),
)


def job_series() -> list[tuple[str, str, dict[str, str], Values]]:
    return [("diskprobe_job", "bottleneck_code", labels, values) for labels, values in JOBS]


def _rank(job: str) -> dict[str, str]:
    return {"host": "h1", "job": job, "rank": "0"}  # the alert's labels


# minute -> the alert's (severity, labels, share of the window's minutes saying disk). The rule
# counts minutes through a 1m subquery; Prometheus 2.x windows include both ends: at minute 60
# the minutes 45..60 (16), at minute 10 the minutes 0..10 (11).
ALERT = "DiskprobeJobDiskBound"
EXPECTED: dict[int, list[tuple[str, dict[str, str], float]]] = {
    10: [("warning", _rank("resnet50"), 1.0), ("warning", _rank("llama-pt"), 1.0),
         ("warning", _rank("shuffle"), 6 / 11)],
    60: [("warning", _rank("resnet50"), 1.0), ("warning", _rank("shuffle"), 8 / 16)],
    90: [("warning", _rank("resnet50"), 1.0), ("warning", _rank("shuffle"), 8 / 16)],
}
