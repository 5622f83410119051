"""`diskprobe sudoers`: a sudoers file with the exact command lines this host's diskprobe runs.

A `*` in a sudoers command matches any characters, spaces included, so a wildcard line lets
extra options through (`-s off`, `-t long`, `--set=standby,now`, `-B FILE`), and regular
expressions need sudo >= 1.9.10. Exact, wildcard-free lines mean the same thing to every
sudo: one line per drive and call shape (the JSON read, the text read, nvme-cli's smart-log),
for the drives of `[smart] devices` or, when that is empty, what `smartctl --scan-open` finds
now (so it runs as root). Re-run it when drives change: diskprobe says so (one W! per drive)
when sudo refuses a read.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from typing import Sequence, TextIO

from diskprobe import __version__
from diskprobe.collectors.latency import SCRIPT
from diskprobe.config import LatencyConfig, SmartConfig
from diskprobe.files import root_only_problem
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.smart import nvme_cli
from diskprobe.smart.devices import DriveSpec, rule_problem, scan_specs
from diskprobe.smart.reader import json_args, text_args
from diskprobe.smart.runner import CommandRunner

DEFAULT_USERS = ("telegraf",)
SBIN = "/usr/sbin"  # where Debian, Ubuntu and RHEL install smartctl and nvme
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# Characters a command-line word may hold here; `,` `:` `=` are escaped, anything else
# (blanks, `*?[]` wildcards, `\`, `#`, quotes) is refused rather than escaped.
_WORD = re.compile(r"[A-Za-z0-9/._+,:=@%-]+")
# Control characters (ESC, BEL, newline...): what other output escapes as %XX (log lines,
# doctor, diagnose) is refused here, never escaped: a rule for the escaped name would allow
# another file, and a rule names a command exactly or not at all.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

HEADER = """\
## diskprobe {version}: sudoers for use_sudo = true ([smart], [latency]); by `diskprobe sudoers`.
## Exact command lines, no wildcards: sudo allows these and nothing else (no other option,
## device or program), on every sudo version. Re-run when drives change, then install:
##   diskprobe sudoers --config /etc/diskprobe/diskprobe.toml > /etc/sudoers.d/.diskprobe.new
##   visudo -cf /etc/sudoers.d/.diskprobe.new && chmod 0440 /etc/sudoers.d/.diskprobe.new &&
##     mv /etc/sudoers.d/.diskprobe.new /etc/sudoers.d/diskprobe
## (sudo skips files with a dot in their name, so the new file is inert until the mv).
"""


def program_path(program: str) -> str:
    """The full path sudo compares: as found on PATH (or /usr/sbin), else as configured."""
    found = shutil.which(program) or shutil.which(program, path=f"{SBIN}:/sbin")
    return found or (program if os.path.isabs(program) else os.path.join(SBIN, program))


def word_problem(word: str) -> str:
    """Why no sudoers line can match `word` exactly ("" when one can)."""
    if _CONTROL.search(word):
        return f"{word!r} holds a control character: refused, not escaped"
    if not _WORD.fullmatch(word):
        return f"{word!r} holds characters a sudoers line cannot match exactly"
    return ""


def sudoers_word(word: str) -> str:
    """One argument as a literal sudoers word; ValueError where none can say it exactly."""
    problem = word_problem(word)
    if problem:
        raise ValueError(problem)
    return re.sub(r"([,:=])", r"\\\1", word)


def command_lines(config: SmartConfig, specs: list[DriveSpec], with_smartctl: bool,
                  with_scan: bool) -> tuple[list[list[str]], list[list[str]]]:  # fmt: skip
    """(smartctl argvs, nvme argvs) the collector runs for these drives, built by its code."""
    smartctl, nvme = program_path(config.smartctl_path), program_path(config.nvme_path)
    smartctl_lines = [[smartctl, "--version"]] if with_smartctl else []
    if with_smartctl and with_scan:
        smartctl_lines.append([smartctl, "--scan-open"])
    nvme_lines = []
    for spec in specs:
        if nvme_cli.is_nvme(spec) and (config.nvme_source == "nvme-cli" or not with_smartctl):
            nvme_lines.append([nvme, *nvme_cli.smart_log_args(spec)])
        elif with_smartctl:
            smartctl_lines.append([smartctl, *json_args(spec, config.nocheck)])
            smartctl_lines.append([smartctl, *text_args(spec, config.nocheck)])
    return smartctl_lines, nvme_lines


def render(users: list[str], smartctl: list[list[str]], nvme: list[list[str]],
           bpftrace: Sequence[list[str]] = ()) -> str:  # fmt: skip
    """The sudoers text; lines sudo cannot match exactly must be left out beforehand."""
    aliases = [(name, lines) for name, lines in
               (("DISKPROBE_SMARTCTL", smartctl), ("DISKPROBE_NVME", nvme),
                ("DISKPROBE_BPFTRACE", list(bpftrace))) if lines]  # fmt: skip
    text = HEADER.format(version=__version__)
    for name, lines in aliases:
        commands = [" ".join(sudoers_word(word) for word in line) for line in lines]
        text += f"\nCmnd_Alias {name} = " + ", \\\n    ".join(commands) + "\n"
    if not aliases:
        return text + "\n## No command to allow: smartctl and nvme-cli are not installed.\n"
    names = ", ".join(name for name, _ in aliases)
    text += "\n## diskprobe runs sudo without a terminal (RHEL's sudoers used to require one).\n"
    for user in users:
        text += f"Defaults:{user} !requiretty\n{user} ALL = (root) NOPASSWD: {names}\n"
    return text


def discover(config: SmartConfig, runner: CommandRunner, log: Logger,
             roots: HostRoots) -> list[DriveSpec] | None:  # fmt: skip
    """The drives the collector would read; None when the scan could not run."""
    refused: list[str] = []
    if config.devices:
        specs = []
        for text in config.devices:
            try:
                specs.append(DriveSpec.parse(text))
            except ValueError as error:
                refused.append(str(error))
    elif runner.resolved() is None:
        specs = nvme_cli.discover(roots)
    else:
        result = runner.run(["--scan-open"])
        if result.exit_status is None or "Permission denied" in result.stdout + result.stderr:
            why = result.error or result.stderr.strip() or result.stdout.strip()
            log.error(f"sudoers: `{runner.program} --scan-open` failed (run this as root): {why}")
            return None
        specs, refused = scan_specs(result.stdout)
    # Again here, however the specs came: a rule lets the agent's user run root's smartctl on
    # that path, so it must be a drive's device node that user cannot replace, reached by no
    # descriptor of whoever opens it (/dev/stdin, /dev/fd/N): devices.rule_problem.
    refused += [problem for problem in map(rule_problem, specs) if problem]
    specs = [spec for spec in specs if not rule_problem(spec)]
    for reason in refused:
        log.warn(f"sudoers: refused drive name: {reason}")
    return [s for s in specs if not any(fnmatch.fnmatchcase(s.path, g) for g in config.exclude)]


def exact_only(lines: list[list[str]], log: Logger) -> list[list[str]]:
    """Drop lines holding a word no sudoers line can match exactly, with one W! per such
    word, however many lines it is in (a program's path is in every one of its lines)."""
    kept: list[list[str]] = []
    refused: dict[str, int] = {}  # why -> lines left out
    for line in lines:
        problem = next(filter(None, map(word_problem, line)), "")
        if problem:
            refused[problem] = refused.get(problem, 0) + 1
        else:
            kept.append(line)
    for problem, count in refused.items():
        log.warn(f"sudoers: left out {count} command line(s): {problem}")
    return kept


def bpftrace_lines(latency: LatencyConfig | None, log: Logger) -> list[list[str]]:
    """[latency]'s one command (exactly `bpftrace -f json <script>`: no -e, no other option,
    as bpftrace can read kernel memory), when enabled and the script is root's alone."""
    if latency is None or not latency.enabled:
        return []
    argv = [program_path(latency.bpftrace_path), "-f", "json", str(SCRIPT)]
    problem = root_only_problem(str(SCRIPT))
    if problem:
        log.warn(f"sudoers: left out bpftrace: its script must be root's alone: {problem}")
        return []
    return [argv]


def run_sudoers(config: SmartConfig, users: list[str], out: TextIO, log: Logger,
                latency: LatencyConfig | None = None) -> int:  # fmt: skip
    """Print the sudoers file; 2 for a bad user name, 1 when the drives could not be found."""
    bad = [user for user in users if not _USER.fullmatch(user)]
    if bad:
        log.error(f"sudoers: not a user name: {', '.join(map(repr, bad))}")
        return 2
    runner = CommandRunner(config.smartctl_path, config.timeout)  # as root: no sudo here
    specs = discover(config, runner, log, HostRoots.from_env(os.environ))
    if specs is None:
        return 1
    with_smartctl = runner.resolved() is not None
    smartctl, nvme = command_lines(config, specs, with_smartctl, not config.devices)
    out.write(render(users, exact_only(smartctl, log), exact_only(nvme, log),
                     exact_only(bpftrace_lines(latency, log), log)))
    return 0
