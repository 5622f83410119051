"""diskprobe_smart: drive health read on its own slow cadence, in worker threads.

The collector ticks with the agent but reads drives only every `[smart] interval`: a read
cycle (discovery when due, then one smartctl per drive, `concurrency` at a time) runs in the
background, and each drive's point is emitted at the first tick after its read finished.
So neither a slow drive nor a hung controller delays the I/O and filesystem collectors.
"""

from __future__ import annotations

import fnmatch
import threading
import time
from concurrent.futures import Future
from typing import Callable

from diskprobe.collectors.base import Collection
from diskprobe.config import SmartConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.smart import json_parser, nvme_cli
from diskprobe.smart.devices import DriveSpec, scan_specs
from diskprobe.smart.memory import DriveMemory
from diskprobe.smart.metrics import attribute_metrics, has_health_data, smart_metric
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.reader import DriveRead, read_json, smartctl_version, sudo_refused
from diskprobe.smart.runner import CommandRunner
from diskprobe.smart.verdict import judge, merge_thresholds
from diskprobe.smart.workers import DaemonPool
from diskprobe.state import StateStore

PERMISSION_HELP = (
    "run diskprobe as root, or set [smart] use_sudo = true and install the sudoers file "
    "`diskprobe sudoers` prints (run as root; telegraf/sudoers.d/diskprobe), or give a "
    "dedicated smartctl copy the capabilities: setcap "
    "cap_sys_rawio,cap_sys_admin,cap_dac_read_search+ep {smartctl}; in a container: "
    "--device /dev/sdX --cap-add SYS_RAWIO --cap-add SYS_ADMIN"
)

SUDOERS_HELP = (
    "sudo refused {what}: the sudoers file has no line for it (a drive added since it was "
    "written?). Re-run `diskprobe sudoers` as root and install its output (visudo -c first; "
    "see telegraf/sudoers.d/diskprobe)"
)


