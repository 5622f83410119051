"""A training loop whose input waits on something that is not a file, measured from inside
by InputWaitMeter, for tests/test_input_wait_shared_disk.py:
`python input_wait_idle_job.py DATA_DIR STEPS`.

Each batch arrives after 20 ms of sleeping (the network, a lock: no read), each step is 5 ms
of busy CPU in the loop's thread; the meter is told the data is in DATA_DIR (window_steps=20).
Prints one JSON line: each window's verdict and evidence, and the summary.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

from diskprobe.integrations.input_wait import InputWaitMeter, measure_input

EVIDENCE = ("bottleneck", "input_wait_ratio", "device", "device_util_percent", "reason",
            "job_read_bytes_per_sec", "job_read_wait_share", "loader_cpu_cores")  # fmt: skip


def batches(count: int) -> Iterator[int]:
    for index in range(count):
        time.sleep(0.020)  # waiting on something that is not a file
        yield index


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


if __name__ == "__main__":
    data, steps = sys.argv[1], int(sys.argv[2])
    meter = InputWaitMeter(data_paths=[data], window_steps=20)
    for _ in measure_input(batches(steps), meter):
        busy(0.005)
    summary = meter.close()
    windows = [{key: window[key] for key in EVIDENCE} for window in meter.windows]
    print(json.dumps({"summary": summary, "windows": windows}), flush=True)
