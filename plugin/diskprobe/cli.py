"""Command line: `diskprobe` (execd loop), `--once`, `--sample-config`, overrides."""

from __future__ import annotations

import argparse
import gc
import os
import stat
import sys
import time
from typing import Sequence

from diskprobe import __version__
from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.output_stats import OutputStatsCollector
from diskprobe.collectors.registry import build_collectors
from diskprobe.config import AgentConfig, ConfigError, load_with_deprecations
from diskprobe.config.output import OUTPUT_KINDS
from diskprobe.config.sample import render_sample_config
from diskprobe.diagnose.command import DEFAULT_SECONDS, REPORT_FORMATS, run_diagnose
from diskprobe.lifecycle import install_signal_handlers, plug_closed_std_fds, stdout_problem
from diskprobe.log import Logger
from diskprobe.outputs import OutputClosed, OutputFailed, open_output
from diskprobe.outputs.influxdb import InfluxDBOutput
from diskprobe.roots import HostRoots
from diskprobe.runtime import STOP, Events, Runtime, watch_stdin
from diskprobe.serializers import FORMATS, make_serializer
from diskprobe.state import StateStore

ONCE_DEFAULT_INTERVAL = 1.0
DEFAULT_GC_THRESHOLD = (700, 10, 10)  # CPython's own; set again in case an embedder changed it


def build_parser() -> argparse.ArgumentParser:
    """The command line; the README's synopsis is generated from it (tests/update_generated.py)."""
    parser = argparse.ArgumentParser(
        prog="diskprobe",
        description="Disk I/O, filesystem and SMART probe for Telegraf execd / collectd exec.",
    )
    parser.add_argument(
        "command", nargs="?", choices=("doctor", "sudoers", "diagnose"),
        help="doctor: check the set-up and exit; sudoers: print the sudoers file for this host; "
        "diagnose: watch a job (--pid or --cgroup) and say what it is bound by",
    )  # fmt: skip
    parser.add_argument("--user", action="append", metavar="NAME",
                        help="sudoers: the agent's user (repeatable; default: telegraf)")
    parser.add_argument("--config", metavar="FILE", help="TOML configuration file")
    parser.add_argument("--once", action="store_true",
                        help="two samples one --interval apart (1s), one batch, exit 0")
    parser.add_argument("--interval", metavar="DURATION", help='e.g. "10s" (overrides config)')
    parser.add_argument("--trigger", choices=("interval", "stdin"), help="what starts a batch")
    parser.add_argument("--format", choices=(*FORMATS, *REPORT_FORMATS),
                        help="output format (default influx); diagnose: text (default) or json")
    # Not type=int: int() takes any script's digits ("٣" is 3); _diagnose() checks ASCII ones.
    parser.add_argument("--pid", metavar="PID",
                        help="diagnose: the job's process (its children too)")
    parser.add_argument("--cgroup", metavar="PATH", help="diagnose: every process of a cgroup")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS, metavar="N",
                        help=f"diagnose: how long to watch (default {DEFAULT_SECONDS:g})")
    parser.add_argument("--textfile", metavar="PATH",
                        help="--output textfile, written to PATH atomically (prometheus)")
    parser.add_argument("--output", choices=OUTPUT_KINDS, help="where batches go")
    parser.add_argument("--listen", metavar="ADDRESS:PORT",
                        help="serve /metrics there for Prometheus (--output http)")
    parser.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="TLS and basic auth for --listen (exporter toolkit format, as node_exporter; "
        "needs the web extra)",
    )
    parser.add_argument("--url", help="InfluxDB URL (--output influxdb)")
    parser.add_argument("--org", help="InfluxDB organization")
    parser.add_argument("--bucket", help='InfluxDB bucket (1.8: "db/rp")')
    parser.add_argument("--token-file", metavar="FILE", help="InfluxDB token (else INFLUX_TOKEN)")
    parser.add_argument("--debug", action="store_true", default=None, help="log D! lines")
    parser.add_argument("--sample-config", action="store_true", help="print a commented config")
    parser.add_argument("--version", action="version", version=f"diskprobe {__version__}",
                        help="print the version and exit")
    return parser


def _load(args: argparse.Namespace, log: Logger | None = None) -> AgentConfig:
    """The configuration: file, then flags, through the same checks (config/checks.py); an
    old spelling in the file is logged once, as W!, with what to write instead."""
    once = ONCE_DEFAULT_INTERVAL if args.once and args.interval is None else None
    # --textfile PATH is kind "textfile" and path PATH; set before --output, which wins if given
    textfile = "textfile" if args.textfile is not None else None
    # --listen is kind "http" serving the Prometheus format; an explicit --format still wins
    http, served = ("http", "prometheus") if args.listen is not None else (None, None)
    flags = [("--interval", "interval", args.interval), ("--once", "interval", once),
             ("--trigger", "trigger", args.trigger), ("--debug", "debug", args.debug),
             ("--listen", "output.format", served), ("--listen", "output.kind", http),
             ("--listen", "output.listen", args.listen),
             ("--web.config.file", "output.web_config_file", args.web_config_file),
             ("--format", "output.format", args.format), ("--textfile", "output.kind", textfile),
             ("--textfile", "output.path", args.textfile), ("--output", "output.kind", args.output),
             ("--url", "output.url", args.url), ("--org", "output.org", args.org),
             ("--bucket", "output.bucket", args.bucket),
             ("--token-file", "output.token_file", args.token_file)]  # fmt: skip
    loaded = load_with_deprecations(args.config, flags, os.environ)
    for deprecation in loaded.deprecations:
        (log or Logger()).warn(f"config: {deprecation}")
    return loaded.config


