"""One drive's read for the SMART collector, and what it says when a read is refused.

`DriveReader.read` runs in the collector's worker threads: smartctl's JSON (>= 7.0), its
text output (older smartctl, learned once) or nvme-cli. The notes (`note_problem`,
`warn_permission`, `warn_sudo`) are one W! per drive and cause, with what to do about it.
"""

from __future__ import annotations

from diskprobe.config import SmartConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.smart import json_parser, nvme_cli
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.model import DriveHealth
from diskprobe.smart.reader import DriveRead, read_json, smartctl_version
from diskprobe.smart.runner import CommandRunner

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


class DriveReader:
    """Reads drives with smartctl (`runner`) or nvme-cli (`nvme`); remembers which output
    format this smartctl gives, so an old one is not asked for JSON every read."""

    def __init__(
        self,
        config: SmartConfig,
        log: Logger,
        roots: HostRoots,
        runner: CommandRunner,
        nvme: CommandRunner,
    ) -> None:
        self.config = config
        self.runner = runner
        self.nvme = nvme
        self._log = log
        self._roots = roots
        self._json: bool | None = None  # smartctl >= 7.0, learned once

    def learn_format(self) -> None:
        """Ask smartctl its version once (it must be installed): JSON from 7.0 on."""
        if self._json is None:
            version = smartctl_version(self.runner)
            self._json = version is None or version >= (7, 0)

    def read(self, spec: DriveSpec) -> DriveRead:
        try:
            if nvme_cli.is_nvme(spec) and (
                self.config.nvme_source == "nvme-cli" or self.runner.resolved() is None
            ):
                return nvme_cli.read_nvme_cli(spec, self.nvme, self._roots)
            if self._json is not False:
                try:
                    return read_json(spec, self.runner, self.config.nocheck)
                except json_parser.NotSmartctlJson as error:
                    if self._json:  # a JSON-capable smartctl: this drive's output is bad
                        health = DriveHealth(device=spec.tag, exit_status=-1)
                        return DriveRead(spec, health, f"unreadable smartctl output: {error}")
                    self._json = False  # this smartctl answers in text: use that from now on
                    self._log.info("smart: smartctl gave no JSON; using the text parser")
            # Imported here: pySMART (and chardet) load only when a drive needs the text path.
            from diskprobe.smart.text_path import read_text

            return read_text(spec, self.runner, self.config.nocheck)
        except Exception as error:  # one drive's surprise never loses the others
            health = DriveHealth(device=spec.tag, exit_status=-1)
            return DriveRead(spec, health, f"{type(error).__name__}: {error}")

    def note_problem(self, read: DriveRead) -> None:
        """The W! for a failed read: once per drive and cause, not every interval."""
        if read.sudo_refused:
            self.warn_sudo(str(read.spec), f"the read of {read.spec}")
        elif read.permission:
            nvme = read.health.source == nvme_cli.SOURCE
            self.warn_permission(self.nvme if nvme else self.runner)
        else:
            self._log.warn_once(
                f"smart-problem:{read.spec}:{read.problem}", f"smart: {read.spec}: {read.problem}"
            )

    def warn_permission(self, runner: CommandRunner | None = None) -> None:
        runner = runner or self.runner  # the nvme runner for an nvme-cli read
        self._log.warn_once(
            f"smart-permission:{runner.program}",
            "smart: no permission to read SMART data: "
            + PERMISSION_HELP.format(smartctl=runner.resolved() or runner.program),
        )

    def warn_sudo(self, key: str, what: str) -> None:
        self._log.warn_once(f"smart-sudo:{key}", "smart: " + SUDOERS_HELP.format(what=what))
