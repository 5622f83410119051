"""Command line: `diskprobe` (execd loop), `--once`, `--sample-config`, overrides."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import signal
import stat
import sys
import time
from typing import Sequence

from diskprobe import __version__
from diskprobe.collectors.base import Collector
from diskprobe.collectors.cgroup_io import CgroupIoCollector
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.collectors.pressure import PressureCollector
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import AgentConfig, ConfigError, load_config, with_overrides
from diskprobe.durations import parse_duration
from diskprobe.log import Logger
from diskprobe.outputs import Output, OutputClosed, StreamOutput, TextfileOutput
from diskprobe.roots import HostRoots
from diskprobe.runtime import STOP, Runtime, watch_stdin
from diskprobe.sample_config import render_sample_config
from diskprobe.serializers import FORMATS, make_serializer
from diskprobe.serializers.collectd import collectd_interval
from diskprobe.sinks.influxdb import InfluxDBOutput, OutputStatsCollector
from diskprobe.sinks.influxdb import validate as validate_influxdb
from diskprobe.state import StateStore

ONCE_DEFAULT_INTERVAL = 1.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diskprobe",
        description="Disk I/O, filesystem and SMART probe for Telegraf execd / collectd exec.",
    )
    parser.add_argument(
        "command", nargs="?", choices=("doctor",), help="doctor: check the set-up and exit"
    )
    parser.add_argument("--config", metavar="FILE", help="TOML configuration file")
    parser.add_argument("--once", action="store_true", help="two samples, one batch, exit")
    parser.add_argument("--interval", metavar="DURATION", help='e.g. "10s" (overrides config)')
    parser.add_argument("--trigger", choices=("interval", "stdin"), help="what starts a batch")
    parser.add_argument("--format", choices=FORMATS, help="output format (default influx)")
    parser.add_argument(
        "--textfile", metavar="PATH", help="write each batch to PATH atomically (prometheus)"
    )
    parser.add_argument("--output", choices=("stdout", "influxdb"), help="where batches go")
    parser.add_argument("--url", help="InfluxDB URL (--output influxdb)")
    parser.add_argument("--org", help="InfluxDB organization")
    parser.add_argument("--bucket", help='InfluxDB bucket (1.8: "db/rp")')
    parser.add_argument("--token-file", metavar="FILE", help="InfluxDB token (else INFLUX_TOKEN)")
    parser.add_argument("--debug", action="store_true", default=None, help="log D! lines")
    parser.add_argument("--sample-config", action="store_true", help="print a commented config")
    parser.add_argument("--version", action="version", version=f"diskprobe {__version__}")
    return parser


def _load(args: argparse.Namespace) -> AgentConfig:
    config = load_config(args.config) if args.config else AgentConfig()
    interval = None
    if args.interval is not None:
        try:
            interval = parse_duration(args.interval)
        except ValueError as error:
            raise ConfigError(f"--interval: {error}") from None
        if interval <= 0:
            raise ConfigError("--interval must be longer than zero")
    elif args.once:
        interval = ONCE_DEFAULT_INTERVAL
    elif (args.format or config.format) == "collectd" and config.interval == AgentConfig.interval:
        interval = collectd_interval(os.environ)  # collectd's Interval replaces the 10s default
    flags = {"kind": args.output, "url": args.url, "org": args.org, "bucket": args.bucket,
             "token_file": args.token_file}  # fmt: skip
    output = dataclasses.replace(config.output, **{k: v for k, v in flags.items() if v is not None})
    if output.kind == "influxdb":
        validate_influxdb(output)
        if (args.format or config.format) != "influx" or (args.textfile or config.textfile):
            raise ConfigError('[output] kind = "influxdb" needs format = "influx" and no textfile')
    return with_overrides(
        config,
        output=output,
        interval=interval,
        trigger=args.trigger,
        format=args.format,
        debug=args.debug,
        textfile=args.textfile,
    )


def build_collectors(
    config: AgentConfig, roots: HostRoots, log: Logger, state: StateStore, once: bool = False
) -> list[Collector]:
    collectors: list[Collector] = []
    if config.io.enabled:
        collectors.append(IoCollector(config.io, roots, log))
    if config.filesystems.enabled:
        collectors.append(FilesystemsCollector(config.filesystems, roots, log, state))
    if config.smart.enabled:
        collectors.append(SmartCollector(config.smart, log, state, blocking=once, roots=roots))
    if config.pressure.enabled:
        collectors.append(PressureCollector(config.pressure, roots, log))
    if config.process_io.enabled:
        collectors.append(ProcessIoCollector(config.process_io, roots, log))
    if config.cgroup_io.enabled:
        collectors.append(CgroupIoCollector(config.cgroup_io, roots, log))
    return collectors


def _install_signal_handlers(runtime: Runtime) -> None:
    def _stop(_signum: int, _frame: object) -> None:
        runtime.events.put(STOP)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)


def _silence_stdout() -> None:
    # After EPIPE the interpreter's final flush of stdout would fail again: point it at /dev/null.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def _output(config: AgentConfig, log: Logger) -> Output:
    if config.output.kind == "influxdb":
        return InfluxDBOutput(config.output, log)
    return TextfileOutput(config.textfile) if config.textfile else StreamOutput(sys.stdout.buffer)


def stdin_is_a_channel() -> bool:
    """Telegraf's execd gives a pipe whose EOF means "stop"; /dev/null (systemd) or a closed
    stdin means nothing, and is not watched. collectd's exec gives a pipe already at EOF:
    run() does not watch it under --format collectd (collectd stops its children by SIGTERM)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return not stat.S_ISCHR(mode) or sys.stdin.isatty()


