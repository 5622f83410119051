"""Where serialized batches go, one module per [output] kind: stdout, textfile, influxdb, http
(the /metrics server is http_server.py, its connections' bookkeeping http_conns.py).

The InfluxDB output's helpers sit next to it (spool.py, ledger.py, retry.py, refusals.py): a
flat package of small modules keeps every import one level deep, and the helpers know nothing
of InfluxDB (a durable batch queue, its drop accounting, an HTTP Retry-After parser, the
rate-limited log of refused batches).
"""

from __future__ import annotations

from typing import Callable

from diskprobe.config.output import OutputConfig
from diskprobe.log import Logger
from diskprobe.outputs.base import Output as Output
from diskprobe.outputs.base import OutputClosed as OutputClosed
from diskprobe.outputs.base import OutputFailed as OutputFailed
from diskprobe.outputs.base import OutputInterrupted as OutputInterrupted
from diskprobe.outputs.http import HttpOutput
from diskprobe.outputs.influxdb import InfluxDBOutput
from diskprobe.outputs.stdout import StreamOutput
from diskprobe.outputs.textfile import TextfileOutput

STDOUT_FD = 1  # fd 1 itself, not sys.stdout: see StreamOutput


def open_output(config: OutputConfig, log: Logger, stopping: Callable[[], bool]) -> Output:
    """The output [output] kind names, opened (OutputFailed if it cannot be). `stopping` tells
    a stdout write blocked on a reader that does not read that a stop was asked for.
    The config was checked at load: the kind's keys are there and agree."""
    if config.kind == "influxdb":
        return InfluxDBOutput(config, log)
    if config.kind == "http":
        return HttpOutput(config.listen, log, web_config_file=config.web_config_file)
    if config.kind == "textfile":
        return TextfileOutput(config.path, log)
    return StreamOutput(STDOUT_FD, stopping=stopping)
