"""The files the configuration is read from: the config file (as text and as a TOML table) and
the InfluxDB token file. Bounded, never blocking, never a traceback."""

from __future__ import annotations

import sys
from typing import Any

from diskprobe import files
from diskprobe.config.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

CONFIG_MAX_BYTES = 1024 * 1024  # a config is a few kB; more is a wrong file (or an attack)
TOKEN_MAX_BYTES = 64 * 1024  # an API token is under 100 bytes


def parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        table: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{source}: not valid TOML: nested too deeply") from None
    return table


def read_config_file(path: str) -> str:
    """The file's text; a FIFO, device or directory is refused without blocking on it."""
    try:
        data = files.read_regular(path, CONFIG_MAX_BYTES, private=False)
    except files.TooBig:
        raise ConfigError(
            f"{path}: cannot read config: larger than {CONFIG_MAX_BYTES} bytes"
        ) from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start})") from None
    if not text.strip():
        # Most often a config management run that wrote nothing: running on defaults would
        # hide it. A file of comments only (the sample config) still gives the defaults.
        raise ConfigError(f"{path}: the file is empty")
    return text


def read_token_file(path: str) -> str:
    """The API token in `path`, stripped. OSError (a FIFO or directory refused without
    blocking, files.TooBig) or UnicodeDecodeError when it cannot be read: the load checks it
    (config/checks.py) and the InfluxDB output reads it again when it opens, with this one reader
    so that both agree."""
    return files.read_regular(path, TOKEN_MAX_BYTES, private=False).decode("utf-8").strip()