def _silence_stdout() -> None:
    # After EPIPE anything still bound for stdout would fail again: point it at /dev/null.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass


def freeze_startup_objects() -> None:
    """Start-up objects live forever: keep them out of the collector's scans. The
    thresholds stay Python's: a loop allocates about as much as it frees, so a raised gen-0
    threshold (50,000 was tried) is reached only after hours, and cyclic garbage (json's
    encoder closures, a caught exception with its frames) piled up until then, as RSS."""
    gc.freeze()
    gc.set_threshold(*DEFAULT_GC_THRESHOLD)


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
    events = Events()
    output = open_output(config.output, log, stopping=lambda: events.stopping)
    collectors = build_collectors(config, CollectorContext(roots=roots, log=log, state=state), once)
    if isinstance(output, InfluxDBOutput):
        collectors.append(OutputStatsCollector(output))
    runtime = Runtime(
        collectors,
        make_serializer(
            config.output.format,
            env=os.environ,
            interval=config.interval,
            slowest_interval=config.smart.interval if config.smart.enabled else 0.0,
        ),
        output,
        log,
        config.interval,
        state,
        events=events,
    )
    if not once:  # from here a stop request is served in order, with the state saved
        install_signal_handlers(events)
    try:
        runtime.prime()
        freeze_startup_objects()
        if once:
            time.sleep(config.interval)
            runtime.emit(runtime.gather())
            return 0
        if config.output.format != "collectd" and stdin_is_a_channel():
            watch_stdin(sys.stdin, runtime.events)
        log.info(
            f"diskprobe {__version__} started: trigger={config.trigger} "
            f"interval={config.interval:g}s"
        )
        if config.trigger == "stdin":
            runtime.run_stdin()
        else:
            runtime.run_interval()
        if events.why.get(STOP) == "SIGHUP":
            log.info("SIGHUP: saving the state and stopping (no in-place reload: "
                     "the supervisor's restart re-reads the config)")  # fmt: skip
        return 0
    finally:
        runtime.close()
        output.close()


def _diagnose(args: argparse.Namespace, log: Logger) -> int:
    """diagnose needs a target and no config; its formats are its own."""
    if args.command != "diagnose":
        log.error(f"config: --format {args.format} is for `diskprobe diagnose`")
        return 2
    if (args.pid is None) == (args.cgroup is None):
        log.error("diagnose: give one of --pid PID or --cgroup PATH")
        return 2
    if not 0.2 <= args.seconds <= 86400:
        log.error(f"diagnose: --seconds {args.seconds:g}: give 0.2 to 86400")
        return 2
    output_format = args.format or "text"
    if output_format not in REPORT_FORMATS:
        log.error(f"diagnose: --format {output_format}: give text or json")
        return 2
    if args.pid is not None and not (args.pid.isascii() and args.pid.isdigit()):
        log.error(f"diagnose: --pid {args.pid!r}: give a process id, in the digits 0-9")
        return 2
    pid = int(args.pid) if args.pid is not None else None
    return run_diagnose(pid, args.cgroup, args.seconds, output_format, sys.stdout, log)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    closed = plug_closed_std_fds()  # before anything opens a file that could become fd 1
    log = Logger()
    problem = stdout_problem(closed)
    if problem and (args.sample_config or args.command in ("doctor", "sudoers", "diagnose")):
        log.error(f"{problem}: nowhere to print to")
        return 1
    if args.sample_config:
        sys.stdout.write(render_sample_config())
        return 0
    if args.command == "diagnose" or args.format in REPORT_FORMATS:
        return _diagnose(args, log)
    try:
        config = _load(args, log)
    except ConfigError as error:
        log.error(f"config: {error}")
        return 2
    log.debug_enabled = config.debug
    if args.command == "doctor":
        from diskprobe.doctor import run_doctor

        return run_doctor(config, args.config or "built-in defaults", sys.stdout,
                          lambda: Logger(debug=config.debug))  # fmt: skip
    if args.command == "sudoers":
        from diskprobe.sudoers import DEFAULT_USERS, run_sudoers

        return run_sudoers(config.smart, args.user or list(DEFAULT_USERS), sys.stdout, log,
                           config.latency)
    if problem and config.output.kind == "stdout":
        log.error(f"{problem}: nowhere to write metrics; exiting")
        return 1
    try:
        return run(config, args.once, log)
    except OutputClosed:
        _silence_stdout()
        return 0
    except OutputFailed as error:  # /dev/full, EIO (terminal gone), ...: not a quiet EPIPE
        log.error(f"{error}; exiting")
        return 1
    except KeyboardInterrupt:
        return 0
