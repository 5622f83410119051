"""The diagnosis as JSON (a dict) and as text: the verdict, the sentence, the evidence, advice.

The text is for a terminal: every name from the system or the job in it (the cgroup, paths,
device, mount point, filesystem type, process names) is written with readable_text() (a
control character as %XX, `%` as `%25`), so none can send the terminal a sequence or forge
a line; the report's own words are not escaped. Whatever else reaches a line (a note) passes
log.terminal_safe(). The JSON keeps the names as they are (json escapes control characters).
"""

from __future__ import annotations

import copy
from typing import Any

from diskprobe.compute.bottleneck import Counts, Shares, Verdict
from diskprobe.log import terminal_safe
from diskprobe.serializers.text import readable_text

IO_VERDICTS = ("disk", "checkpoint", "throttled", "remote_fs")


def shares_dict(shares: Shares) -> dict[str, float]:
    return {"running": round(shares.running, 3), "io_wait": round(shares.io_wait, 3),
            "sleeping": round(shares.sleeping, 3), "blocked": round(shares.blocked, 3)}  # fmt: skip


def active_io_share(counts: Counts) -> float:
    """Of the time the tasks ran or waited on files, the part they waited."""
    active = counts.io + counts.running + counts.accelerator
    return counts.io / active if active else 0.0


def sentence(verdict: Verdict, report: dict[str, Any]) -> str:
    """One paragraph, as an engineer would say it, from the JSON report's own fields."""
    kind, figures = verdict.bottleneck, report.get("device_iostat") or {}
    main = report["main"]["shares"]
    if kind in IO_VERDICTS:
        where = _where(report)
        who = ("its main thread spends", "its") if verdict.waiters == "main" else (
            "its workers spend", "their")  # fmt: skip
        share = report["waiters_io_share"]
        verb = "writes to" if verdict.direction == "write" else "reads from"
        text = f"{where}, which the job {verb}; {who[0]} {share:.0%} of {who[1]} active time "
        text += "waiting on it"
        if figures:
            text += f"; {_device_state(figures, verdict.direction or 'read')}"
        if kind == "throttled":
            throttle = report["throttle"]
            text += (f"; the cgroup {throttle['cgroup']} limits {throttle['limit']} to "
                     f"{throttle['value']} and the job reaches {throttle['reached']:.0%} of it")
        if verdict.waiters == "workers":
            waits = main["sleeping"] + main["blocked"]
            text += f"; the main thread waits for input {waits:.0%} of the time"
        return text + f": {CONCLUSION[kind]}."
    if kind == "input_cpu":
        return (f"the main thread waits for input {main['sleeping'] + main['blocked']:.0%} of the "
                f"time while the workers run on the CPU ({report['workers']['running']:.2f} "
                f"threads busy, {report['workers']['io_wait']:.2f} waiting on files): "
                f"{CONCLUSION[kind]}.")  # fmt: skip
    if kind == "compute":
        return (f"the main thread runs {main['running']:.0%} of the time and waits on files "
                f"{main['io_wait']:.0%}: {CONCLUSION[kind]}.")  # fmt: skip
    return f"{'; '.join(verdict.reasons)}: {CONCLUSION[kind]}."


CONCLUSION = {
    "disk": "the job is disk-bound",
    "checkpoint": "the job is bound by its checkpoint writes",
    "throttled": "the job is held back by its cgroup's I/O limit",
    "remote_fs": "the job waits on a remote or FUSE filesystem",
    "input_cpu": "the job is bound by its input pipeline's CPU work",
    "compute": "the job is compute-bound; the disk is not what holds it",
    "idle": "the job is idle",
    "unknown": "diagnose cannot tell what the job is bound by",
}


def _where(report: dict[str, Any]) -> str:
    mount, device = report.get("mount_point"), report.get("device")
    if report.get("remote"):
        return f"{mount} ({report.get('fstype') or 'remote'}) has no local block device"
    if device and mount:
        return f"{device} holds {mount}"
    return f"{device or 'an unknown device'}"


def _device_state(figures: dict[str, Any], direction: str) -> str:
    util = float(figures.get("util_percent", 0.0))
    state = "saturated" if util >= 90 else "busy" if util >= 50 else "not saturated"
    key = "read_await_ms" if direction == "read" else "write_await_ms"
    now, usual = float(figures.get(key, 0.0)), float(figures.get(f"{key}_since_boot", 0.0))
    short = "r_await" if direction == "read" else "w_await"
    return (f"the device is {state} (util {util:.1f} %, {short} {now:.2f} ms; "
            f"{usual:.2f} ms on average since boot)")


def shown_report(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of the report whose names from the system or the job are readable_text(), and
    whose sentence is said again from them."""
    shown = copy.deepcopy(report)
    kind, _, name = shown["target"].partition(" ")
    shown["target"] = f"{kind} {readable_text(name)}"
    for key in ("device", "mount_point", "fstype"):
        if shown.get(key):
            shown[key] = readable_text(shown[key])
    shown["paths"] = [readable_text(path) for path in shown.get("paths") or []]
    if shown.get("throttle"):
        shown["throttle"]["cgroup"] = readable_text(shown["throttle"]["cgroup"])
    names = {f"({p['comm']})": f"({readable_text(p['comm'])})" for p in shown["processes"]}
    shown["reasons"] = [_named(reason, names) for reason in shown["reasons"]]
    shown["notes"] = [_named(note, names) for note in shown["notes"]]
    for process in shown["processes"]:
        process["comm"] = readable_text(process["comm"][:16])  # cut before it is escaped
    verdict = Verdict(shown["bottleneck"], shown["reasons"], None, shown.get("direction"),
                      shown.get("waiters"))  # fmt: skip
    shown["sentence"] = sentence(verdict, shown)
    return shown


def _named(reason: str, names: dict[str, str]) -> str:
    """A reason or note that names a process ("process 42 (python) ended ..."), its name
    escaped."""
    for raw, shown in names.items():
        reason = reason.replace(raw, shown)
    return reason


def render_text(report: dict[str, Any]) -> str:
    """The report for a terminal, from the JSON report as build_report made it (names not
    yet escaped)."""
    report = shown_report(report)
    lines = [f"diskprobe diagnose: {report['target']}, {report['seconds']:.1f} s, "
             f"{report['samples']} samples", f"bottleneck: {report['bottleneck']}",
             report["sentence"], "why:"]  # fmt: skip
    lines += [f"  - {reason}" for reason in report["reasons"]]
    if report.get("paths"):
        lines.append("files waited on: " + ", ".join(report["paths"]))
    if report.get("device_latency"):
        found = report["device_latency"]
        lines.append(f"latency on {report['device']} over the watch ({found['requests']} "
                     f"requests): p50 {found['p50_ms']:.2f} ms, p99 {found['p99_ms']:.2f} ms, "
                     f"max {found['max_ms']:.2f} ms")  # fmt: skip
    lines.append("processes (share of the main thread's time; cpu in cores):")
    for process in report["processes"]:
        shares = process["shares"]
        lines.append(f"  {process['pid']:>7} {process['role']:<6} {process['comm']:<16} "
                     f"run {shares['running']:4.0%} io {shares['io_wait']:4.0%} "
                     f"sleep {shares['sleeping']:4.0%} blocked {shares['blocked']:4.0%} "
                     f"cpu {process['cpu_cores']:.2f} threads {process['threads']}")  # fmt: skip
    for note in report["notes"]:
        lines.append(f"note: {note}")
    lines.append(f"advice: {report['advice']}")
    return "".join(terminal_safe(line) + "\n" for line in lines)
