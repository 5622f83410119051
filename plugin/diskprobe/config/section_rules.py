"""The rules of single sections that need more than one field's check: [io]'s fail-slow window
against the interval, [jobs]' patterns and globs, [latency]'s histogram bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diskprobe.config.io_rules import check_fail_slow_window
from diskprobe.config.jobs import check_jobs
from diskprobe.config.latency import check_latency

if TYPE_CHECKING:
    from diskprobe.config import AgentConfig


def check_sections(config: AgentConfig, where: str) -> None:
    """Raise ConfigError for the first section rule `config` breaks; `where` names the file."""
    check_fail_slow_window(config, where)
    check_jobs(config.jobs, where)
    check_latency(config.latency, where)
