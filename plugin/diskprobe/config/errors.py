"""The one exception a configuration problem raises."""

from __future__ import annotations


class ConfigError(Exception):
    """A problem in the configuration: one line, names the file and the key."""
