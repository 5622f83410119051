"""diskprobe_smart: drive health read on its own slow cadence, in worker threads.

The collector ticks with the agent but reads drives only every `[smart] interval`: a read
cycle (discovery when due, then one smartctl per drive, `concurrency` at a time) runs in the
background, and each drive's point is emitted at the first tick after its read finished.
So neither a slow drive nor a hung controller delays the I/O and filesystem collectors.
"""

from __future__ import annotations

import fnmatch
import threading
from concurrent.futures import Future

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.collectors.smart_reads import PERMISSION_HELP, DriveReader
from diskprobe.config import SmartConfig
from diskprobe.smart import json_parser, nvme_cli
from diskprobe.smart.afr import load_afr_table
from diskprobe.smart.devices import DriveSpec, scan_specs
from diskprobe.smart.memory import DriveMemory
from diskprobe.smart.metrics import Judged, attribute_metrics, has_health_data, smart_metric
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.reader import DriveRead, sudo_refused
from diskprobe.smart.runner import CommandRunner
from diskprobe.smart.verdict import Evidence, VerdictRules, judge, merge_thresholds
from diskprobe.smart.workers import DaemonPool

__all__ = ["PERMISSION_HELP", "SmartCollector"]  # PERMISSION_HELP: `diskprobe doctor` says it

NO_DRIVES = (
    "smart: no drives found (smartctl --scan-open lists none: virtual disks such as virtio, "
    "Xen or VMware ones have no SMART), so no diskprobe_smart points; `diskprobe doctor` "
    "shows what smartctl sees, and [smart] enabled = false stops the scans"
)


class SmartCollector(BaseCollector[SmartConfig]):
    name = "smart"
    needs_prime = False

    def __init__(
        self,
        config: SmartConfig,
        context: CollectorContext,
        *,
        runner: CommandRunner | None = None,
        nvme_runner: CommandRunner | None = None,
        blocking: bool = False,
    ) -> None:
        super().__init__(config, context)
        self.interval = None  # ticks with the agent; drives are read every config.interval
        self._scan_errors = 0  # discovery problems, counted into the next batch
        self._runner = runner or CommandRunner(
            config.smartctl_path, config.timeout, config.use_sudo
        )
        self._nvme = nvme_runner or CommandRunner(config.nvme_path, config.timeout, config.use_sudo)
        self._reader = DriveReader(config, self._log, self._roots, self._runner, self._nvme)
        self._blocking = blocking  # --once: wait for the reads instead of a later tick
        self._rules = VerdictRules(
            merge_thresholds(config.thresholds), config.afr_warn_multiple, config.afr_fail_percent
        )
        self._afr = load_afr_table()
        self._memory = DriveMemory(context.state_store())
        # Daemon threads: a read in flight never holds up diskprobe's exit.
        self._pool = DaemonPool(config.concurrency, "smart-read")
        self._cycle_pool = DaemonPool(1, "smart-cycle")
        self._lock = threading.Lock()
        self._reads: list[Future[DriveRead]] = []
        # Its own lock: a read's done-callback takes it in a pool thread, while the main
        # thread may hold _lock waiting for that very read (--once).
        self._flight_lock = threading.Lock()
        self._in_flight: set[str] = set()  # drives whose read runs (or waits): one at a time
        self._skipped = 0  # reads not started for that, counted into the next batch
        self._cycle: Future[None] | None = None
        self._next_read = 0.0
        self._specs: list[DriveSpec] = []
        self._next_scan = 0.0

    # -- scheduling (main thread) -------------------------------------------------------------

    def collect(self) -> Collection:
        now = self._clock.monotonic()
        if now >= self._next_read and (self._cycle is None or self._cycle.done()):
            self._next_read = now + self.config.interval
            self._cycle = self._cycle_pool.submit(self._run_cycle)
            if self._blocking:
                self._cycle.result()
        collection = Collection()
        with self._lock:
            collection.errors, self._scan_errors = self._scan_errors, 0
        with self._flight_lock:
            skipped, self._skipped = self._skipped, 0
        for read in self._finished():
            self._emit(read, collection)
        calls, failures = self._runner.stats.take()
        nvme_calls, nvme_failures = self._nvme.stats.take()
        collection.agent_fields = {
            "exec_calls": calls + nvme_calls,
            "exec_failures": failures + nvme_failures,
            "reads_skipped": skipped,
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
        if not missing:
            self._reader.learn_format()
        specs = self._discover()
        if missing:
            # One W! (in _scan), not one per configured drive every interval.
            self._smartctl_missing()
            specs = [s for s in specs if nvme_cli.is_nvme(s) and self._nvme.resolved()]
        with self._lock:
            for spec in specs:
                self._submit(spec)

    def _submit(self, spec: DriveSpec) -> None:
        """One read per drive at a time (the caller holds _lock): a drive whose read still
        runs (hung, and `timeout` longer than the interval) is skipped, and counted, until it
        ends."""
        key = str(spec)
        with self._flight_lock:
            if key in self._in_flight:
                self._skipped += 1
                return
            self._in_flight.add(key)
        future = self._pool.submit(self._reader.read, spec)
        future.add_done_callback(lambda _: self._landed(key))  # now, if it is done already
        self._reads.append(future)

    def _landed(self, key: str) -> None:
        with self._flight_lock:
            self._in_flight.discard(key)

    def _discover(self) -> list[DriveSpec]:
        if self.config.devices:
            specs = self._configured()
        elif self._clock.monotonic() >= self._next_scan:
            self._next_scan = self._clock.monotonic() + self.config.rescan
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
            self._reader.warn_sudo("scan", f"`{self._runner.program} --scan-open`")
        elif "Permission denied" in result.stdout + result.stderr:
            self._reader.warn_permission()
        if denied or "Permission denied" in result.stdout + result.stderr:
            with self._lock:
                self._scan_errors += 1
        specs, refused = scan_specs(result.stdout)
        for reason in refused:
            self._refused(reason)
        if not specs and result.exit_status == 0:
            self._log.info_once("smart-none", NO_DRIVES)
        return specs

    # -- results (main thread) ------------------------------------------------------------------

    def _emit(self, read: DriveRead, collection: Collection) -> None:
        health, time_ns = read.health, self._clock.wall_ns()
        if read.problem:
            collection.errors += 1
            self._reader.note_problem(read)
            if read.vanished:
                self._next_scan = 0.0
        if health.unusable:  # NaN/Infinity in the output: those fields only are left out
            message = f"smart: {read.spec}: not numbers, left out: {', '.join(health.unusable)}"
            self._log.warn_once(f"smart-unusable:{read.spec}", message)
        self._memory.remember_identity(health)
        if read.problem or health.standby or not has_health_data(health):
            metric = smart_metric(health, None, time_ns)
            if read.problem:
                metric.fields.pop("power_mode")  # unknown: the read failed
            collection.metrics.append(metric)
            return
        judged = self._judge(health, time_ns)
        collection.metrics.append(smart_metric(health, judged, time_ns))
        if self.config.attributes:
            collection.metrics += attribute_metrics(health, time_ns, self._afr)

    def _judge(self, health: DriveHealth, time_ns: int) -> Judged:
        values = dict(health.counters)
        life = json_parser.life_left_percent(health)
        if life is not None:
            values["ssd_life_left_percent"] = life
        trend = self._memory.trend(health, time_ns / 1e9, self.config.growth_window)
        estimate = self._afr.estimate(health)
        baseline = self._afr.baseline(health.media) if estimate is not None else None
        evidence = Evidence(values, trend.increases, trend.last_day, estimate, baseline)
        return Judged(values, trend, judge(health, evidence, self._rules), estimate)
