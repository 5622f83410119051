"""Configuration: loading, one-line errors naming file/key/closest key, sample config round trip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from diskprobe.config import AgentConfig, ConfigError, load_config, load_config_text
from diskprobe.durations import format_duration, parse_duration
from diskprobe.sample_config import render_sample_config


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("10s", 10.0),
        ("30m", 1800.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "10x", "s", "1h 30m", "-5s", "ten seconds"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration(text)


def test_full_config(tmp_path: Path) -> None:
    path = tmp_path / "diskprobe.toml"
    path.write_text(
        'interval = "30s"\ntrigger = "stdin"\ndebug = true\n'
        '[io]\ndevices = ["sd*", "nvme*"]\nexclude = []\npartitions = false\n'
        'device_tags = ["serial"]\ncounters = true\ninterval = "5s"\n'
    )
    config = load_config(str(path))
    assert config.interval == 30.0 and config.trigger == "stdin" and config.debug
    assert config.io.devices == ["sd*", "nvme*"] and config.io.exclude == []
    assert not config.io.partitions and config.io.device_tags == ["serial"]
    assert config.io.counters and config.io.interval == 5.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[io]\nexlude = []\n", "[io]: unknown key 'exlude' (closest valid key: 'exclude')"),
        ('intervall = "1s"\n', "unknown key 'intervall' (closest valid key: 'interval')"),
        ("[disk]\nenabled = true\n", "unknown key 'disk' (closest valid key:"),
        ('[io]\npartitions = "yes"\n', "'partitions' must be of type bool, not str"),
        ('[io]\ndevices = "sda"\n', "'devices' must be a list of strings"),
        ('interval = "10 seconds"\n', "'interval': bad duration '10 seconds'"),
        ('interval = "0s"\n', "'interval' must be longer than zero"),
        ('trigger = "signal"\n', "'signal' is not one of interval, stdin"),
        ('[io]\ndevice_tags = ["vendor"]\n', "'vendor' is not one of model, serial"),
        ("io = 3\n", "'io' must be a table ([io])"),
        ("interval = \n", "not valid TOML"),
    ],
)
def test_errors_name_file_key_and_closest_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config("/nonexistent/diskprobe.toml")


def test_sample_config_loads_back_to_the_defaults() -> None:
    text = render_sample_config()
    assert load_config_text(text, "sample") == AgentConfig()


def test_sample_config_style_and_every_key_documented() -> None:
    text = render_sample_config()
    for line in text.splitlines():
        assert line == "" or line.lstrip().startswith(("## ", "# ", "[")), line
    # Uncommenting every "# key = value" line must still load and give the defaults.
    uncommented = "\n".join(
        line.replace("# ", "", 1) if line.lstrip().startswith("# ") else line
        for line in text.splitlines()
    )
    config = load_config_text(uncommented, "uncommented")
    assert config.io.exclude == AgentConfig().io.exclude and config.io.interval == 60.0


def test_cli_exits_non_zero_with_one_line_on_a_bad_config(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[io]\ncounter = true\n")
    result = subprocess.run(
        [sys.executable, "-m", "diskprobe", "--config", str(path), "--once"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"E! config: {path}: [io]: unknown key 'counter' (closest valid key: 'counters')"
    ]


def test_cli_bad_interval_flag() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "diskprobe", "--interval", "fast", "--once"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and result.stderr.startswith(
        "E! config: --interval: bad duration"
    )