class SmartCollector:
    name = "smart"
    interval: float | None = None  # ticks with the agent; drives are read every config.interval
    needs_prime = False

    def __init__(
        self,
        config: SmartConfig,
        log: Logger,
        state: StateStore,
        runner: CommandRunner | None = None,
        blocking: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
        roots: HostRoots | None = None,
        nvme_runner: CommandRunner | None = None,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.config = config
        self._log = log
        self._wall_ns = wall_ns
        self._scan_errors = 0  # discovery problems, counted into the next batch
        self._runner = runner or CommandRunner(
            config.smartctl_path, config.timeout, config.use_sudo
        )
        self._nvme = nvme_runner or CommandRunner(config.nvme_path, config.timeout, config.use_sudo)
        self._roots = roots or HostRoots()
        self._blocking = blocking  # --once: wait for the reads instead of a later tick
        self._monotonic = monotonic
        self._thresholds = merge_thresholds(config.thresholds)
        self._memory = DriveMemory(state)
        # Daemon threads: a read in flight never holds up diskprobe's exit.
        self._pool = DaemonPool(config.concurrency, "smart-read")
        self._cycle_pool = DaemonPool(1, "smart-cycle")
        self._lock = threading.Lock()
        self._reads: list[Future[DriveRead]] = []
        self._cycle: Future[None] | None = None
        self._next_read = 0.0
        self._specs: list[DriveSpec] = []
        self._next_scan = 0.0
        self._json: bool | None = None  # smartctl >= 7.0, learned once

    # -- scheduling (main thread) -------------------------------------------------------------

    def collect(self) -> Collection:
        now = self._monotonic()
        if now >= self._next_read and (self._cycle is None or self._cycle.done()):
            self._next_read = now + self.config.interval
            self._cycle = self._cycle_pool.submit(self._run_cycle)
            if self._blocking:
                self._cycle.result()
        collection = Collection()
        with self._lock:
            collection.errors, self._scan_errors = self._scan_errors, 0
        for read in self._finished():
            self._emit(read, collection)
        calls, failures = self._runner.stats.take()
        nvme_calls, nvme_failures = self._nvme.stats.take()
        collection.agent_fields = {
            "exec_calls": calls + nvme_calls,
            "exec_failures": failures + nvme_failures,
        }
        collection.items = len(self._specs)
        return collection

    def _finished(self) -> list[DriveRead]:
        with self._lock:
            if self._blocking:
                pending = list(self._reads)
                for future in pending:
                    future.exception()  # waits
            done = [future for future in self._reads if future.done()]
            self._reads = [future for future in self._reads if not future.done()]
        return [future.result() for future in done]

    def close(self) -> None:
        """Kill the children in flight (their process groups) and drop queued reads."""
        self._runner.close()
        self._nvme.close()
        self._pool.shutdown()
        self._cycle_pool.shutdown()

    # -- the read cycle (background threads) ----------------------------------------------------

    def _run_cycle(self) -> None:
        missing = self._runner.resolved() is None
        if not missing and self._json is None:
            version = smartctl_version(self._runner)
            self._json = version is None or version >= (7, 0)
        specs = self._discover()
        if missing:
            # One W! (in _scan), not one per configured drive every interval.
            self._smartctl_missing()
            specs = [s for s in specs if nvme_cli.is_nvme(s) and self._nvme.resolved()]
        with self._lock:
            self._reads += [self._pool.submit(self._read, spec) for spec in specs]

    def _discover(self) -> list[DriveSpec]:
        if self.config.devices:
            specs = self._configured()
        elif self._monotonic() >= self._next_scan:
            self._next_scan = self._monotonic() + self.config.rescan
            specs = self._scan()
        else:
            specs = self._specs
        specs = [
            s for s in specs if not any(fnmatch.fnmatchcase(s.path, g) for g in self.config.exclude)
        ]
        self._specs = specs
        return specs

    def _configured(self) -> list[DriveSpec]:
        specs = []
        for text in self.config.devices:  # validated at load; this guards other callers
            try:
                specs.append(DriveSpec.parse(text))
            except ValueError as error:
                self._refused(str(error))
        return specs

    def _refused(self, reason: str) -> None:
        """One W! per refused drive name: it would reach smartctl's command line."""
        self._log.warn_once(f"smart-refused:{reason}", f"smart: refused drive name: {reason}")

    def _smartctl_missing(self) -> None:
        if self._nvme.resolved() is not None:
            self._log.warn_once(
                "smart-missing",
                f"smart: {self._runner.program} not found; reading NVMe controllers with "
                f"{self._nvme.program} only (install smartmontools for SATA and SAS drives)",
            )
        else:
            self._log.warn_once(
                "smart-missing",
                f"smart: {self._runner.program} not found; install smartmontools "
                "(SMART collection is idle until then)",
            )

    def _scan(self) -> list[DriveSpec]:
        if self._runner.resolved() is None:
            return nvme_cli.discover(self._roots) if self._nvme.resolved() else []
        result = self._runner.run(["--scan-open"])
        denied = sudo_refused(result)
        if denied:
            self._log.warn_once("smart-sudo:scan", "smart: " + SUDOERS_HELP.format(
                what=f"`{self._runner.program} --scan-open`"))  # fmt: skip
        elif "Permission denied" in result.stdout + result.stderr:
            self._warn_permission()
        if denied or "Permission denied" in result.stdout + result.stderr:
            with self._lock:
                self._scan_errors += 1
        specs, refused = scan_specs(result.stdout)
        for reason in refused:
            self._refused(reason)
        return specs

    def _read(self, spec: DriveSpec) -> DriveRead:
        try:
            if nvme_cli.is_nvme(spec) and (
                self.config.nvme_source == "nvme-cli" or self._runner.resolved() is None
            ):
                return nvme_cli.read_nvme_cli(spec, self._nvme, self._roots)
            if self._json is not False:
                try:
                    return read_json(spec, self._runner, self.config.nocheck)
                except json_parser.NotSmartctlJson as error:
                    if self._json:  # a JSON-capable smartctl: this drive's output is bad
                        health = DriveHealth(device=spec.tag, exit_status=-1)
                        return DriveRead(spec, health, f"unreadable smartctl output: {error}")
                    self._json = False  # this smartctl answers in text: use that from now on
                    self._log.info("smart: smartctl gave no JSON; using the text parser")
            # Imported here: pySMART (and chardet) load only when a drive needs the text path.
            from diskprobe.smart.text_path import read_text

            return read_text(spec, self._runner, self.config.nocheck)
        except Exception as error:  # one drive's surprise never loses the others
            health = DriveHealth(device=spec.tag, exit_status=-1)
            return DriveRead(spec, health, f"{type(error).__name__}: {error}")

    # -- results (main thread) ------------------------------------------------------------------

    def _warn_permission(self, runner: CommandRunner | None = None) -> None:
        runner = runner or self._runner  # the nvme runner for an nvme-cli read
        self._log.warn_once(
            f"smart-permission:{runner.program}",
            "smart: no permission to read SMART data: "
            + PERMISSION_HELP.format(smartctl=runner.resolved() or runner.program),
        )

    def _emit(self, read: DriveRead, collection: Collection) -> None:
        health, time_ns = read.health, self._wall_ns()
        if read.problem:
            collection.errors += 1
            if read.sudo_refused:
                self._log.warn_once(f"smart-sudo:{read.spec}", "smart: " + SUDOERS_HELP.format(
                    what=f"the read of {read.spec}"))  # fmt: skip
            elif read.permission:
                nvme = read.health.source == nvme_cli.SOURCE
                self._warn_permission(self._nvme if nvme else self._runner)
            else:
                self._log.warn_once(f"smart-problem:{read.spec}:{read.problem}",
                                    f"smart: {read.spec}: {read.problem}")  # fmt: skip
            if read.vanished:
                self._next_scan = 0.0
        if health.unusable:  # NaN/Infinity in the output: those fields only are left out
            message = f"smart: {read.spec}: not numbers, left out: {', '.join(health.unusable)}"
            self._log.warn_once(f"smart-unusable:{read.spec}", message)
        self._memory.remember_identity(health)
        if read.problem or health.standby or not has_health_data(health):
            metric = smart_metric(health, {}, {}, None, time_ns)
            if read.problem:
                metric.fields.pop("power_mode")  # unknown: the read failed
            collection.metrics.append(metric)
            return
        values = dict(health.counters)
        life = json_parser.life_left_percent(health)
        if life is not None:
            values["ssd_life_left_percent"] = life
        increases = self._memory.increases(health)
        verdict = judge(health, values, increases, self._thresholds)
        collection.metrics.append(smart_metric(health, values, increases, verdict, time_ns))
        if self.config.attributes:
            collection.metrics += attribute_metrics(health, time_ns)
