"""The [output] rules: a kind's keys are there and agree; its token and spool are usable."""

from __future__ import annotations

import importlib.util
import os

from diskprobe import files
from diskprobe.config.errors import ConfigError
from diskprobe.config.file import read_token_file
from diskprobe.config.listen import parse_listen
from diskprobe.config.output import OutputConfig
from diskprobe.config.web_config import load_web_config


def check_output(output: OutputConfig, where: str) -> None:
    """Raise ConfigError for the first rule `output` breaks; `where` names the file."""
    if output.kind == "textfile" and not output.path:
        raise ConfigError(f'{where}[output] kind = "textfile" needs path (the file to write)')
    if output.kind != "textfile" and output.path:
        raise ConfigError(
            f'{where}[output] path is for kind = "textfile" only, not kind = "{output.kind}"'
        )
    if output.kind == "http":
        if output.format != "prometheus":
            raise ConfigError(f'{where}[output] kind = "http" serves format = "prometheus" '
                              f'only, not format = "{output.format}"')  # fmt: skip
        try:
            parse_listen(output.listen)
            if output.web_config_file:
                web = load_web_config(output.web_config_file)  # the output loads it again
                if web.users and importlib.util.find_spec("bcrypt") is None:
                    raise ValueError(f"{output.web_config_file}: basic_auth_users needs "
                                     "diskprobe's web extra: pip install 'diskprobe[web]' "
                                     "(bcrypt)")  # fmt: skip
        except ValueError as error:
            raise ConfigError(f"{where}[output] {error}") from None
    elif output.web_config_file:
        raise ConfigError(f'{where}[output] web_config_file is for kind = "http" only, '
                          f'not kind = "{output.kind}"')  # fmt: skip
    if output.kind == "influxdb":
        missing = [name for name in ("url", "bucket") if not getattr(output, name)]
        if missing:
            raise ConfigError(f'{where}[output] kind = "influxdb" needs {" and ".join(missing)}')
        if output.format != "influx":
            raise ConfigError(f'{where}[output] kind = "influxdb" writes format = "influx" '
                              f'only, not format = "{output.format}"')  # fmt: skip
        if output.token_file:
            _token_file(f"{where}[output]: 'token_file'", output.token_file)
        _spool_dir(f"{where}[output]: 'spool_dir'", output.spool_dir)


def _token_file(label: str, path: str) -> None:
    # Read once here so that a token the output could not read is a config error at start;
    # the output reads it again when it opens. The token itself is never kept or logged.
    try:
        read_token_file(path)
    except OSError as error:
        raise ConfigError(f"{label}: cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{label}: {path} is not UTF-8 text") from None


def _spool_dir(label: str, path: str) -> None:
    # An existing spool directory another user could plant batches (or links) in is a
    # config error at start, like a bad token file; one still missing is made at open, and
    # one in use by another diskprobe (a run-time clash) fails there (exit 1).
    if os.path.lexists(path):
        problem = files.private_dir_problem(path)
        if problem is not None:
            raise ConfigError(f"{label}: {path} {problem}")