def run(config: AgentConfig, once: bool, log: Logger) -> int:
    roots = HostRoots.from_env(os.environ)
    state = StateStore(config.state_file, log, config.state_save_interval)
    output = _output(config, log)
    collectors = build_collectors(config, roots, log, state, once)
    if isinstance(output, InfluxDBOutput):
        collectors.append(OutputStatsCollector(output))
    runtime = Runtime(
        collectors,
        make_serializer(
            config.format,
            env=os.environ,
            interval=config.interval,
            slowest_interval=config.smart.interval if config.smart.enabled else 0.0,
        ),
        output,
        log,
        config.interval,
        state,
    )
    try:
        runtime.prime()
        # Start-up objects live forever: keep them out of the collector's scans, and let
        # the thousands of short-lived dicts of a big batch die young without a scan each.
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        if once:
            time.sleep(config.interval)
            runtime.emit(runtime.gather())
            return 0
        _install_signal_handlers(runtime)
        if config.format != "collectd" and stdin_is_a_channel():
            watch_stdin(sys.stdin, runtime.events)
        log.info(
            f"diskprobe {__version__} started: trigger={config.trigger} "
            f"interval={config.interval:g}s"
        )
        if config.trigger == "stdin":
            runtime.run_stdin()
        else:
            runtime.run_interval()
        return 0
    finally:
        runtime.close()
        output.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = Logger()
    if args.sample_config:
        sys.stdout.write(render_sample_config())
        return 0
    try:
        config = _load(args)
    except ConfigError as error:
        log.error(f"config: {error}")
        return 2
    log.debug_enabled = config.debug
    if args.command == "doctor":
        from diskprobe.doctor import run_doctor

        return run_doctor(config, args.config or "built-in defaults", sys.stdout,
                          lambda: Logger(debug=config.debug))  # fmt: skip
    try:
        return run(config, args.once, log)
    except OutputClosed:
        _silence_stdout()
        return 0
    except ConfigError as error:  # found while opening the output: token file, spool lock
        log.error(f"config: {error}")
        return 2
    except KeyboardInterrupt:
        return 0
